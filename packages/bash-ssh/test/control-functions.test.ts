import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { CONTROL_FUNCTIONS } from '../src/scripts.js'
import { stateOf } from './helpers.js'

/**
 * The remote control functions run here in a local bash, with the state a race leaves constructed
 * directly: `sscan` is replaced by a scripted one. No sshd needed.
 */
describe('control functions (scripts/control-functions.sh)', () => {
  let stranger: ChildProcess | undefined
  afterEach(() => {
    stranger?.kill('SIGKILL')
    stranger = undefined
  })

  /** One `scan` with group `pg` and leader start time `st`: the group's pids, the pgid left, the release lines. */
  function scanOnce(pg: number, st: string): { pids: string; pg: string; notes: string[] } {
    const script = [CONTROL_FUNCTIONS, 'nap() { :; }', 'note() { echo "note $*"; }', `pg=${pg} st=${st} mk=none`, 'scan', 'echo "pids$pids"', 'echo "pg $pg"'].join('\n')
    const result = spawnSync('bash', ['--noprofile', '--norc', '-c', script], { encoding: 'utf8' })
    expect(result.stderr).toBe('')
    const lines = result.stdout.trim().split('\n')
    return {
      pids: lines.find((l) => l.startsWith('pids'))!.slice(4).trim(),
      pg: lines.find((l) => l.startsWith('pg '))!.slice(3),
      notes: lines.filter((l) => l.startsWith('note ')).map((l) => l.slice(5)),
    }
  }

  /** Field 22 of /proc/<pid>/stat: the start time. */
  function startOf(pid: number): string {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  }

  it('the group claim: a leader with its start time is matched; the same number with another start time is released (reused), never matched', () => {
    // A session leader (detached: setsid), so its pgid is its pid.
    stranger = spawn('sleep', ['1000'], { stdio: 'ignore', detached: true })
    const pid = stranger.pid!
    expect(scanOnce(pid, startOf(pid))).toEqual({ pids: String(pid), pg: String(pid), notes: [] })
    expect(scanOnce(pid, String(Number(startOf(pid)) - 1))).toEqual({ pids: '', pg: '0', notes: ['released reused'] })
  })

  it('the group claim: a group with no member left is released (empty)', () => {
    // A number no process uses as its pid or pgid right now.
    const child = spawnSync('bash', ['--noprofile', '--norc', '-c', 'echo $$'], { encoding: 'utf8' })
    const gone = Number(child.stdout.trim())
    expect(scanOnce(gone, '1')).toEqual({ pids: '', pg: '0', notes: ['released empty'] })
  })

  it('freeze_kill never SIGKILLs a pid frozen in an earlier round that a stranger holds by now, and continues that stranger', () => {
    // A process that is not the tree's (no group, no marker), e.g. another request's scan loop.
    stranger = spawn('sleep', ['1000'], { stdio: 'ignore' })
    const pid = stranger.pid!
    // The race: the first settled scan found a process of the tree under this pid, which died right
    // after (before its SIGSTOP) and whose pid the stranger got; every later scan finds nothing.
    const script = [
      CONTROL_FUNCTIONS,
      'nap() { :; }',
      'note() { :; }',
      'calls=0',
      `sscan() { calls=$((calls + 1)); unsure=""; if [ $calls -eq 1 ]; then pids=" ${pid}" xpids=" ${pid}"; else pids="" xpids=""; fi; }`,
      'pg=0 mk=x',
      'freeze_kill',
      'echo "scans $calls"',
    ].join('\n')
    const result = spawnSync('bash', ['--noprofile', '--norc', '-c', script], { encoding: 'utf8' })
    expect(result.stderr).toBe('')
    // Two for the fixpoint, two empty ones to confirm.
    expect(result.stdout).toBe('scans 4\n')
    // Neither killed nor left stopped.
    expect(stateOf(pid)).toMatch(/^[RSD]$/)
  })
})
