/**
 * A lean Docker Engine API client over `node:http` (Docker and Podman's compatible service alike).
 * It does the few calls the executor needs: JSON requests, and "hijacked" attach/exec streams
 * (`Upgrade: tcp`, then the raw connection carries stdin one way and the engine's multiplexed
 * stdout/stderr frames the other way).
 *
 * Why not dockerode: it brings 56 packages (with a native build through ssh2/cpu-features) for
 * these eight endpoints; a call through this client costs the same (the engine's own work dominates).
 */
import http from 'node:http'
import type { Socket } from 'node:net'
import { Duplex, PassThrough } from 'node:stream'
import { CONTAINER_ERROR, engineErrors } from './errors.js'

/** Where the engine listens. */
export type EngineAddress = { kind: 'unix'; socketPath: string; url: string } | { kind: 'tcp'; host: string; port: number; url: string }

export const DEFAULT_ENGINE_URL = 'unix:///var/run/docker.sock'

/**
 * Parses an engine URL with `DOCKER_HOST` conventions: `unix:///path/to/socket`, `tcp://host:port`
 * (plain HTTP; `http://` is accepted as a synonym). TLS (`DOCKER_TLS_VERIFY`, `https://`) and
 * `ssh://` are refused with an error saying they are not supported yet.
 */
export function parseEngineUrl(url: string): EngineAddress {
  if (typeof url !== 'string' || url.trim() === '') throw engineErrors.badUrl(String(url))
  if (url.startsWith('unix://')) {
    const socketPath = url.slice('unix://'.length)
    if (!socketPath.startsWith('/')) throw engineErrors.badUrl(url)
    return { kind: 'unix', socketPath, url }
  }
  if (url.startsWith('/')) return { kind: 'unix', socketPath: url, url: `unix://${url}` }
  const match = /^(tcp|http):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]\s]+)(?::(\d{1,5}))?\/?$/.exec(url)
  if (match) {
    const port = match[3] === undefined ? 2375 : Number(match[3])
    if (port < 1 || port > 65535) throw engineErrors.badUrl(url)
    const host = match[2].startsWith('[') ? match[2].slice(1, -1) : match[2]
    return { kind: 'tcp', host, port, url }
  }
  if (/^(ssh|https|npipe|fd):\/\//.test(url)) throw engineErrors.unsupportedUrl(url)
  throw engineErrors.badUrl(url)
}

/** The engine URL from the environment: `DOCKER_HOST`, else the local socket. TLS settings are refused. */
export function engineUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  if (env.DOCKER_TLS_VERIFY && env.DOCKER_TLS_VERIFY !== '0') throw engineErrors.unsupportedUrl(`${env.DOCKER_HOST ?? ''} with DOCKER_TLS_VERIFY`)
  return env.DOCKER_HOST && env.DOCKER_HOST !== '' ? env.DOCKER_HOST : DEFAULT_ENGINE_URL
}

/** An error answer of the engine: its HTTP status and message. */
export class EngineError extends Error {
  /** Always CONTAINER_ERROR.engineStatus; `status` tells which answer. */
  readonly code = CONTAINER_ERROR.engineStatus
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

/** A hijacked connection: `stdin` goes to the process; `stdout`/`stderr` are demultiplexed. */
export interface EngineStream {
  /** Writable side: the process's stdin. `end()` half-closes the connection (the process sees EOF). */
  readonly stdin: Duplex
  readonly stdout: PassThrough
  readonly stderr: PassThrough
  /** Resolves once the connection is closed (by either side). Never rejects. */
  readonly closed: Promise<void>
  /** Closes the connection at once. */
  destroy(): void
}

export class EngineClient {
  readonly address: EngineAddress
  private readonly agent: http.Agent

  constructor(url: string) {
    this.address = parseEngineUrl(url)
    // Keep-alive: the JSON calls of one session reuse connections (create, start, exec, inspect).
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  }

  /** A JSON request; resolves with the parsed body (or undefined for an empty one); non-2xx rejects with EngineError. */
  async request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    return new Promise<T>((resolve, reject) => {
      const req = http.request(
        {
          ...this.target(),
          agent: this.agent,
          method,
          path,
          headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('error', (error) => reject(this.wrap(error)))
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8')
            const status = res.statusCode ?? 0
            if (status < 200 || status >= 300) {
              let message = text.trim()
              try {
                message = (JSON.parse(text) as { message?: string }).message ?? message
              } catch {
                // Not JSON: the raw text is the message.
              }
              reject(new EngineError(status, `${method} ${path.split('?')[0]}: ${status} ${message}`))
              return
            }
            if (text.trim() === '') return resolve(undefined as T)
            try {
              resolve(JSON.parse(text) as T)
            } catch {
              resolve(text as T)
            }
          })
        },
      )
      req.on('timeout', () => req.destroy(engineErrors.timeout(this.address.url, `${method} ${path.split('?')[0]}`)))
      req.on('error', (error) => reject(this.wrap(error)))
      req.end(payload)
    })
  }

  /**
   * A hijacked stream (`POST /containers/<id>/attach` or `POST /exec/<id>/start`): the engine
   * answers `101 Switching Protocols`, then the socket carries stdin one way and 8-byte framed
   * stdout/stderr the other (no TTY).
   */
  hijack(path: string, body?: unknown): Promise<EngineStream> {
    const payload = Buffer.from(body === undefined ? '' : JSON.stringify(body))
    return new Promise<EngineStream>((resolve, reject) => {
      const req = http.request({
        ...this.target(),
        // A connection of its own: it is never returned to a pool.
        agent: false,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': payload.length, connection: 'Upgrade', upgrade: 'tcp' },
      })
      req.on('upgrade', (_res, socket: Socket, head: Buffer) => resolve(demultiplexed(socket, head)))
      req.on('response', (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          let message = Buffer.concat(chunks).toString('utf8').trim()
          try {
            message = (JSON.parse(message) as { message?: string }).message ?? message
          } catch {
            // Raw text.
          }
          reject(new EngineError(res.statusCode ?? 0, `POST ${path.split('?')[0]}: ${res.statusCode} ${message}`))
        })
      })
      req.on('error', (error) => reject(this.wrap(error)))
      req.end(payload)
    })
  }

  /** Closes idle keep-alive connections. */
  close(): void {
    this.agent.destroy()
  }

  private target(): http.RequestOptions {
    return this.address.kind === 'unix' ? { socketPath: this.address.socketPath } : { host: this.address.host, port: this.address.port }
  }

  private wrap(error: Error): Error {
    if (error instanceof EngineError) return error
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ECONNREFUSED' || code === 'EACCES') return engineErrors.unreachable(this.address.url, `${code}`)
    return engineErrors.unreachable(this.address.url, error.message)
  }
}

/**
 * Splits the engine's multiplexed stream: frames of `[stream, 0, 0, 0, size (u32 BE)]` + payload,
 * stream 1 = stdout, 2 = stderr (0 = stdin echo, ignored).
 */
function demultiplexed(socket: Socket, head: Buffer): EngineStream {
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  let pending: Buffer = head.length > 0 ? Buffer.from(head) : Buffer.alloc(0)
  let resolveClosed!: () => void
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve))
  socket.setNoDelay(true)
  const parse = () => {
    while (pending.length >= 8) {
      const size = pending.readUInt32BE(4)
      if (pending.length < 8 + size) return
      const kind = pending[0]
      const data = pending.subarray(8, 8 + size)
      pending = pending.subarray(8 + size)
      if (kind === 2) stderr.write(data)
      else if (kind === 1) stdout.write(data)
    }
  }
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    parse()
  })
  const end = () => {
    stdout.end()
    stderr.end()
    resolveClosed()
  }
  socket.on('error', () => {})
  socket.once('close', end)
  socket.once('end', () => socket.end())
  parse()
  return { stdin: socket, stdout, stderr, closed, destroy: () => socket.destroy() }
}
