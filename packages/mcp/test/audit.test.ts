import { mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnSync } from 'node:child_process'
import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { AuditFile, auditLine } from '../src/audit-log.js'
import { McpHost, type McpHostOptions } from '../src/index.js'
import { type CallTracing, otlpTracesRequested, type TracedCallStart, type TracedCommand } from '../src/tracing.js'

/** The host's audit log and tracing seam in-process: real tools, the real local executor, SDK clients in memory. */

let dir: string
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-audit-')))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const apps: { dispose(): Promise<void> }[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  for (const app of apps.splice(0)) await app.dispose()
})

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}

function setup(options: McpHostOptions, extra?: (ctx: Context) => void) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  ctx.plugin(LocalExecutor, { graceMs: 300, cwd: dir })
  ctx.plugin(ToolBash)
  ctx.plugin({
    name: 'test-asker',
    inject: ['tools'],
    apply: (c: Context) =>
      void c.tools.onPreExecute((call) => (String(call.args.command).startsWith('ask') ? { kind: 'ask', reason: 'it asks', rule: 'ask *' } : undefined)),
  })
  if (extra) ctx.plugin({ name: 'test-extra', inject: ['tools'], apply: extra })
  let host!: McpHost
  ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => void (host = new McpHost(c, { log: () => {}, ...options })) })
  const clients: Client[] = []
  const app = {
    host,
    async connect(capabilities: Record<string, unknown> = {}) {
      const session = host.createSession()
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await session.server.connect(serverSide)
      const client = new Client({ name: 'unit', version: '2' }, { capabilities })
      await client.connect(clientSide)
      clients.push(client)
      return client
    },
    async dispose() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await host.close()
      await ctx.bash?.shutdown()
      await ctx.stop()
    },
  }
  apps.push(app)
  return app
}

const bash = (client: Client, command: string, extra: Record<string, unknown> = {}) =>
  client.callTool({ name: 'bash', arguments: { command, description: 'x', ...extra } }) as Promise<CallToolResult>
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('the audit line', () => {
  it('is the JSON of the record, with NEL, U+2028/9, C1 controls and bidi marks escaped: one line, the same value', () => {
    const record = { command: 'a\nb\r\u0085\u2028\u2029\u009b\u202e\u2066\u200b\u00ad\ufeff\u007f\u001b' }
    const line = auditLine(record)
    expect(line.endsWith('\n')).toBe(true)
    expect(line.slice(0, -1)).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b\u00ad\ufeff]/)
    expect(JSON.parse(line)).toEqual(record)
  })
})

describe('AuditFile', () => {
  it('creates the file mode 0600 and appends whole lines in order', async () => {
    const path = join(dir, 'order.log')
    const file = new AuditFile(path)
    await Promise.all(Array.from({ length: 50 }, (_, i) => file.append({ i })))
    await file.close()
    expect(statSync(path).mode & 0o777).toBe(0o600)
    expect(lines(path).map((l) => l.i)).toEqual(Array.from({ length: 50 }, (_, i) => i))
  })

  it('refuses a FIFO without hanging', () => {
    const fifo = join(dir, 'fifo.log')
    spawnSync('mkfifo', ['-m', '600', fifo])
    expect(() => new AuditFile(fifo)).toThrow(`${fifo} is not a regular file`)
  })

  it('a closed file refuses appends', async () => {
    const file = new AuditFile(join(dir, 'closed.log'))
    await file.close()
    await expect(file.append({})).rejects.toThrow(/is closed$/)
  })
})

describe('McpHost audit option', () => {
  it("the result is sent only after its line is written (a slow disk delays the result, never the line)", async () => {
    const path = join(dir, 'slow.log')
    // The real file, only slower: each append waits 300 ms before it writes.
    const append = AuditFile.prototype.append
    vi.spyOn(AuditFile.prototype, 'append').mockImplementation(function (this: AuditFile, record: object) {
      return new Promise<void>((resolve) => setTimeout(resolve, 300)).then(() => append.call(this, record))
    })
    const app = setup({ audit: { file: path, executor: 'local' } })
    const client = await app.connect()
    const started = Date.now()
    const result = await bash(client, 'echo quick')
    // Read in the tick the result arrived: the line is there.
    const atResult = readFileSync(path, 'utf8')
    expect(Date.now() - started).toBeGreaterThanOrEqual(290)
    expect(result.content).toEqual([{ type: 'text', text: 'quick\n' }])
    expect(atResult.split('\n').filter(Boolean).map((l) => JSON.parse(l).command)).toEqual(['echo quick'])
  })

  it('approvals: approved, cancelled, and unavailable (nobody asked) through the session that called', async () => {
    const path = join(dir, 'approvals.log')
    const app = setup({ audit: { file: path } })
    const asking = await app.connect({ elicitation: {} })
    const answers = [{ action: 'accept', content: { allow: true } }, { action: 'cancel' }]
    asking.setRequestHandler(ElicitRequestSchema, () => answers.shift() as never)
    const silent = await app.connect()
    await bash(asking, 'ask=1 true')
    await bash(asking, 'ask=2 true')
    await bash(silent, 'ask=3 true')
    const [yes, cancel, nobody] = lines(path)
    const approval = (outcome: string, asked = true) => [{ asked, outcome, via: 'mcp-elicitation', reason: 'it asks' }]
    expect(yes).toMatchObject({ executor: 'LocalExecutor', callId: 's1-1', client: { name: 'unit', version: '2' }, policy: { decision: 'ask', rule: 'ask *', reasons: ['it asks'] }, approvals: approval('approved'), status: 'completed' })
    expect(cancel).toMatchObject({ callId: 's1-2', approvals: approval('cancelled'), status: 'error', code: 'DSH_APPROVAL_CANCELLED', ran: false })
    expect(nobody).toMatchObject({ callId: 's2-1', approvals: approval('unavailable', false), status: 'error', code: 'DSH_DENIED', ran: false })
  })

  it('a task that ends before its call is recorded still gets its end line, after the call line', async () => {
    const path = join(dir, 'quick-task.log')
    // A post-execute listener that takes its time (a redaction over the network, say): the task ends meanwhile.
    const app = setup({ audit: { file: path } }, (c) => void c.tools.onPostExecute(() => new Promise((resolve) => setTimeout(resolve, 300))))
    const client = await app.connect()
    for (let i = 0; i < 3; i++) await bash(client, 'true', { run_in_background: true })
    // Before the host closes (which reports the ends of the tasks it still knows).
    await waitFor(() => lines(path).length === 6)
    const seen = lines(path).map((l) => `${l.event} ${l.taskId}`)
    for (let i = 1; i <= 3; i++) {
      expect(seen.indexOf(`call bash-${i}`)).toBeGreaterThanOrEqual(0)
      expect(seen.indexOf(`task-end bash-${i}`)).toBeGreaterThan(seen.indexOf(`call bash-${i}`))
    }
  })

  it('a task still running when its session closes: the kill is its end line', async () => {
    const path = join(dir, 'closed-session.log')
    const app = setup({ audit: { file: path } })
    const client = await app.connect()
    await bash(client, 'sleep 60', { run_in_background: true })
    await app.host.close()
    expect(lines(path).at(-1)).toMatchObject({ event: 'task-end', taskId: 'bash-1', command: 'sleep 60', status: 'killed', signal: 'SIGTERM' })
  })
})

describe('McpHost tracing option (the CallTracing seam)', () => {
  it('the client text of an unknown tool is never the tool of a span; _meta trace context goes through; a yield is not a command span yet', async () => {
    const starts: TracedCallStart[] = []
    const commands: TracedCommand[] = []
    const ends: { isError: boolean; errorCode?: string }[] = []
    const tracing: CallTracing = {
      startCall: (start) => (starts.push(start), { command: (c) => void commands.push(c), end: (o) => void ends.push(o) }),
      shutdown: async () => {},
    }
    // A promise while it loads: the first call waits for it.
    const app = setup({ tracing: new Promise((resolve) => setTimeout(() => resolve(tracing), 100)) })
    const client = await app.connect()
    await client.callTool({ name: 'bash', arguments: { command: 'exit 4', description: 'x' }, _meta: { traceparent: 'tp', tracestate: 'ts' } })
    await client.callTool({ name: 'made up', arguments: {} })
    expect(starts.map((s) => [s.tool, s.traceparent, s.tracestate, s.transport, s.sessionId])).toEqual([
      ['bash', 'tp', 'ts', 'stdio', undefined],
      [undefined, undefined, undefined, 'stdio', undefined],
    ])
    expect(commands).toEqual([{ kind: 'run', startTime: expect.any(Number), endTime: expect.any(Number), status: 'failed', exitCode: 4, signal: null, taskId: null }])
    expect(ends).toEqual([{ endTime: expect.any(Number), isError: false }, { endTime: expect.any(Number), isError: true, errorCode: 'DSH_UNKNOWN_TOOL' }])
  })
})

describe('otlpTracesRequested: what the standard variables ask for', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }
  it('nothing without an endpoint (a blank one is none); protobuf by default; the traces variables win', () => {
    expect(otlpTracesRequested({})).toBeUndefined()
    expect(otlpTracesRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeUndefined()
    expect(otlpTracesRequested(endpoint)).toEqual({ protocol: 'http/protobuf' })
    expect(otlpTracesRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toEqual({ protocol: 'http/json' })
    expect(otlpTracesRequested({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' })).toEqual({ protocol: 'http/json' })
  })
  it('off with OTEL_SDK_DISABLED=true or an OTEL_TRACES_EXPORTER without otlp', () => {
    expect(otlpTracesRequested({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).toBeUndefined()
    expect(otlpTracesRequested({ ...endpoint, OTEL_SDK_DISABLED: 'false' })).toEqual({ protocol: 'http/protobuf' })
    expect(otlpTracesRequested({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined()
    expect(otlpTracesRequested({ ...endpoint, OTEL_TRACES_EXPORTER: 'console, otlp' })).toEqual({ protocol: 'http/protobuf' })
  })
  it('a protocol it cannot speak is an error naming the variable that set it', () => {
    expect(() => otlpTracesRequested({ ...endpoint, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toThrow('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" is not supported; use http/protobuf or http/json')
  })
})
