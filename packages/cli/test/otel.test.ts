import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { connectHttp, MAIN, startHttp, waitFor } from './helpers.js'

/**
 * Issue 29's traces through the real `dsh-bash mcp` with the SDK Client, exported to a real
 * OTLP/HTTP receiver this test runs on 127.0.0.1 (node:http): JSON decoded as JSON; protobuf
 * decoded with a protobuf wire-format reader against the field numbers of opentelemetry-proto's
 * trace.proto (the exporter package ships an encoder but no .proto files or request decoder, so
 * "decode with its definitions" is not possible; the field numbers are the spec's).
 */

interface Span {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  attributes: Record<string, unknown>
}
interface Export {
  contentType: string
  headers: Record<string, string | string[] | undefined>
  resource: Record<string, unknown>
  spans: Span[]
}

/** A minimal OTLP/HTTP traces receiver: every POST to /v1/traces, decoded. */
class Receiver {
  readonly exports: Export[] = []
  private server!: Server
  url = ''
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        let body = Buffer.concat(chunks)
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body)
        const type = String(req.headers['content-type'])
        if (req.url === '/v1/traces') this.exports.push({ ...(type.includes('json') ? fromJson(body, type) : fromProtobuf(body, type)), headers: req.headers })
        res.writeHead(200, { 'content-type': type })
        res.end(type.includes('json') ? '{}' : '')
      })
    })
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }
  spans(): Span[] {
    return this.exports.flatMap((e) => e.spans)
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise((resolve) => this.server.close(resolve))
  }
}

/** OTLP/JSON: ids are hex strings, attribute values `{stringValue | intValue | …}`. */
function fromJson(body: Buffer, contentType: string): Omit<Export, 'headers'> {
  const request = JSON.parse(body.toString('utf8')) as { resourceSpans: { resource: { attributes: unknown[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[] }
  const attrs = (list: unknown) =>
    Object.fromEntries(((list as { key: string; value: Record<string, unknown> }[]) ?? []).map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : value.boolValue)]))
  return {
    contentType,
    resource: attrs(request.resourceSpans[0]?.resource.attributes),
    spans: request.resourceSpans.flatMap((r) =>
      r.scopeSpans.flatMap((s) =>
        s.spans.map((span) => ({
          traceId: String(span.traceId),
          spanId: String(span.spanId),
          parentSpanId: String(span.parentSpanId ?? ''),
          name: String(span.name),
          kind: Number(span.kind),
          attributes: attrs(span.attributes),
        })),
      ),
    ),
  }
}

/** Protobuf wire format: (field number, wire type, value) of one message. */
function* fields(buf: Buffer): Generator<[number, number, Buffer | bigint]> {
  let at = 0
  const varint = () => {
    let value = 0n
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++]
      value |= BigInt(byte & 0x7f) << shift
      if (byte < 0x80) return value
    }
  }
  while (at < buf.length) {
    const key = Number(varint())
    const wire = key & 7
    if (wire === 0) yield [key >> 3, wire, varint()]
    else if (wire === 1) (yield [key >> 3, wire, buf.subarray(at, at + 8)], (at += 8))
    else if (wire === 5) (yield [key >> 3, wire, buf.subarray(at, at + 4)], (at += 4))
    else if (wire === 2) {
      const length = Number(varint())
      yield [key >> 3, wire, buf.subarray(at, at + length)]
      at += length
    } else throw new Error(`protobuf: unexpected wire type ${wire}`)
  }
}
const messages = (buf: Buffer, no: number) => [...fields(buf)].filter(([n, w]) => n === no && w === 2).map(([, , v]) => v as Buffer)

/** trace.proto: ExportTraceServiceRequest.resource_spans=1; ResourceSpans.resource=1, scope_spans=2; ScopeSpans.spans=2; Span: trace_id=1, span_id=2, parent_span_id=4, name=5, kind=6, attributes=9; KeyValue key=1 value=2; AnyValue string=1, int=3. */
function fromProtobuf(body: Buffer, contentType: string): Omit<Export, 'headers'> {
  const keyValues = (buf: Buffer, no: number) =>
    Object.fromEntries(
      messages(buf, no).map((kv) => {
        const key = messages(kv, 1)[0].toString('utf8')
        const any = messages(kv, 2)[0] ?? Buffer.alloc(0)
        const [entry] = [...fields(any)]
        const value = entry === undefined ? undefined : entry[0] === 1 ? (entry[2] as Buffer).toString('utf8') : entry[0] === 3 ? Number(entry[2] as bigint) : entry[2]
        return [key, value]
      }),
    )
  const resourceSpans = messages(body, 1)
  return {
    contentType,
    resource: keyValues(messages(resourceSpans[0], 1)[0], 1),
    spans: resourceSpans.flatMap((r) =>
      messages(r, 2).flatMap((scope) =>
        messages(scope, 2).map((span) => {
          const one = (no: number) => messages(span, no)[0]
          const kind = [...fields(span)].find(([n]) => n === 6)?.[2] as bigint | undefined
          return {
            traceId: one(1).toString('hex'),
            spanId: one(2).toString('hex'),
            parentSpanId: one(4)?.toString('hex') ?? '',
            name: one(5).toString('utf8'),
            kind: Number(kind ?? 0n),
            attributes: keyValues(span, 9),
          }
        }),
      ),
    ),
  }
}

// Every test starts the real server, some several times: on a saturated machine (load 100 on 2
// CPUs, `node -e 0` alone 9 s) one start has taken 20 s, so the default 60 s is not enough.
vi.setConfig({ testTimeout: 240_000 })

let dir: string
let receiver: Receiver
beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-otel-')))
  receiver = new Receiver()
  await receiver.start()
})
afterAll(async () => {
  await receiver.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** `dsh-bash mcp` with these variables (and none of the test's own OTEL_ ones). */
async function serve(env: Record<string, string>) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_'))) as Record<string, string>
  const transport = new StdioClientTransport({ command: process.execPath, args: [MAIN, 'mcp', '--workdir', dir], env: { ...base, OTEL_BSP_SCHEDULE_DELAY: '100', ...env }, stderr: 'pipe' })
  let err = ''
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const client = new Client({ name: 'dsh-e2e-otel', version: '1.0.0' }, { capabilities: {} })
  await client.connect(transport)
  const call = async (name: string, args: Record<string, unknown>, meta?: Record<string, string>) =>
    (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as CallToolResult
  return { client, call, stderr: () => err }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex')
const SERVER = 2 // SpanKind.SERVER in OTLP (SPAN_KIND_SERVER)

for (const protocol of ['http/json', 'http/protobuf'] as const) {
  describe(`traces over OTLP ${protocol}`, () => {
    it('a call whose _meta carries a traceparent: a span "tools/call bash" in that trace, a child span per command with process.exit.code', async () => {
      const traceId = hex(16)
      const clientSpan = hex(8)
      const server = await serve({
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_SERVICE_NAME: `dsh-test-${protocol}`,
        // The collector's credentials: for the exporter, never for the model's commands.
        OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=collector-secret-123',
      })
      const before = receiver.exports.length
      try {
        const env = await server.call('bash', { command: 'env', description: 'Show the environment' })
        expect((env.content[0] as { text: string }).text).not.toContain('collector-secret-123')
        const result = await server.call('bash', { command: 'echo traced; exit 3', description: 'Exit 3' }, { traceparent: `00-${traceId}-${clientSpan}-01`, tracestate: 'vendor=x' })
        expect(result.structuredContent).toMatchObject({ status: 'failed', exitCode: 3 })
        const started = await server.call('bash', { command: 'sleep 0.2; kill -TERM $$', description: 'A task', run_in_background: true }, { traceparent: `00-${traceId}-${clientSpan}-01` })
        expect(started.structuredContent).toMatchObject({ status: 'running', taskId: 'bash-1' })
        await server.call('no_such_tool_'.padEnd(300, 'x'), {})
        await waitFor('the task span', () => receiver.spans().some((s) => s.name === 'bash task' && s.traceId === traceId))
      } finally {
        await server.client.close()
      }
      const mine = receiver.exports.slice(before)
      expect(mine.every((e) => e.contentType === (protocol === 'http/json' ? 'application/json' : 'application/x-protobuf'))).toBe(true)
      expect(mine[0].resource['service.name']).toBe(`dsh-test-${protocol}`)
      // The control: the exporter itself sent them.
      expect(mine.every((e) => e.headers['x-collector-key'] === 'collector-secret-123')).toBe(true)
      const spans = mine.flatMap((e) => e.spans)
      const calls = spans.filter((s) => s.name === 'tools/call bash')
      expect(calls).toHaveLength(3)
      const [, first, second] = calls
      expect(first).toMatchObject({ traceId, parentSpanId: clientSpan, kind: SERVER })
      expect(first.attributes).toMatchObject({
        'gen_ai.tool.name': 'bash',
        'mcp.method.name': 'tools/call',
        'gen_ai.operation.name': 'execute_tool',
        'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
        'network.transport': 'pipe',
      })
      expect(first.attributes['error.type']).toBeUndefined()
      const run = spans.find((s) => s.name === 'bash run' && s.traceId === traceId)!
      expect(run).toMatchObject({ parentSpanId: first.spanId })
      expect(run.attributes).toMatchObject({ 'process.exit.code': 3, 'dsh_bash.status': 'failed' })
      const task = spans.find((s) => s.name === 'bash task')!
      expect(task).toMatchObject({ traceId, parentSpanId: second.spanId })
      expect(task.attributes).toMatchObject({ 'dsh_bash.status': 'killed', 'dsh_bash.signal': 'SIGTERM', 'dsh_bash.task.id': 'bash-1' })
      expect(task.attributes['process.exit.code']).toBeUndefined()
      // A tool name the server does not serve is the client's text: not in a span name, an error span.
      const unknown = spans.find((s) => s.name === 'tools/call')!
      expect(unknown.attributes).toMatchObject({ 'error.type': 'tool_error', 'dsh_bash.error.code': 'DSH_UNKNOWN_TOOL' })
      expect(unknown.attributes['gen_ai.tool.name']).toBeUndefined()
      expect(unknown.traceId).not.toBe(traceId)
      // No command text and no output in any span.
      expect(JSON.stringify(spans)).not.toMatch(/traced|echo|sleep|collector-secret/)
    })
  })
}

describe('traces over Streamable HTTP', () => {
  it("the span carries the client's MCP session id and the transport", async () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' }
    const server = await startHttp(['--workdir', dir], env)
    let sessionId: string | undefined
    try {
      const connected = await connectHttp(server.url, server.token)
      try {
        sessionId = connected.transport.sessionId
        await connected.client.callTool({ name: 'bash', arguments: { command: 'true', description: 'Over HTTP' } })
        await waitFor('the span', () => receiver.spans().some((s) => s.attributes['mcp.session.id'] === sessionId))
      } finally {
        await connected.close()
      }
    } finally {
      await server.stop()
    }
    const span = receiver.spans().find((s) => s.attributes['mcp.session.id'] === sessionId)!
    expect(span).toMatchObject({ name: 'tools/call bash', kind: SERVER })
    expect(span.attributes).toMatchObject({ 'network.transport': 'tcp', 'network.protocol.name': 'http', 'gen_ai.tool.name': 'bash' })
    expect(sessionId).toMatch(/.{16,}/)
  })
})

describe('traces: only when asked for', () => {
  it('an unsupported protocol is a usage error naming the variable', () => {
    const result = spawnSync(process.execPath, [MAIN, 'mcp'], { encoding: 'utf8', input: '', env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' } })
    expect(result.status).toBe(2)
    expect(result.stderr).toBe('dsh-bash: OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http/protobuf or http/json\nTry "dsh-bash mcp --help".\n')
  })

  it('without an OTLP endpoint no OpenTelemetry file is even opened (strace); with one it is (the control)', async () => {
    const opened = async (env: Record<string, string>) => {
      const trace = join(dir, `strace-${Object.keys(env).length}.txt`)
      const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_'))) as Record<string, string>
      const proc = spawn('strace', ['-f', '-e', 'trace=openat', '-o', trace, process.execPath, MAIN, 'mcp', '--workdir', dir], { env: { ...base, ...env }, stdio: ['pipe', 'pipe', 'ignore'] })
      let out = ''
      proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      const exited = new Promise((resolve) => proc.once('exit', resolve))
      const send = (message: object) => proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`)
      send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })
      send({ method: 'notifications/initialized' })
      send({ id: 2, method: 'tools/list' })
      // By the answer to tools/list the tools (and a tracer) are loaded.
      await waitFor('the tools/list answer', () => out.includes('"id":2'), 60_000)
      proc.stdin.end()
      await exited
      return readFileSync(trace, 'utf8')
    }
    const without = await opened({})
    expect(without).toContain('dist/main.js')
    expect(without).not.toContain('@opentelemetry')
    const withEndpoint = await opened({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
    expect(withEndpoint).toContain('@opentelemetry/sdk-trace-base')
  })
})
