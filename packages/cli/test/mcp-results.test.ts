// Issue 28's acceptance through the real server process (`dsh-bash mcp`) and the SDK client, which
// validates every structuredContent against the tool's outputSchema once it has listed the tools:
// bash_output waits (wait_ms, until), the facts of each kind of result, the complete output as a
// resource (whole, ranged, fenced by session), bash_input waiting for the answer.
import { execFileSync } from 'node:child_process'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectHttp, type HttpServer, startHttp, startStdio, type StdioServer } from './helpers.js'

const hasPython = (() => {
  try {
    execFileSync('python3', ['-c', 'pass'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

async function run(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult
  return { text: (result.content[0] as { text: string }).text, isError: result.isError === true, facts: result.structuredContent as Record<string, unknown> }
}
const bashCall = (client: Client, command: string, extra: Record<string, unknown> = {}) => run(client, 'bash', { command, description: 'Run a test command', ...extra })
const seconds = (from: number) => (Date.now() - from) / 1000

describe('issue 28 through dsh-bash mcp (stdio, SDK client validating structuredContent)', () => {
  let server: StdioServer
  beforeAll(async () => {
    server = await startStdio()
    const { tools } = await server.client.listTools()
    // Every tool declares its facts and its annotations, a title each.
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object', required: expect.arrayContaining(['status', 'exitCode', 'signal', 'taskId', 'truncated', 'fullOutput']) })
      expect(tool.annotations?.title, tool.name).toEqual(expect.any(String))
      expect(tool.title, tool.name).toBe(tool.annotations?.title)
    }
    expect(Object.fromEntries(tools.map((t) => [t.name, [t.annotations?.readOnlyHint, t.annotations?.destructiveHint]]))).toEqual({
      bash: [false, true],
      bash_output: [true, undefined],
      bash_kill: [false, true],
      bash_input: [false, true],
    })
  })
  afterAll(async () => {
    await server?.close()
  })

  it('bash_output {wait_ms: 10000} on `sleep 2; echo hi; sleep 60` returns hi once it went quiet: not at once, not at the deadline', async () => {
    const { text } = await bashCall(server.client, 'sleep 2; echo hi; sleep 4; echo later; sleep 60', { run_in_background: true })
    const id = text.split(' ').pop()!
    const from = Date.now()
    const read = await run(server.client, 'bash_output', { task_id: id, wait_ms: 10_000 })
    // "later" (4 s after hi) would be there had it waited out the 10 s.
    expect(read).toMatchObject({ text: 'hi\n[status: running]', isError: false, facts: { status: 'running', taskId: id } })
    expect(seconds(from)).toBeGreaterThan(1)
    await run(server.client, 'bash_kill', { task_id: id })
  })

  it('until "^READY$" on 1, 2, 3 a second apart then READY returns with READY; a finished task returns at once', async () => {
    const { text } = await bashCall(server.client, 'for i in 1 2 3; do echo $i; sleep 1; done; echo READY; sleep 3; echo after', { run_in_background: true })
    const id = text.split(' ').pop()!
    const from = Date.now()
    expect(await run(server.client, 'bash_output', { task_id: id, wait_ms: 30_000, until: '^READY$' })).toMatchObject({ text: '1\n2\n3\nREADY\n[status: running]' })
    expect(seconds(from)).toBeGreaterThan(2)
    const ended = await run(server.client, 'bash_output', { task_id: id, wait_ms: 30_000 })
    expect(ended).toMatchObject({ text: 'after\n[status: completed, exit code: 0]', facts: { status: 'completed', exitCode: 0 } })
    const again = Date.now()
    expect(await run(server.client, 'bash_output', { task_id: id, wait_ms: 30_000 })).toMatchObject({ text: '(no new output)\n[status: completed, exit code: 0]' })
    expect(seconds(again)).toBeLessThan(10)
  })

  it('structuredContent: exit 3, a background start, a timeout, a kill, a refusal', async () => {
    expect((await bashCall(server.client, 'exit 3')).facts).toMatchObject({ status: 'failed', exitCode: 3, signal: null, taskId: null, truncated: false, fullOutput: null })
    const started = await bashCall(server.client, 'sleep 60', { run_in_background: true })
    const id = started.text.split(' ').pop()!
    expect(started.facts).toMatchObject({ status: 'running', taskId: id, exitCode: null })
    expect((await bashCall(server.client, 'sleep 60', { timeoutMs: 300 })).facts).toMatchObject({ status: 'timed_out', signal: 'SIGTERM' })
    expect((await run(server.client, 'bash_kill', { task_id: id })).facts).toMatchObject({ status: 'killed', taskId: id, signal: 'SIGTERM' })
    expect(await run(server.client, 'bash_output', { task_id: 'bash-99' })).toMatchObject({ isError: true, facts: { status: 'error', code: 'DSH_UNKNOWN_TASK' } })
  })

  it.skipIf(!hasPython)('bash_input typed into python3 -i before its prompt returns 42; empty text waits for the first output', async () => {
    const { text } = await bashCall(server.client, 'python3 -q -i', { run_in_background: true, interactive: true })
    const id = text.split(' ').pop()!
    const answer = await run(server.client, 'bash_input', { task_id: id, text: 'print(6*7)\n', wait_ms: 5_000 })
    expect(answer.text).toMatch(/\n42\n/)
    await run(server.client, 'bash_kill', { task_id: id })
    const slow = (await bashCall(server.client, 'sleep 1.5; echo first; sleep 60', { run_in_background: true, interactive: true })).text.split(' ').pop()!
    expect(await run(server.client, 'bash_input', { task_id: slow, text: '', wait_ms: 5_000 })).toMatchObject({ text: 'first\n[status: running]' })
    await run(server.client, 'bash_kill', { task_id: slow })
  })
})

describe('issue 28: complete outputs as resources, fenced by session (HTTP, two clients)', () => {
  let http: HttpServer
  beforeAll(async () => {
    http = await startHttp()
  })
  afterAll(async () => {
    await http?.stop()
  })

  it('seq 1 200000: fullOutput is a resource of its session, whole and ranged; another session reads nothing and learns nothing', async () => {
    const a = await connectHttp(http.url, http.token)
    const b = await connectHttp(http.url, http.token)
    try {
      await a.client.listTools()
      const full = `${Array.from({ length: 200_000 }, (_, i) => i + 1).join('\n')}\n`
      const cut = await bashCall(a.client, 'seq 1 200000')
      expect(cut.facts).toMatchObject({ status: 'completed', truncated: true })
      const uri = String(cut.facts.fullOutput)
      expect(uri).toMatch(/^dsh-bash:\/\/output\/run-\d+\/stdout$/)
      const { resourceTemplates } = await a.client.listResourceTemplates()
      expect(resourceTemplates).toEqual([expect.objectContaining({ uriTemplate: 'dsh-bash://output/{id}/{stream}{?offset,length}' })])
      expect((await a.client.listResources()).resources).toContainEqual(expect.objectContaining({ uri, size: full.length }))
      expect((await a.client.readResource({ uri })).contents).toEqual([{ uri, mimeType: 'text/plain', text: full }])
      const ranged = `${uri}?offset=588895&length=7`
      expect((await a.client.readResource({ uri: ranged })).contents).toEqual([{ uri: ranged, mimeType: 'text/plain', text: full.slice(588_895, 588_902) }])

      // Session B: the same error as for a URI that names nothing, and nothing in its list.
      const foreign = await b.client.readResource({ uri }).then(() => 'read', (error: Error) => error.message)
      expect(foreign).toBe(`MCP error -32002: resource not found: ${uri}`)
      const none = uri.replace(/run-\d+/, 'run-999999')
      expect(await b.client.readResource({ uri: none }).then(() => 'read', (error: Error) => error.message)).toBe(`MCP error -32002: resource not found: ${none}`)
      expect((await b.client.listResources()).resources).toEqual([])
      // Nor through bash_output by range.
      const path = /^\[output truncated; full output: (\S+)\]$/m.exec(cut.text)![1]
      expect(await run(b.client, 'bash_output', { task_id: path, offset: 0 })).toMatchObject({ isError: true, text: `Error: no complete output of ${JSON.stringify(path)} is kept for this session` })
    } finally {
      await a.close()
      await b.close()
    }
  })
})
