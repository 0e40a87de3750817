import * as crypto from 'node:crypto'
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import type { McpHost } from './host.js'
import { checkMessage, errorResponse, INVALID_REQUEST } from './protocol.js'
import type { McpSession } from './session.js'
import { mcpErrors } from './errors.js'
import { handleReplyRequest, REPLY_PATH } from './reply-endpoint.js'

export interface HttpOptions {
  /** Address to bind. Default `127.0.0.1`. */
  host?: string
  /** Port; 0 picks a free one. */
  port: number
  /** The bearer token every request must carry (`Authorization: Bearer <token>`). */
  token: string
  /** Origins allowed besides this server's own (e.g. `http://localhost:6274` for a browser-based client). */
  allowedOrigins?: string[]
  /** Extra values accepted in the `Host` header (names this server is reached by). */
  allowedHosts?: string[]
  /** Largest accepted request body (bytes). Default 16 MiB. */
  maxBodyBytes?: number
  /**
   * A session with no request for this long (ms) is closed as if its client had sent `DELETE`:
   * its running tasks are killed. An open request of the session (a GET stream, a call in progress,
   * hence a running foreground command) keeps it alive; its background tasks do not. 0: never.
   * Default 30 minutes.
   */
  idleTimeoutMs?: number
  /** Diagnostics (expired sessions). Default: none. */
  log?: (message: string) => void
}

/** The default of `HttpOptions.idleTimeoutMs`. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30 * 60 * 1000

interface SessionEntry {
  transport: StreamableHTTPServerTransport
  session: McpSession
  /** Requests of this session still open (GET streams, POSTs awaiting their response). */
  open: number
  idleTimer?: ReturnType<typeof setTimeout>
}

export interface HttpHandle {
  /** `http://host:port/mcp` */
  url: string
  port: number
  /** Resolves when the server closed (after `close()`). */
  closed: Promise<void>
  /** Stops listening, closes every session (their tasks are killed) and every connection. Idempotent. */
  close(): Promise<void>
}

/** The endpoint path. */
export const MCP_PATH = '/mcp'

/** A random bearer token (URL-safe, 256 bits). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url')
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])
const WILDCARD = new Set(['0.0.0.0', '::', '[::]'])

/** True for a bind address reachable only from this machine. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/**
 * Streamable HTTP at `/mcp`: one SDK transport and one `McpSession` per MCP session (the
 * `Mcp-Session-Id` header). Every request passes, in this order: the path (404), the `Host` header
 * against DNS rebinding (403), the `Origin` header (403 for a foreign origin), the bearer token (401).
 */
export async function serveHttp(host: McpHost, options: HttpOptions): Promise<HttpHandle> {
  const bind = options.host ?? '127.0.0.1'
  if (typeof options.token !== 'string' || options.token === '') throw mcpErrors.invalidOptions('a bearer token is required')
  const maxBody = options.maxBodyBytes ?? 16 * 1024 * 1024
  const idleMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS
  if (!(Number.isFinite(idleMs) && idleMs >= 0)) throw mcpErrors.invalidOptions(`idleTimeoutMs must be 0 (never) or a positive number, got ${JSON.stringify(idleMs)}`)
  const expected = digest(options.token)
  const sessions = new Map<string, SessionEntry>()

  /** Starts the idle clock of a session that has nothing open. */
  const arm = (id: string, entry: SessionEntry) => {
    clearTimeout(entry.idleTimer)
    entry.idleTimer = undefined
    if (idleMs === 0 || entry.open > 0 || entry.session.busy || entry.session.closed) return
    entry.idleTimer = setTimeout(() => {
      if (entry.open > 0 || entry.session.busy || sessions.get(id) !== entry) return
      options.log?.(`session ${entry.session.label} expired after ${Math.round(idleMs / 1000)}s without a request; its tasks are killed`)
      sessions.delete(id)
      // As if the client had sent DELETE: the transport closes, then the session (its tasks are killed).
      void entry.transport.close().finally(() => entry.session.close())
    }, Math.min(idleMs, 2 ** 31 - 1))
    entry.idleTimer.unref?.()
  }
  /** Counts a request as open until its response is finished or its connection gone. */
  const track = (id: string, entry: SessionEntry, res: ServerResponse) => {
    entry.open++
    clearTimeout(entry.idleTimer)
    res.once('close', () => {
      entry.open--
      arm(id, entry)
    })
  }
  // The accepted `Host` values; set once the port is known, before the first request.
  let hosts: Set<string> | undefined

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    // The reply desk (reply-endpoint.ts), for `dsh-bash reply --url` from wherever the token is.
    const desk = url.pathname === REPLY_PATH || url.pathname.startsWith(`${REPLY_PATH}/`) ? host.replies : undefined
    if (url.pathname !== MCP_PATH && !desk) return reply(res, 404, `not found: the MCP endpoint is ${MCP_PATH}`)
    const hostHeader = (req.headers.host ?? '').toLowerCase()
    if (hosts && !hosts.has(hostHeader)) return reply(res, 403, `forbidden: Host header ${JSON.stringify(hostHeader)} is not this server`)
    const origin = req.headers.origin
    if (origin !== undefined && !originAllowed(origin, hostHeader, options.allowedOrigins ?? [])) {
      return reply(res, 403, `forbidden: Origin ${JSON.stringify(origin)} is not allowed`)
    }
    if (!authorized(req.headers.authorization, expected)) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="dsh-bash"')
      return reply(res, 401, 'unauthorized: a valid bearer token is required')
    }
    if (desk) return handleReplyRequest(desk, req, res, true)

    const sessionId = header(req, 'mcp-session-id')
    if (sessionId !== undefined) {
      const entry = sessions.get(sessionId)
      if (!entry) return reply(res, 404, 'session not found', -32001)
      track(sessionId, entry, res)
      const body = req.method === 'POST' ? await readJson(req, res, maxBody) : undefined
      if (body === INVALID) return
      if (body !== undefined && refuseMalformed(body, res)) return
      // A request of a busy server waits for its turn of the loop (see loop-turns.ts).
      await host.turns.next(false)
      return entry.transport.handleRequest(req, res, body)
    }
    if (req.method !== 'POST') return reply(res, 400, 'bad request: no Mcp-Session-Id header', -32000)
    const body = await readJson(req, res, maxBody)
    if (body === INVALID) return
    if (refuseMalformed(body, res)) return
    if (!isInitializeRequest(body)) return reply(res, 400, 'bad request: no Mcp-Session-Id header and not an initialize request', -32000)

    const session = host.createSession()
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        const entry: SessionEntry = { transport, session, open: 0 }
        sessions.set(id, entry)
        session.onCallSettled = () => arm(id, entry)
        track(id, entry, res)
      },
    })
    const previous = session.server.onclose
    session.server.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId)
      previous?.()
    }
    await session.server.connect(transport)
    await transport.handleRequest(req, res, body)
    if (!transport.sessionId || !sessions.has(transport.sessionId)) await session.close()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      if (!res.headersSent) reply(res, 500, `internal error: ${error instanceof Error ? error.message : String(error)}`, -32603)
      else res.end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, bind, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  hosts = allowedHosts(bind, port, options.allowedHosts ?? [])
  const stopServingReplies = host.replies?.serve()

  let closing: Promise<void> | undefined
  let done!: () => void
  const closed = new Promise<void>((resolve) => (done = resolve))
  const close = () => {
    closing ??= (async () => {
      stopServingReplies?.()
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const entry of sessions.values()) clearTimeout(entry.idleTimer)
      await Promise.all([...sessions.values()].map(({ session }) => session.close()))
      sessions.clear()
      server.closeAllConnections()
      await stopped
      done()
    })()
    return closing
  }
  return { url: `http://${bracket(bind)}:${port}${MCP_PATH}`, port, closed, close }
}

const INVALID = Symbol('invalid')

/** Answers a malformed message (or any malformed member of a batch) with a JSON-RPC error; true when it did. */
function refuseMalformed(body: unknown, res: ServerResponse): boolean {
  for (const message of Array.isArray(body) ? body : [body]) {
    const verdict = checkMessage(message)
    if (verdict.pass) continue
    const refusal = verdict.refusal ?? { id: null, code: INVALID_REQUEST, message: 'invalid request: a malformed notification' }
    res.writeHead(400, { 'Content-Type': 'application/json' })
    res.end(JSON.stringify(errorResponse(refusal)))
    return true
  }
  return false
}

/**
 * The request body as JSON (INVALID after answering 413 or 400). Plain `data`/`end` listeners, not
 * `for await`: the async iterator cost a few hundred microseconds per request under the load bench.
 * A request that errors or closes before its end rejects, as the iterator did.
 */
function readJson(req: IncomingMessage, res: ServerResponse, max: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const settle = () => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        settle()
        reply(res, 413, `request body larger than ${max} bytes`, -32600)
        req.destroy()
        return resolve(INVALID)
      }
      chunks.push(chunk)
    }
    const onEnd = () => {
      settle()
      try {
        resolve(JSON.parse((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8')))
      } catch {
        reply(res, 400, 'parse error: the body is not valid JSON', -32700)
        resolve(INVALID)
      }
    }
    const onError = (error: Error) => {
      settle()
      reject(error)
    }
    const onClose = () => {
      settle()
      reject(mcpErrors.badState('the request closed before its body ended'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** The `Host` header values naming this server, or undefined for a wildcard bind. */
function allowedHosts(bind: string, port: number, extra: string[]): Set<string> | undefined {
  // A wildcard bind has no single name to check against: only the token protects it.
  if (WILDCARD.has(bind)) return undefined
  const names = new Set<string>([bracket(bind), ...extra])
  if (isLoopback(bind)) for (const name of ['127.0.0.1', 'localhost', '[::1]']) names.add(name)
  const withPort = new Set<string>()
  for (const name of names) {
    withPort.add(`${name}:${port}`)
    if (port === 80) withPort.add(name)
  }
  return withPort
}

function originAllowed(origin: string, hostHeader: string, extra: string[]): boolean {
  if (extra.includes(origin)) return true
  let parsed: URL
  try {
    parsed = new URL(origin)
  } catch {
    return false // includes "null"
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false
  const host = parsed.host.toLowerCase()
  // Same origin as this server (the name the request came in by, which passed the Host check).
  return host === hostHeader
}

function authorized(value: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '')
  if (!match) return false
  return timingSafeEqual(digest(match[1]), expected)
}

function digest(value: string): Buffer {
  // One-shot `hash` (no Hash object per request) where Node has it (20.12+; read off the namespace:
  // a named import of it would fail to link on older Node 20).
  const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash
  return typeof oneShot === 'function' ? oneShot('sha256', value, 'buffer') : createHash('sha256').update(value, 'utf8').digest()
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

function bracket(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

function reply(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.writeHead(status, { 'Content-Type': 'application/json' })
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }))
}
