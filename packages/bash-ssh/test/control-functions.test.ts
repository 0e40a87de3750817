import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { afterEach, describe, expect, it } from 'vitest'
import { CONTROL_FUNCTIONS } from '../src/scripts.js'

/** The state letter of a process (`/proc/<pid>/stat`), or undefined when it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

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
