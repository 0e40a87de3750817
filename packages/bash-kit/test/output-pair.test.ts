import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { OutputPair } from '../src/output-pair.js'

const root = mkdtempSync(join(tmpdir(), 'dsh-output-pair-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const pair = (label: string) => new OutputPair({ maxBytes: 10_000, maxSpillBytes: 1_000_000, dir: root, label, keepSpillFile: false }, join)

/** The state letter of a process in /proc/<pid>/stat (Z: exited, not yet reaped). */
function state(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  } catch {
    return 'gone'
  }
}

describe('OutputPair drain', () => {
  it('a loop blocked past drainMs does not lose what the command wrote meanwhile (the window expires in the timers phase, before the poll phase reads)', async () => {
    const drainMs = 50
    const output = pair('blocked')
    // The command writes only after a pause, so nothing is read before the loop is blocked.
    const child = spawn('bash', ['--noprofile', '--norc', '-c', 'sleep 0.2; echo hello; echo world >&2'], { stdio: ['ignore', 'pipe', 'pipe'] })
    const drain = output.collect({ stdout: child.stdout!, stderr: child.stderr! }, drainMs)
    const draining = drain()
    const blockedFrom = performance.now()
    // Block the loop until the command has written and exited, and well past the drain window.
    while (state(child.pid!) !== 'Z' && state(child.pid!) !== 'gone') {
      // Busy: this is the blocked loop under test.
    }
    while (performance.now() - blockedFrom < 3 * drainMs) {
      // Still blocked.
    }
    await draining
    output.end()
    expect(output.stdout.result().text).toBe('hello\n')
    expect(output.stderr.result().text).toBe('world\n')
    output.dispose()
  })

  it('ends after the window when a holder keeps the pipes open without writing', async () => {
    const output = pair('held')
    const child = spawn('bash', ['--noprofile', '--norc', '-c', 'echo early; exec sleep 30'], { stdio: ['ignore', 'pipe', 'pipe'] })
    try {
      const drain = output.collect({ stdout: child.stdout!, stderr: child.stderr! }, 100)
      await new Promise((resolve) => child.stdout!.once('data', resolve))
      await drain()
      expect(child.stdout!.destroyed).toBe(true)
      output.end()
      expect(output.stdout.result().text).toBe('early\n')
    } finally {
      child.kill('SIGKILL')
      output.dispose()
    }
  })
})
