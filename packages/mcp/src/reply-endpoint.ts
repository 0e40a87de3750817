import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { join } from 'node:path'
import type { DeskAnswer, ReplyDesk } from './reply-desk.js'
import { checkPrivateDirectory, REPLY_PATH, replyDirectory } from './reply-dir.js'
import { commandOfServer, findPeer } from './reply-peer.js'

/**
 * The reply desk over HTTP: `GET /dsh-bash/replies` lists the waiting questions, `POST
 * /dsh-bash/replies/<id>` with `{"action":"send","reply":"…"}` or `{"action":"decline"}` answers one.
 * Served on its own loopback port for `dsh-bash reply` on this machine (`serveReplyDesk`, found
 * through a private directory), and on the MCP HTTP server for a person elsewhere (`serveHttp`).
 * Every request must come from a process that is not a command of a dsh-bash server (reply-peer.ts).
 */

export { REPLY_PATH }

/** Why a request is refused (exact texts: dsh-mcp's README). */
export const replyRefusals = {
  command: (why: string) => `refused: this request comes from a command that a dsh-bash server runs (${why}); a reply must come from a person's terminal`,
  otherUser: (uid: number) => `refused: this request comes from another user (uid ${uid})`,
  unknown: 'refused: cannot tell which process sent this request',
}

/** The largest request body taken (bytes): a reply is one line. */
const MAX_BODY = 64 * 1024

const JSON_HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }

/**
 * Who may use the desk: a process of this user that is not a command of a dsh-bash server, as the
 * kernel records the connection's other end; with `remoteAllowed` (the MCP HTTP server, which has
 * its token), also a client on another machine. Returns the refusal, or undefined.
 */
export function refusePeer(socket: Pick<Socket, 'localAddress' | 'localPort' | 'remoteAddress' | 'remotePort'>, remoteAllowed: boolean): string | undefined {
  const peer = findPeer(socket)
  if (!peer) return remoteAllowed && !isLoopbackAddress(socket.remoteAddress) ? undefined : replyRefusals.unknown
  const uid = process.getuid?.()
  if (uid !== undefined && peer.uid !== uid) return replyRefusals.otherUser(peer.uid)
  if (peer.pids.length === 0) return replyRefusals.unknown
  for (const pid of peer.pids) {
    const why = commandOfServer(pid)
    if (why) return replyRefusals.command(why)
  }
  return undefined
}

function isLoopbackAddress(address: string | undefined): boolean {
  return address === undefined || /^(::ffff:)?127\./.test(address) || address === '::1'
}

/**
 * Answers one request to the desk; the caller has authenticated it. Never logs or echoes a reply.
 */
export async function handleReplyRequest(desk: ReplyDesk, req: IncomingMessage, res: ServerResponse, remoteAllowed: boolean): Promise<void> {
  const refusal = refusePeer(req.socket, remoteAllowed)
  if (refusal) return json(res, 403, { error: refusal })
  const path = new URL(req.url ?? '/', 'http://localhost').pathname
  if (path === REPLY_PATH) {
    if (req.method !== 'GET') return json(res, 405, { error: 'method not allowed: GET lists the waiting questions' })
    return json(res, 200, { server: { pid: process.pid }, waiting: desk.list() })
  }
  const id = path.startsWith(`${REPLY_PATH}/`) ? decodeURIComponent(path.slice(REPLY_PATH.length + 1)) : undefined
  if (id === undefined || id === '' || id.includes('/')) return json(res, 404, { error: `not found: the reply desk is ${REPLY_PATH}` })
  if (req.method !== 'POST') return json(res, 405, { error: 'method not allowed: POST answers a question' })
  const answer = await readAnswer(req)
  if (typeof answer === 'string') return json(res, 400, { error: answer })
  try {
    return json(res, 200, await desk.answer(id, answer))
  } catch (error) {
    // Messages of the desk and of tool-bash's checks: they never hold the reply.
    return json(res, 409, { error: error instanceof Error ? error.message : String(error) })
  }
}

/** The answer in the body, or what is wrong with it. */
async function readAnswer(req: IncomingMessage): Promise<DeskAnswer | string> {
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) return 'bad request: expected a JSON body (Content-Type: application/json)'
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY) return `bad request: the body is larger than ${MAX_BODY} bytes`
    chunks.push(chunk)
  }
  let body: { action?: unknown; reply?: unknown }
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body
  } catch {
    return 'bad request: the body is not valid JSON'
  }
  if (body?.action === 'decline') return { action: 'decline' }
  if (body?.action !== 'send') return 'bad request: "action" must be "send" or "decline"'
  if (typeof body.reply !== 'string') return 'bad request: "reply" must be a string'
  // One line: a line break would type a second line into the program (a shell's next command).
  if (/[\r\n\0]/.test(body.reply)) return 'bad request: a reply is one line (no line break, no NUL)'
  return { action: 'send', reply: body.reply }
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, JSON_HEADERS)
  res.end(JSON.stringify(body))
}

/** A desk served on this machine's loopback. */
export interface ReplyEndpoint {
  /** 127.0.0.1:<port>. */
  port: number
  /** The file `dsh-bash reply` finds it by (removed by `close`). */
  file: string
  /** Stops serving and removes the file. Idempotent. */
  close(): Promise<void>
}

/**
 * Serves `desk` on 127.0.0.1 (a free port) for `dsh-bash reply` on this machine, and leaves its
 * address in `dir` (`replyDirectory()`: private, checked; created when missing) as
 * `reply-<pid>-<port>.json`, mode 0600: `{pid, port, key}`. Every request needs the key as bearer
 * token, a `Host` of 127.0.0.1:<port>, no `Origin` (no browser page), and a peer that is this
 * user's and not a command of a dsh-bash server (`refusePeer`).
 */
export async function serveReplyDesk(desk: ReplyDesk, options: { dir?: string } = {}): Promise<ReplyEndpoint> {
  const dir = options.dir ?? replyDirectory()
  checkPrivateDirectory(dir, true)
  const key = randomBytes(32).toString('base64url')
  const expected = digest(`Bearer ${key}`)
  let host = ''
  const server = createServer((req, res) => {
    if (req.headers.host !== host || req.headers.origin !== undefined) return json(res, 403, { error: 'forbidden: the reply desk takes requests from dsh-bash reply only' })
    if (!timingSafeEqual(digest(req.headers.authorization ?? ''), expected)) return json(res, 401, { error: 'unauthorized: the desk key is required' })
    handleReplyRequest(desk, req, res, false).catch((error: unknown) => {
      if (!res.headersSent) json(res, 500, { error: `internal error: ${error instanceof Error ? error.message : String(error)}` })
      else res.end()
    })
  })
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  server.unref()
  const port = (server.address() as AddressInfo).port
  host = `127.0.0.1:${port}`
  const file = join(dir, `reply-${process.pid}-${port}.json`)
  try {
    const fd = openSync(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    try {
      writeSync(fd, JSON.stringify({ pid: process.pid, port, key }))
    } finally {
      closeSync(fd)
    }
  } catch (error) {
    server.close()
    throw new Error(`cannot write the reply desk's address to ${file}: ${(error as Error).message}`)
  }
  const stop = desk.serve()
  let closing: Promise<void> | undefined
  return {
    port,
    file,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        stop()
        try {
          unlinkSync(file)
        } catch {
          // Already gone.
        }
        server.close(() => resolve())
        server.closeAllConnections()
      })),
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
