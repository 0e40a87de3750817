import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import type { BashRunResult, BashTaskRead, CollectedOutput } from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import {
  bashPromptSection,
  fits,
  lineCount,
  MARKER_RESERVE,
  renderRead,
  renderRunResult,
  type ResultBudget,
  spillThreshold,
  tailWithin,
  ToolBash,
  type ToolBashConfig,
  yieldMarker,
  TYPED_TEXT,
} from '../src/index.js'
import { RecordingAgent, settle, until } from './harness.js'

const out = (text: string, extra: Partial<CollectedOutput> = {}): CollectedOutput => ({
  text,
  truncated: false,
  droppedBytes: 0,
  totalBytes: Buffer.byteLength(text),
  ...extra,
})

const result = (extra: Partial<BashRunResult> = {}): BashRunResult => ({
  exitCode: 0,
  signal: null,
  timedOut: false,
  aborted: false,
  timeoutMs: 120000,
  stdout: out(''),
  stderr: out(''),
  durationMs: 1,
  leftoverProcesses: 0,
  ...extra,
})

const budget: ResultBudget = { bytes: 1000, lines: 50 }
const numbers = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('')

describe('tailWithin', () => {
  it('returns the text itself when it fits', () => {
    expect(tailWithin('a\nb\n', 4, 2)).toBe('a\nb\n')
    expect(tailWithin('', 0, 0)).toBe('')
  })

  it('keeps the last lines, a final newline ending the last line', () => {
    expect(tailWithin('1\n2\n3\n4\n', 100, 2)).toBe('3\n4\n')
    expect(tailWithin('1\n2\n3\n4', 100, 2)).toBe('3\n4')
    expect(tailWithin('1\n2\n3\n4\n', 100, 1)).toBe('4\n')
  })

  it('cuts by bytes at a line start', () => {
    expect(tailWithin('aaaa\nbbbb\ncccc\n', 9, 10)).toBe('cccc\n')
    expect(tailWithin('aaaa\nbbbb\ncccc\n', 12, 10)).toBe('bbbb\ncccc\n')
    expect(tailWithin('aaaa\nbbbb\ncccc\n', 10, 10)).toBe('bbbb\ncccc\n')
  })

  it('cuts one giant line at a character boundary, never inside a character', () => {
    const text = 'é'.repeat(100)
    const tail = tailWithin(text, 11, 10)
    expect(tail).toBe('é'.repeat(5))
    expect(tailWithin(`${'x'.repeat(50)}\n`, 10, 5)).toBe(`${'x'.repeat(9)}\n`)
  })

  it('counts lines like a reader does', () => {
    expect(lineCount('')).toBe(0)
    expect(lineCount('a')).toBe(1)
    expect(lineCount('a\n')).toBe(1)
    expect(lineCount('a\n\n')).toBe(2)
  })
})

describe('renderRunResult with a budget', () => {
  it('a result that fits and was not cut keeps the contract layout', () => {
    const r = result({ stdout: out('out\n'), stderr: out('err\n'), exitCode: 2 })
    expect(renderRunResult(r, { budget })).toBe(renderRunResult(r))
  })

  it('a truncated stream: the marker with its path first, then the newest lines, then the status markers', () => {
    const r = result({ stdout: out(numbers(150000, 200000), { truncated: true, droppedBytes: 1, spillPath: '/spill/run-1-stdout.log' }), exitCode: 1 })
    const text = renderRunResult(r, { budget })
    expect(text.startsWith('[output truncated; full output: /spill/run-1-stdout.log]\n')).toBe(true)
    expect(text.endsWith('199999\n200000\n[exit code: 1]')).toBe(true)
    expect(fits(text, budget)).toBe(true)
    // The kept part starts at a line start: every body line is a whole number.
    const body = text.split('\n').slice(1, -2)
    for (const line of body) expect(line).toMatch(/^\d{6}$/)
  })

  it('an output the budget cuts without a spill file says (unavailable) rather than inventing a path', () => {
    const text = renderRunResult(result({ stdout: out(numbers(1, 500)) }), { budget })
    expect(text.startsWith('[output truncated; full output: (unavailable)]\n')).toBe(true)
    expect(text.endsWith('499\n500\n')).toBe(true)
    expect(fits(text, budget)).toBe(true)
  })

  it('both streams cut: both markers first, each stream keeps its newest part and stderr its label', () => {
    const r = result({
      stdout: out(numbers(1, 400), { truncated: true, spillPath: '/s/o.log' }),
      stderr: out(numbers(1001, 1400), { truncated: true, spillPath: '/s/e.log' }),
      signal: 'SIGTERM',
      timedOut: true,
      timeoutMs: 300,
    })
    const text = renderRunResult(r, { budget })
    const lines = text.split('\n')
    expect(lines.slice(0, 2)).toEqual(['[output truncated; full output: /s/o.log]', '[output truncated; full output: /s/e.log]'])
    expect(text).toContain('399\n400\n[stderr]\n')
    expect(text.endsWith('1399\n1400\n[timed out after 300ms]\n[killed by signal: SIGTERM]')).toBe(true)
    expect(fits(text, budget)).toBe(true)
    // Fair shares: neither stream is starved.
    expect(lineCount(text.slice(text.indexOf('[stderr]')))).toBeGreaterThan(15)
    expect(lineCount(text.slice(0, text.indexOf('[stderr]')))).toBeGreaterThan(15)
  })

  it('a yielded result ends with exactly the yield marker', () => {
    const r = result({ exitCode: null, durationMs: 50_999, stdout: out('building\n'), yieldedTo: 'bash-7' })
    expect(renderRunResult(r)).toBe(
      'building\n[still running after 50s; continues as background task bash-7: read it with bash_output, stop it with bash_kill]',
    )
    expect(yieldMarker(50, 'bash-7')).toBe('[still running after 50s; continues as background task bash-7: read it with bash_output, stop it with bash_kill]')
  })
})

describe('the marker reserve: output within spillThreshold(budget) is never cut', () => {
  // Output of n lines and b bytes, its last line unfinished (the join to [stderr] then adds a newline).
  const block = (lines: number, bytes: number) => `${'\n'.repeat(lines - 1)}${'x'.repeat(bytes - (lines - 1))}`
  const budgets: ResultBudget[] = [{ bytes: 10_000, lines: 1_900 }, { bytes: 4_000, lines: 100 }, { bytes: 2_000, lines: 40 }]
  const threshold = (b: ResultBudget) => spillThreshold(b)
  /** Both streams together exactly at the threshold in bytes and in lines (the meter's measure). */
  const streams = (b: ResultBudget) => {
    const t = threshold(b)
    const outLines = Math.floor(t.lines / 2)
    const outBytes = Math.floor(t.bytes / 2)
    const stdout = block(outLines, outBytes)
    const stderr = block(t.lines - outLines, t.bytes - outBytes)
    expect(Buffer.byteLength(stdout) + Buffer.byteLength(stderr)).toBe(t.bytes)
    expect(lineCount(stdout) + lineCount(stderr)).toBe(t.lines)
    return { stdout, stderr }
  }
  const denied = { mode: 'read-only' as const, accessDenied: true, escalations: ['workspace-write', 'danger-full-access'] as ('workspace-write' | 'danger-full-access')[] }

  it('is the threshold: the budget minus 1024 bytes and 16 lines, never below 0', () => {
    expect(MARKER_RESERVE).toEqual({ bytes: 1024, lines: 16 })
    expect(spillThreshold({ bytes: 10_000, lines: 1_900 })).toEqual({ bytes: 8_976, lines: 1_884 })
    expect(spillThreshold({ bytes: 200, lines: 10 })).toEqual({ bytes: 0, lines: 0 })
  })

  it.each(budgets)('bash: the longest markers the renderer writes still fit uncut (%o)', (b) => {
    const { stdout, stderr } = streams(b)
    const worst: BashRunResult[] = [
      // Leftovers, the sandbox denial and its escalation hint, a signal with the longest name.
      result({ stdout: out(stdout), stderr: out(stderr), leftoverProcesses: 9_999_999, exitCode: null, signal: 'SIGRTMAX-14', sandbox: denied as never }),
      // A timeout at the longest timer there is, the denial, an exit code.
      result({ stdout: out(stdout), stderr: out(stderr), timedOut: true, timeoutMs: 2 ** 31 - 1, exitCode: 255, sandbox: denied as never }),
      // A yield after the longest time with a long task id.
      result({ stdout: out(stdout), stderr: out(stderr), exitCode: null, durationMs: 2 ** 31 - 1, yieldedTo: 'bash-9999999999' }),
    ]
    for (const r of worst) {
      const text = renderRunResult(r, { budget: b, escalationHint: true })
      expect(text).toBe(renderRunResult(r, { escalationHint: true }))
      expect(fits(text, b)).toBe(true)
    }
  })

  it.each(budgets)('bash_output and bash_input: the status line with a long reason, the sandbox markers and the typed-reply line fit uncut (%o)', (b) => {
    const { stdout, stderr } = streams(b)
    const delta = `${stdout}\n[stderr]\n${stderr}`
    const reason = `failed to start: workdir does not exist: /${'long-directory-name/'.repeat(20)}`
    const task = { id: 'bash-9999999999', status: 'killed', exitCode: null, signal: 'SIGRTMAX-14', reason, sandbox: denied } as unknown as BashTaskRead['task']
    const r: BashTaskRead = { task, delta, streams: { stdout: `${stdout}\n`, stderr }, screen: false, lossy: false, spillPaths: {} }
    const text = renderRead(r, { budget: b, escalationHint: true })
    expect(text).toBe(renderRead(r, { escalationHint: true }))
    expect(fits(text, b)).toBe(true)
    // bash_input after a typed reply: the plugin gives the read the budget minus its first line.
    const lead = `${TYPED_TEXT}\n`
    const room = { bytes: b.bytes - Buffer.byteLength(lead), lines: b.lines - 1 }
    expect(renderRead(r, { budget: room, escalationHint: true })).toBe(text)
  })
})

describe('renderRead with a budget', () => {
  const task = { id: 'bash-1', command: 'x', workdir: '/', status: 'running' as const, exitCode: null, signal: null, startedAt: 0, endedAt: null, done: Promise.resolve() as never }
  const read = ({ out = '', err = '', ...extra }: Partial<BashTaskRead> & { out?: string; err?: string }): BashTaskRead => ({
    task: { ...task },
    delta: out + (err ? `${out && !out.endsWith('\n') ? '\n' : ''}[stderr]\n${err}` : ''),
    streams: { stdout: out, stderr: err },
    screen: false,
    lossy: false,
    spillPaths: {},
    ...extra,
  })

  it('a small read is unchanged', () => {
    const r = read({ out: 'a\n', err: 'b\n' })
    expect(renderRead(r, { budget })).toBe(renderRead(r))
  })

  it('a lossy read puts the dropped-output line first, the newest output and the status last', () => {
    const text = renderRead(read({ out: numbers(1, 2000), lossy: true, spillPaths: { stdout: '/s/o.log' } }), { budget })
    expect(text.startsWith('[some output was dropped from memory; full output: /s/o.log]\n')).toBe(true)
    expect(text.endsWith('1999\n2000\n[status: running]')).toBe(true)
    expect(fits(text, budget)).toBe(true)
  })

  it('a cut inside the stderr section keeps its label', () => {
    const text = renderRead(read({ out: 'x\n', err: numbers(1, 2000), lossy: true, spillPaths: { stderr: '/s/e.log' } }), { budget })
    expect(text.split('\n')[0]).toBe('[some output was dropped from memory; full output: /s/e.log]')
    expect(text).toContain('x\n[stderr]\n')
    expect(text.endsWith('2000\n[status: running]')).toBe(true)
    expect(fits(text, budget)).toBe(true)
  })
})

describe('bashPromptSection', () => {
  it('names the markers, background tasks and polling; the yield sentence only when yielding', () => {
    const plain = bashPromptSection()
    for (const word of ['[exit code: N]', '[output truncated; full output: PATH]', 'run_in_background', 'bash_output', 'bash_kill']) {
      expect(plain).toContain(word)
    }
    expect(plain).not.toContain('still running')
    expect(bashPromptSection({ yieldAfterMs: 50_000 })).toContain('still running after 50 seconds')
  })
})

describe('tool-bash settings through the real pipeline', () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup()
  })

  async function app(config: ToolBashConfig) {
    const workspace = mkdtempSync(join(tmpdir(), 'tool-bash-budget-'))
    const root = new Context()
    root.plugin(ToolRegistry)
    const agents: RecordingAgent[] = []
    const injected: string[] = []
    root.set('agents', { list: () => agents })
    root.plugin(LocalExecutor, { graceMs: 300, cwd: workspace })
    root.plugin(ToolBash, config)
    await settle()
    cleanups.push(async () => {
      await root.bash.shutdown()
      rmSync(workspace, { recursive: true, force: true })
    })
    const agent = new RecordingAgent('a', 'session-1', workspace, [])
    agents.push(agent)
    agent.inject = (content) => void injected.push(content.map((c) => c.text).join(''))
    let seq = 0
    const call = async (name: string, args: unknown, signal?: AbortSignal) => {
      const r = await root.tools.execute({ callId: `c${++seq}`, name, arguments: args, agent, signal })
      return { text: r.content.map((c) => c.text).join('\n'), isError: r.isError }
    }
    return { root, call, injected }
  }

  it('rejects a bad setting with a message naming it', async () => {
    const root = new Context()
    const errors: string[] = []
    root.on('internal/error', (e: unknown) => void errors.push(String(e)))
    root.plugin(ToolRegistry)
    root.plugin(LocalExecutor, { graceMs: 300 })
    root.plugin(ToolBash, { yieldAfterMs: -5 })
    await settle()
    expect(root.tools.get('bash')).toBeUndefined()
    expect(errors.join('\n')).toContain('tool-bash: yieldAfterMs must be a positive number of ms or 0 (off), got -5')
    await root.bash.shutdown()
  })

  it('a foreground call still running at the yield time returns the yield marker; bash_output continues it, the notice comes once', async () => {
    const { root, call, injected } = await app({ yieldAfterMs: 300 })
    expect(root.tools.get('bash')!.description).toContain('A foreground command still running after 0.3 seconds')
    const first = await call('bash', { command: 'echo first; sleep 1.5; echo second', description: 'print twice' })
    expect(first.isError).toBe(false)
    // N counts from the call's start: the first command of a fresh executor can take a second to start under load (CI).
    expect(first.text).toMatch(/^(first\n)?\[still running after [01]s; continues as background task bash-1: read it with bash_output, stop it with bash_kill\]$/)
    let seen = first.text.startsWith('first\n') ? 'first\n' : ''
    let last = ''
    await until(async () => {
      last = (await call('bash_output', { task_id: 'bash-1' })).text
      seen += last.replace(/^\(no new output\)\n/, '').replace(/\[status: [^\]]*\]$/, '')
      return !last.endsWith('[status: running]')
    })
    expect(last.endsWith('[status: completed, exit code: 0]')).toBe(true)
    expect(seen).toBe('first\nsecond\n')
    await until(() => injected.length > 0)
    expect(injected).toEqual(['background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.'])
  })

  it('a command that ends in time is an ordinary result; run_in_background is unaffected; a cancel before the yield kills', async () => {
    const { call } = await app({ yieldAfterMs: 2000 })
    expect(await call('bash', { command: 'echo hi', description: 'say hi' })).toEqual({ text: 'hi\n', isError: false })
    expect((await call('bash', { command: 'sleep 5', description: 'wait', run_in_background: true })).text).toBe('started background task bash-1')
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 200)
    const aborted = await call('bash', { command: 'sleep 30', description: 'wait long' }, controller.signal)
    expect(aborted.isError).toBe(true)
    expect(aborted.text).toMatch(/^Error: the command was aborted/)
    expect(aborted.text).not.toContain('still running')
  })

  it('with a budget, seq 1 200000 shows its path first and its last line last, and the file holds everything', async () => {
    const b = { bytes: 10_000, lines: 1_900 }
    const { call } = await app({ resultBudget: b })
    const { text } = await call('bash', { command: 'seq 1 200000', description: 'count' })
    const path = /^\[output truncated; full output: (\/\S+)\]\n/.exec(text)?.[1]
    expect(path).toBeDefined()
    expect(text.endsWith('199999\n200000\n')).toBe(true)
    expect(fits(text, b)).toBe(true)
    expect(readFileSync(path!, 'utf8')).toBe(numbers(1, 200000))
  })
})
