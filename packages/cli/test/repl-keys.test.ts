import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { marker, pidsWith, waitFor } from './helpers.js'
import { MCP_ON_TERMINAL_HINT } from '../src/mcp-command.js'
import { startTty, startTtyRepl } from './tty.js'

let dir: string
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-keys-')))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('dsh-bash repl on a terminal: Ctrl-C and Ctrl-D', () => {
  let repl: ReturnType<typeof startTtyRepl> | undefined
  afterEach(async () => {
    if (!repl) return
    try {
      repl.term.kill('SIGKILL')
    } catch {
      // Already gone.
    }
    repl = undefined
  })

  it('Ctrl-C clears a half-typed line and keeps the REPL and its tasks; on an empty line it says what leaving kills; a second one leaves', { timeout: 120_000 }, async () => {
    repl = startTtyRepl(dir)
    await waitFor('the prompt', () => repl!.all().includes('dsh-bash> '))
    const name = marker()
    await repl.type(`&exec -a ${name} sleep 300\r`, 'bash-1')
    await waitFor('the task', () => pidsWith(name).length === 1)
    // A half-typed line: cleared, nothing run, nothing killed, a fresh prompt.
    await repl.type('echo half-typed', 'half-typed')
    await repl.type('\x03', 'dsh-bash> ')
    await repl.type('echo still-here\r', 'still-here\r\n')
    expect(repl.all()).not.toMatch(/half-typed\r?\n/)
    expect(pidsWith(name)).toHaveLength(1)
    // An empty line: a warning naming the task, still running.
    const warning = await repl.type('\x03', 'dsh-bash> ')
    expect(warning).toContain(`(Ctrl-C again or Ctrl-D to leave; it kills 1 running background task(s): bash-1 (exec -a ${name} sleep 300))`)
    expect(pidsWith(name)).toHaveLength(1)
    // A second Ctrl-C on the empty line leaves, saying what it kills.
    repl.term.write('\x03')
    await Promise.race([repl.exited, waitFor('the REPL to exit', () => false, 30_000)])
    expect(repl.all()).toContain(`dsh-bash: killing 1 running background task(s): bash-1 (exec -a ${name} sleep 300)`)
    expect(pidsWith(name)).toEqual([])
  })

  it('a line typed after the warning disarms it; Ctrl-D leaves', { timeout: 120_000 }, async () => {
    repl = startTtyRepl(dir)
    await waitFor('the prompt', () => repl!.all().includes('dsh-bash> '))
    await repl.type('\x03', 'Ctrl-C again or Ctrl-D to leave)')
    await repl.type('echo typed\r', 'typed\r\n')
    // Not armed any more: this Ctrl-C warns again instead of leaving.
    await repl.type('\x03', 'Ctrl-C again or Ctrl-D to leave)')
    repl.term.write('\x04')
    await Promise.race([repl.exited, waitFor('the REPL to exit', () => false, 30_000)])
  })
})

describe('dsh-bash mcp on a terminal', () => {
  it('says in one line on stderr what it is and how to try the tools by hand; Ctrl-C stops it', { timeout: 60_000 }, async () => {
    const mcp = startTty(dir, ['mcp', '--workdir', dir])
    try {
      const line = await waitFor('the hint', () => /dsh-bash: serving MCP[^\r\n]*\r?\n/.exec(mcp.all())?.[0])
      expect(line.trim()).toBe(`dsh-bash: ${MCP_ON_TERMINAL_HINT}`)
      mcp.term.write('\x03')
      await Promise.race([mcp.exited, waitFor('the server to exit', () => false, 30_000)])
    } finally {
      try {
        mcp.term.kill('SIGKILL')
      } catch {
        // Already gone.
      }
    }
  })
})
