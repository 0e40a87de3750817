import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry, type ToolResult } from '@deepseek-ai/dsh-tools'
import { bashOutputSchema, spillThreshold, ToolBash, unescapeOutput } from '../src/index.js'
import { RecordingAgent, settle, until } from './harness.js'

/**
 * Every result's facts as data (`result.structured`, MCP structuredContent), and the complete
 * output read by byte range with bash_output (issue 28 items 2 and 3), through the real pipeline,
 * the local executor and real bash, with the MCP server's budget and yield settings.
 */
describe('structured facts and range reads', () => {
  const budget = { bytes: 10_000, lines: 1_900 }
  let root: Context
  let workspace: string
  const agents: RecordingAgent[] = []
  let seq = 0
  beforeAll(async () => {
    workspace = mkdtempSync(join(tmpdir(), 'tool-bash-facts-'))
    root = new Context()
    root.plugin(ToolRegistry)
    root.set('agents', { list: () => agents })
    const threshold = spillThreshold(budget)
    root.plugin(LocalExecutor, { graceMs: 300, cwd: workspace, maxOutputBytes: budget.bytes, spillAboveBytes: threshold.bytes, spillAboveLines: threshold.lines })
    root.plugin(ToolBash, { yieldAfterMs: 1_500, resultBudget: budget })
    await settle()
    agents.push(new RecordingAgent('a', 'session-a', workspace, []), new RecordingAgent('b', 'session-b', workspace, []))
  })
  afterAll(async () => {
    await root.bash.shutdown()
    rmSync(workspace, { recursive: true, force: true })
  })

  const call = async (name: string, args: Record<string, unknown>, agent = agents[0]): Promise<ToolResult & { text: string }> => {
    const result = await root.tools.execute({ callId: `c${++seq}`, name, arguments: args, agent })
    // Every result's facts fit the published schema.
    expect(bashOutputSchema.safeParse(result.structured).success, JSON.stringify(result.structured)).toBe(true)
    return { ...result, text: result.content.map((c) => c.text).join('\n') }
  }
  const bash = (command: string, extra: Record<string, unknown> = {}, agent = agents[0]) => call('bash', { command, description: 'x', ...extra }, agent)
  const none = { stdout: null, stderr: null }

  it('exit 0, exit 3, a signal, a timeout: status, exit code, signal; text unchanged', async () => {
    expect(await bash('echo hello')).toMatchObject({
      text: 'hello\n',
      structured: { status: 'completed', exitCode: 0, signal: null, taskId: null, truncated: false, fullOutput: null, fullOutputs: none },
    })
    expect(await bash('echo failing; exit 3')).toMatchObject({ text: 'failing\n[exit code: 3]', structured: { status: 'failed', exitCode: 3, signal: null } })
    expect(await bash('kill -9 $$')).toMatchObject({ structured: { status: 'killed', exitCode: null, signal: 'SIGKILL' } })
    const timed = await bash('sleep 60', { timeoutMs: 300 })
    expect(timed).toMatchObject({ text: '(no output)\n[timed out after 300ms]\n[killed by signal: SIGTERM]', structured: { status: 'timed_out', signal: 'SIGTERM' } })
    expect(typeof timed.structured!.durationMs).toBe('number')
  })

  it('a background start, a read, a kill; a yield', async () => {
    const started = await bash('echo up; sleep 60', { run_in_background: true })
    const id = started.text.split(' ').pop()!
    expect(started.structured).toMatchObject({ status: 'running', taskId: id, exitCode: null, signal: null })
    expect(await call('bash_output', { task_id: id, wait_ms: 10_000 })).toMatchObject({ text: 'up\n[status: running]', structured: { status: 'running', taskId: id } })
    expect(await call('bash_kill', { task_id: id })).toMatchObject({ text: `killed background task ${id}`, structured: { status: 'killed', taskId: id, signal: 'SIGTERM' } })
    const yielded = await bash('echo early; sleep 30')
    expect(yielded.text).toMatch(/\[still running after \ds; continues as background task (bash-\d+): /)
    const task = /background task (bash-\d+)/.exec(yielded.text)![1]
    expect(yielded.structured).toMatchObject({ status: 'yielded', taskId: task, exitCode: null })
    await call('bash_kill', { task_id: task })
  })

  it('a refusal is status error with its code', async () => {
    expect(await call('bash_output', { task_id: 'bash-999' })).toMatchObject({
      isError: true,
      structured: { status: 'error', code: 'DSH_UNKNOWN_TASK', exitCode: null, taskId: null, fullOutputs: none },
    })
  })

  it('seq 1 200000: truncated, fullOutput names it, and bash_output reads it back by ranges, byte for byte', async () => {
    const expected = Array.from({ length: 200_000 }, (_, i) => `${i + 1}\n`).join('')
    const cut = await bash('seq 1 200000')
    expect(cut.structured).toMatchObject({ status: 'completed', truncated: true, fullOutput: expect.stringMatching(/^dsh-bash:\/\/output\/run-\d+\/stdout$/) })
    const path = /^\[output truncated; full output: (\S+)\]$/m.exec(cut.text)![1]
    // By the path the marker named, as a model on another machine would: range after range.
    let offset = 0
    let whole = ''
    for (let i = 0; i < 1_000; i++) {
      const part = await call('bash_output', { task_id: path, offset })
      const cut = part.text.lastIndexOf('\n[bytes ')
      const marker = part.text.slice(cut + 1)
      expect(marker).toMatch(/^\[bytes \d+-\d+ of 1288895, stdout of run-\d+; (next offset: \d+|end of output)\]$/)
      const range = part.structured!.range as { offset: number; length: number; size: number; complete: boolean }
      expect(range).toMatchObject({ offset, size: expected.length, complete: true })
      expect(part.text.length).toBeLessThanOrEqual(budget.bytes)
      // The marker follows on a line of its own: a newline is added only when the range did not end with one.
      const body = unescapeOutput(part.text.slice(0, cut))
      whole += body.length === range.length ? body : `${body}\n`
      offset += range.length
      if (marker.endsWith('end of output]')) break
    }
    expect(whole).toBe(expected)
    // By the URI of structuredContent, a middle range.
    const mid = await call('bash_output', { task_id: cut.structured!.fullOutput, offset: 100_000, length: 20 })
    expect(expected.slice(100_000, 100_020).endsWith('\n')).toBe(true)
    expect(mid.text).toBe(`${expected.slice(100_000, 100_020)}[bytes 100000-100019 of 1288895, stdout of ${/run-\d+/.exec(String(cut.structured!.fullOutput))![0]}; next offset: 100020]`)
    // Another session reads nothing and learns nothing: the same error as for an unknown one.
    const foreign = await call('bash_output', { task_id: path, offset: 0 }, agents[1])
    expect(foreign).toMatchObject({ isError: true, text: `Error: no complete output of ${JSON.stringify(path)} is kept for this session`, structured: { status: 'error', code: 'DSH_NO_FULL_OUTPUT' } })
    const unknown = await call('bash_output', { task_id: path.replace(/run-\d+/, 'run-999999'), offset: 0 })
    expect(unknown.text).toMatch(/^Error: no complete output of ".*run-999999-stdout\.log" is kept for this session$/)
  })

  it('a task by id and stream; a range past the end; a growing output', async () => {
    const started = await bash('seq 1 5; seq 1 3000 >&2; sleep 60', { run_in_background: true })
    const id = started.text.split(' ').pop()!
    const size = Array.from({ length: 3000 }, (_, i) => `${i + 1}\n`).join('').length
    await until(async () => (await call('bash_output', { task_id: id, offset: 0, stream: 'stderr', length: 1 })).structured!.range?.size === size)
    const err = await call('bash_output', { task_id: id, offset: 0, stream: 'stderr', length: 8 })
    expect(err.text).toMatch(new RegExp(`^1\\n2\\n3\\n4\\n\\[bytes 0-7 of \\d+ so far, stderr of ${id}; next offset: 8\\]$`))
    expect(err.structured).toMatchObject({ status: 'running', taskId: id, range: { offset: 0, length: 8, complete: false } })
    const past = await call('bash_output', { task_id: id, offset: 1_000_000 })
    expect(past.text).toBe(`[bytes from 1000000: none of 10 so far, stdout of ${id}]`)
    await call('bash_kill', { task_id: id })
  })

  it('range arguments get clear errors', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ task_id: 'bash-1', offset: -1 }, 'Error: invalid offset: expected a whole number of bytes from 0, got -1'],
      [{ task_id: 'bash-1', offset: 1.5 }, 'Error: invalid offset: expected a whole number of bytes from 0, got 1.5'],
      [{ task_id: 'bash-1', offset: 0, length: 0 }, 'Error: invalid length: expected a positive whole number of bytes, got 0'],
      [{ task_id: 'bash-1', length: 10 }, 'Error: invalid length: it goes with offset (a range of the complete output)'],
      [{ task_id: 'bash-1', stream: 'stderr' }, 'Error: invalid stream: it goes with offset (a range of the complete output)'],
      [{ task_id: 'bash-1', offset: 0, wait_ms: 100 }, 'Error: invalid offset: a range read does not wait; leave out wait_ms and until'],
      [{ task_id: 'dsh-bash://output/x', offset: 0 }, 'Error: invalid task_id: "dsh-bash://output/x" is not a full-output URI (dsh-bash://output/<id>/<stream>)'],
    ]
    for (const [args, text] of cases) expect(await call('bash_output', args)).toMatchObject({ text, isError: true })
  })
})
