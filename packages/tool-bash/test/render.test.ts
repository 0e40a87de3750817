import { describe, expect, it } from 'vitest'
import type { BashRunResult, BashTaskRead, CollectedOutput } from '@deepseek-ai/dsh-bash'
import {
  appendMarkers,
  presentBashCall,
  presentBashResult,
  presentTaskCall,
  presentTaskResult,
  readRunStatus,
  renderNotice,
  renderRead,
  renderRunResult,
  statusLine,
} from '../src/index.js'

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

/** Rendering-only cases a real executor cannot produce on demand. */
describe('render', () => {
  it('a truncated stream without an intact spill file says (unavailable)', () => {
    const text = renderRunResult(result({ stdout: out('tail\n', { truncated: true, droppedBytes: 10 }) }))
    expect(text).toBe('tail\n\n[output truncated; full output: (unavailable)]')
  })

  it('a truncated tail without a final newline gets only the one newline', () => {
    const text = renderRunResult(result({ stdout: out('tail', { truncated: true, droppedBytes: 10, spillPath: '/s/o.log' }) }))
    expect(text).toBe('tail\n[output truncated; full output: /s/o.log]')
  })

  it('both streams truncated, then the exit marker', () => {
    const text = renderRunResult(
      result({
        exitCode: 2,
        stdout: out('a\n', { truncated: true, spillPath: '/s/o.log' }),
        stderr: out('b\n', { truncated: true }),
      }),
    )
    expect(text).toBe(
      'a\n\n[output truncated; full output: /s/o.log]\n[stderr]\nb\n\n[output truncated; full output: (unavailable)]\n[exit code: 2]',
    )
  })

  it('markers come in contract order: leftovers, sandbox, timeout, signal', () => {
    const text = renderRunResult(
      result({
        exitCode: 1,
        leftoverProcesses: 2,
        stderr: out('touch: cannot touch'),
        sandbox: { mode: 'read-only', accessDenied: true, escalations: ['workspace-write', 'danger-full-access'] },
      }),
      { escalationHint: true },
    )
    expect(text).toBe(
      '[stderr]\ntouch: cannot touch\n' +
        '[stopped 2 leftover process(es); use run_in_background for servers and watchers]\n' +
        '[sandbox: file access denied under read-only mode]\n' +
        '[sandbox: to retry with wider access, call bash again with sandbox_permissions: "workspace-write" or "danger-full-access" and a justification]\n' +
        '[exit code: 1]',
    )
  })

  it('no escalation hint when none is possible', () => {
    const text = renderRunResult(
      result({ exitCode: 1, sandbox: { mode: 'workspace-write', accessDenied: true, escalations: [] } }),
      { escalationHint: true },
    )
    expect(text).toBe('(no output)\n[sandbox: file access denied under workspace-write mode]\n[exit code: 1]')
  })

  it('no leftover line after a timeout (everything is killed anyway)', () => {
    const text = renderRunResult(result({ timedOut: true, timeoutMs: 5, signal: 'SIGTERM', exitCode: null, leftoverProcesses: 3 }))
    expect(text).toBe('(no output)\n[timed out after 5ms]\n[killed by signal: SIGTERM]')
  })

  it('status lines', () => {
    expect(statusLine({ status: 'running', exitCode: null, signal: null })).toBe('[status: running]')
    expect(statusLine({ status: 'completed', exitCode: 0, signal: null })).toBe('[status: completed, exit code: 0]')
    expect(statusLine({ status: 'killed', exitCode: null, signal: 'SIGKILL' })).toBe('[status: killed by SIGKILL]')
    expect(statusLine({ status: 'killed', exitCode: 0, signal: null })).toBe('[status: killed]')
    expect(statusLine({ status: 'killed', exitCode: null, signal: null, reason: 'connection to u@h:22 lost' })).toBe(
      '[status: killed (connection to u@h:22 lost)]',
    )
  })

  const task = { id: 'bash-1', command: 'x', workdir: '/', status: 'running', exitCode: null, signal: null, startedAt: 0, endedAt: null, done: new Promise(() => {}) } as const
  const read = ({ out = '', err = '', ...extra }: Partial<BashTaskRead> & { out?: string; err?: string }): BashTaskRead => ({
    task: { ...task },
    delta: out + (err ? `${out && !out.endsWith('\n') ? '\n' : ''}[stderr]\n${err}` : ''),
    streams: { stdout: out, stderr: err },
    screen: false,
    lossy: false,
    spillPaths: {},
    ...extra,
  })

  it('bash_output texts, including the lost-data line', () => {
    expect(renderRead(read({ out: 'first\n' }))).toBe('first\n[status: running]')
    expect(renderRead(read({ out: 'first' }))).toBe('first\n[status: running]')
    expect(renderRead(read({}))).toBe('(no new output)\n[status: running]')
    expect(renderRead(read({ out: 'x\n', lossy: true, spillPaths: { stdout: '/a', stderr: '/b' } }))).toBe(
      'x\n[some output was dropped from memory; full output: /a, /b]\n[status: running]',
    )
    expect(renderRead(read({ out: 'x', lossy: true }))).toBe(
      'x\n[some output was dropped from memory; full output: (unavailable)]\n[status: running]',
    )
  })

  it('the notice text', () => {
    expect(renderNotice({ ...task, status: 'completed', exitCode: 0 })).toBe(
      'background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.',
    )
  })

  it('an ended task\'s sandbox denial follows the status line, in bash_output and in the notice; the hint only where an escalation is possible', () => {
    const denied = {
      ...task,
      status: 'completed' as const,
      exitCode: 1,
      sandbox: { mode: 'read-only', accessDenied: true, escalations: ['workspace-write', 'danger-full-access'] },
    }
    const marker = '[sandbox: file access denied under read-only mode]'
    const hint =
      '[sandbox: to retry with wider access, call bash again with sandbox_permissions: "workspace-write" or "danger-full-access" and a justification]'
    const deniedRead = read({ task: denied, err: 'bash: line 1: /x: Read-only file system\n', lossy: true })
    expect(renderRead(deniedRead, { escalationHint: true })).toBe(
      `[stderr]\nbash: line 1: /x: Read-only file system\n[some output was dropped from memory; full output: (unavailable)]\n[status: completed, exit code: 1]\n${marker}\n${hint}`,
    )
    expect(renderRead(read({ task: denied }))).toBe(`(no new output)\n[status: completed, exit code: 1]\n${marker}`)
    expect(renderNotice(denied, { escalationHint: true })).toBe(
      `background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output.\n${marker}\n${hint}`,
    )
    expect(renderNotice({ ...denied, sandbox: { ...denied.sandbox, escalations: [] } }, { escalationHint: true })).toBe(
      `background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output.\n${marker}`,
    )
    // No denial, or still running: nothing.
    const clean = { ...denied, sandbox: { ...denied.sandbox, accessDenied: false } }
    expect(renderNotice(clean, { escalationHint: true })).toBe(
      'background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output.',
    )
    expect(renderRead(read({ task: { ...denied, status: 'running' } }), { escalationHint: true })).toBe('(no new output)\n[status: running]')
  })

  it('appendMarkers joins with exactly one newline', () => {
    expect(appendMarkers('a', ['b', 'c'])).toBe('a\nb\nc')
    expect(appendMarkers('a\n', ['b'])).toBe('a\nb')
    expect(appendMarkers('a\n', [])).toBe('a\n')
  })
})

describe('presenters', () => {
  const weird: unknown[] = [undefined, null, 0, 'x', [], { command: 5 }, { command: 'ls', run_in_background: 'yes' }, Object.create(null)]
  it('never throw on malformed arguments', () => {
    for (const args of weird) {
      expect(() => presentBashCall(args)).not.toThrow()
      expect(() => presentBashResult(args, { content: [], isError: false })).not.toThrow()
      expect(() => presentBashResult(args, undefined as never)).not.toThrow()
      expect(() => presentTaskCall('bash_output')(args)).not.toThrow()
      expect(() => presentTaskResult('bash_kill')(args, { content: [{ type: 'text', text: 'x' }], isError: false })).not.toThrow()
    }
  })

  it('foreground is a terminal card, background a generic one', () => {
    expect(presentBashCall({ command: 'ls -la', description: 'list files', workdir: '/tmp' })).toEqual({
      kind: 'terminal',
      title: 'ls -la',
      description: 'list files',
      cwd: '/tmp',
    })
    expect(presentBashCall({ command: 'npm run dev', description: 'start dev server', run_in_background: true }).kind).toBe('generic')
    expect(presentBashResult({ command: 'ls', description: 'list' }, { content: [{ type: 'text', text: 'a\n' }], isError: false })).toEqual({
      kind: 'terminal',
      title: 'ls',
      description: 'list',
      cwd: undefined,
      output: 'a\n',
      exitCode: 0,
      signal: null,
      timedOut: false,
    })
    expect(presentTaskCall('bash_kill')({ task_id: 'bash-3' })).toEqual({ kind: 'generic', title: 'bash_kill bash-3' })
  })
})

describe('result cards read the exit status back from the markers', () => {
  const args = { command: 'make', description: 'build it' }
  const base = (over: Partial<BashRunResult>): BashRunResult => ({
    exitCode: 0,
    signal: null,
    timedOut: false,
    aborted: false,
    timeoutMs: 120000,
    stdout: out(''),
    stderr: out(''),
    durationMs: 5,
    leftoverProcesses: 0,
    ...over,
  })
  const bodies: [CollectedOutput, CollectedOutput][] = [
    [out(''), out('')],
    [out('ok\n'), out('')],
    [out('no newline'), out('')],
    [out('[exit code: 9]\n'), out('')],
    [out('x'), out('[killed by signal: SIGKILL]\n')],
    [out('tail', { truncated: true, droppedBytes: 10, spillPath: '/tmp/s.log' }), out('err', { truncated: true, droppedBytes: 1 })],
  ]
  const statuses: Partial<BashRunResult>[] = [
    { exitCode: 0 },
    { exitCode: 3 },
    { exitCode: 255 },
    { exitCode: null, signal: 'SIGKILL' },
    { exitCode: null, signal: 'SIGTERM', timedOut: true, timeoutMs: 300 },
    { exitCode: 0, timedOut: true, timeoutMs: 300 },
    { exitCode: 1, leftoverProcesses: 2 },
    { exitCode: 1, sandbox: { mode: 'read-only', accessDenied: true, escalations: ['workspace-write'] } },
  ]
  it('round-trips presentResult(renderRunResult(r)) for exit code, signal and timeout', () => {
    for (const [stdout, stderr] of bodies) {
      for (const status of statuses) {
        const result = base({ ...status, stdout, stderr })
        for (const escalationHint of [false, true]) {
          const text = renderRunResult(result, { escalationHint })
          const card = presentBashResult(args, { content: [{ type: 'text', text }], isError: false })
          expect(card, text).toMatchObject({
            kind: 'terminal',
            output: text,
            exitCode: result.exitCode,
            signal: result.signal,
            timedOut: result.timedOut,
          })
        }
      }
    }
  })

  it('reads nothing from a marker-shaped output line above the real markers', () => {
    expect(readRunStatus('[exit code: 9]\n[timed out after 5ms]\nout\n[exit code: 2]')).toEqual({ exitCode: 2, signal: null, timedOut: false })
    expect(readRunStatus('[exit code: 9]\n')).toEqual({ exitCode: 0, signal: null, timedOut: false })
  })

  it('a yielded call has no exit status yet: a generic card', () => {
    const text = 'building\n[still running after 50s; continues as background task bash-4: read it with bash_output, stop it with bash_kill]'
    expect(readRunStatus(text)).toBeUndefined()
    expect(presentBashResult(args, { content: [{ type: 'text', text }], isError: false })).toEqual({ kind: 'generic', title: 'make', body: text })
  })

  it('error, empty, non-text and multi-block results, and arguments outside the schema, get generic cards', () => {
    const generic = (result: unknown, a: unknown = args) => presentBashResult(a, result as never).kind
    expect(generic({ content: [{ type: 'text', text: 'Error: the command was aborted\nx' }], isError: true })).toBe('generic')
    expect(generic({ content: [], isError: false })).toBe('generic')
    expect(generic({ content: [{ type: 'image', data: 'x' }], isError: false })).toBe('generic')
    expect(generic({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'notice' }], isError: false })).toBe('generic')
    expect(generic({ content: [{ type: 'text', text: 'a' }], isError: false }, { command: 'ls' })).toBe('generic')
    expect(generic({ content: [{ type: 'text', text: 'a' }], isError: false }, { command: 'ls', description: 'x', timeoutMs: 'soon' })).toBe('generic')
    expect(presentBashCall({ command: 'ls', description: 7 })).toEqual({ kind: 'generic', title: 'bash: ls', body: undefined })
    expect(presentBashResult(args, { content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], isError: false })).toEqual({
      kind: 'generic',
      title: 'make',
      body: 'a\nb',
    })
  })
})
