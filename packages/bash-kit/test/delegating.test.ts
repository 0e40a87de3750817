import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { DelegatingCommand, type LaunchedCommand } from '../src/index.js'

/** A launched command that records every call made to it. */
function recorder(terminal: boolean): { command: LaunchedCommand; calls: string[] } {
  const calls: string[] = []
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  const exited = Promise.resolve({ exitCode: 0, signal: null })
  const command: LaunchedCommand = {
    stdout,
    stderr,
    exited,
    countLeftovers: async () => (calls.push('countLeftovers'), 2),
    terminate: async (graceMs) => void calls.push(`terminate ${graceMs}`),
    whenEmpty: async () => void calls.push('whenEmpty'),
    release: () => void calls.push('release'),
    sandboxFacts: () => (calls.push('sandboxFacts'), { mode: 'read-only', accessDenied: false, escalations: [] }),
    lostReason: () => (calls.push('lostReason'), 'gone'),
    ...(terminal
      ? {
          terminal: true,
          write: async (data: Uint8Array) => void calls.push(`write ${data.length}`),
          resize: (c: number, r: number) => void calls.push(`resize ${c}x${r}`),
          terminalModes: async () => (calls.push('terminalModes'), { echo: false, canonical: true }),
        }
      : {}),
  }
  return { command, calls }
}

describe('DelegatingCommand', () => {
  it('forwards every member of LaunchedCommand to the inner command', async () => {
    const { command, calls } = recorder(true)
    const wrapped = new DelegatingCommand(command)
    expect(wrapped.stdout).toBe(command.stdout)
    expect(wrapped.stderr).toBe(command.stderr)
    expect(wrapped.exited).toBe(command.exited)
    expect(await wrapped.countLeftovers()).toBe(2)
    await wrapped.terminate(7)
    await wrapped.whenEmpty()
    await wrapped.release()
    expect(wrapped.sandboxFacts({ exitCode: 0, signal: null }, { text: '', totalBytes: 0, truncated: false } as never)).toEqual({ mode: 'read-only', accessDenied: false, escalations: [] })
    expect(wrapped.lostReason()).toBe('gone')
    expect(wrapped.terminal).toBe(true)
    await wrapped.write(new Uint8Array(3))
    wrapped.resize(80, 24)
    expect(await wrapped.terminalModes()).toEqual({ echo: false, canonical: true })
    expect(calls).toEqual(['countLeftovers', 'terminate 7', 'whenEmpty', 'release', 'sandboxFacts', 'lostReason', 'write 3', 'resize 80x24', 'terminalModes'])
    // Every member the interface declares is one the wrapper has (a new member must be added here too).
    const members = ['stdout', 'stderr', 'exited', 'countLeftovers', 'terminate', 'whenEmpty', 'release', 'sandboxFacts', 'lostReason', 'terminal', 'write', 'resize', 'terminalModes']
    expect(members.filter((name) => !(name in wrapped))).toEqual([])
    expect(Object.keys(command).sort()).toEqual([...members].sort())
  })

  it('an inner command without a terminal: no terminal, write rejects with a code, resize does nothing, no modes', async () => {
    const { command } = recorder(false)
    const wrapped = new DelegatingCommand(command)
    expect(wrapped.terminal).toBe(false)
    await expect(wrapped.write(new Uint8Array(1))).rejects.toMatchObject({ code: 'DSH_TASK_NOT_INTERACTIVE', message: 'this command has no terminal' })
    expect(() => wrapped.resize(1, 1)).not.toThrow()
    expect(await wrapped.terminalModes()).toBeUndefined()
  })
})
