/**
 * A lean Docker Engine API client over `node:http` (Docker and Podman's compatible service alike).
 * It does the few calls the executor needs: JSON requests, and "hijacked" attach/exec streams
 * (`Upgrade: tcp`, then the raw connection carries stdin one way and the engine's multiplexed
 * stdout/stderr frames the other way).
 *
 * Why not dockerode: it brings 56 packages (with a native build through ssh2/cpu-features) for
 * these eight endpoints; a call through this client costs the same (the engine's own work dominates).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { Socket } from 'node:net'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { Duplex, PassThrough, type Readable } from 'node:stream'
import { engineErrors } from './errors.js'

/** Where the engine listens. */
export type EngineAddress =
  | { kind: 'unix'; socketPath: string; url: string }
  | { kind: 'tcp'; host: string; port: number; url: string; /** `https://`: TLS whatever the environment says. */ tls?: true }
  /** `ssh://[user@]host[:port]`: every connection is `ssh … docker system dial-stdio` (Docker's own way). */
  | { kind: 'ssh'; host: string; user?: string; port?: number; url: string }

/**
 * TLS settings of a `tcp://` engine (Docker's `--tlsverify` conventions). `ca`, `cert` and `key`
 * are PEM texts; without `ca` the system's CAs are used; without `cert`/`key` no client
 * certificate is sent. `verify: false` encrypts without checking the server's certificate
 * (`DOCKER_TLS=1` without `DOCKER_TLS_VERIFY`): never the default.
 */
export interface EngineTls {
  ca?: string
  cert?: string
  key?: string
  verify: boolean
}

export const DEFAULT_ENGINE_URL = 'unix:///var/run/docker.sock'

/**
 * Parses an engine URL with `DOCKER_HOST` conventions: `unix:///path/to/socket`, `tcp://host:port`
 * (plain HTTP, or TLS with `tls`/the environment; `http://` is a synonym), `https://host:port`
 * (always TLS), `ssh://[user@]host[:port]` (through `ssh … docker system dial-stdio`). `npipe://` and
 * `fd://` are refused with an error saying they are not supported.
 */
export function parseEngineUrl(url: string): EngineAddress {
  if (typeof url !== 'string' || url.trim() === '') throw engineErrors.badUrl(String(url))
  if (url.startsWith('unix://')) {
    const socketPath = url.slice('unix://'.length)
    if (!socketPath.startsWith('/')) throw engineErrors.badUrl(url)
    return { kind: 'unix', socketPath, url }
  }
  if (url.startsWith('/')) return { kind: 'unix', socketPath: url, url: `unix://${url}` }
  const match = /^(tcp|http|https):\/\/(\[[0-9a-fA-F:.]+\]|[^:/[\]\s]+)(?::(\d{1,5}))?\/?$/.exec(url)
  if (match) {
    const secure = match[1] === 'https'
    const port = match[3] === undefined ? (secure ? 2376 : 2375) : Number(match[3])
    if (port < 1 || port > 65535) throw engineErrors.badUrl(url)
    const host = match[2].startsWith('[') ? match[2].slice(1, -1) : match[2]
    return secure ? { kind: 'tcp', host, port, url, tls: true } : { kind: 'tcp', host, port, url }
  }
  const ssh = /^ssh:\/\/(?:([^@/\s:]+)@)?(\[[0-9a-fA-F:.]+\]|[^:/@[\]\s]+)(?::(\d{1,5}))?\/?$/.exec(url)
  if (ssh) {
    const port = ssh[3] === undefined ? undefined : Number(ssh[3])
    if (port !== undefined && (port < 1 || port > 65535)) throw engineErrors.badUrl(url)
    const host = ssh[2].startsWith('[') ? ssh[2].slice(1, -1) : ssh[2]
    return { kind: 'ssh', host, url, ...(ssh[1] ? { user: ssh[1] } : {}), ...(port !== undefined ? { port } : {}) }
  }
  if (/^(npipe|fd):\/\//.test(url)) throw engineErrors.unsupportedUrl(url)
  throw engineErrors.badUrl(url)
}

/** The engine URL from the environment: `DOCKER_HOST`, else the local socket. */
export function engineUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.DOCKER_HOST && env.DOCKER_HOST !== '' ? env.DOCKER_HOST : DEFAULT_ENGINE_URL
}

/**
 * TLS settings from files, Docker's layout: `ca.pem`, `cert.pem`, `key.pem` in `certPath` (each
 * optional but cert and key go together). A file that exists but cannot be read is an error.
 */
export function loadEngineTls(certPath: string, verify: boolean): EngineTls {
  const read = (name: string) => {
    const path = join(certPath, name)
    if (!existsSync(path)) return undefined
    try {
      return readFileSync(path, 'utf8')
    } catch (error) {
      throw engineErrors.tlsFile(path, (error as Error).message)
    }
  }
  const tls: EngineTls = { verify }
  const ca = read('ca.pem')
  const cert = read('cert.pem')
  const key = read('key.pem')
  if ((cert === undefined) !== (key === undefined)) throw engineErrors.tlsFile(join(certPath, cert === undefined ? 'cert.pem' : 'key.pem'), 'missing (cert.pem and key.pem go together)')
  if (ca !== undefined) tls.ca = ca
  if (cert !== undefined && key !== undefined) Object.assign(tls, { cert, key })
  return tls
}

/**
 * The Docker CLI's TLS environment: `DOCKER_TLS_VERIFY` (non-empty, not `0`) → TLS checking the
 * server against `$DOCKER_CERT_PATH/ca.pem` (default `~/.docker`) with the client certificate there;
 * `DOCKER_TLS` alone → TLS without checking. Undefined: plain.
 */
export function engineTlsFromEnv(env: NodeJS.ProcessEnv = process.env): EngineTls | undefined {
  const on = (value: string | undefined) => value !== undefined && value !== '' && value !== '0'
  const verify = on(env.DOCKER_TLS_VERIFY)
  if (!verify && !on(env.DOCKER_TLS)) return undefined
  return loadEngineTls(env.DOCKER_CERT_PATH && env.DOCKER_CERT_PATH !== '' ? env.DOCKER_CERT_PATH : join(homedir(), '.docker'), verify)
}

/** An error answer of the engine: its HTTP status and message. */
export class EngineError extends Error {
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
  /** The TLS settings in use (`tcp://` with TLS, `https://`); undefined: plain HTTP or a socket. */
  readonly tls?: EngineTls
  private readonly agent: http.Agent
  private readonly transport: typeof http | typeof https

  /**
   * @param tls for `tcp://`: TLS settings (see `engineTlsFromEnv`); ignored for `unix://`. An
   *   `https://` URL without them uses TLS checking the server against the system's CAs.
   */
  constructor(url: string, tls?: EngineTls, options: { sshArgs?: readonly string[] } = {}) {
    this.address = parseEngineUrl(url)
    if (this.address.kind === 'tcp' && (tls || this.address.tls)) this.tls = tls ?? { verify: true }
    this.transport = this.tls ? https : http
    this.sshArgs = options.sshArgs ?? []
    // Keep-alive: the JSON calls of one session reuse connections (create, start, exec, inspect).
    if (this.tls) this.agent = new https.Agent({ keepAlive: true, maxSockets: 16, ...this.tlsOptions() })
    else if (this.address.kind === 'ssh') {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
      // Each pooled connection is one ssh process (as the Docker CLI does).
      ;(agent as unknown as { createConnection: () => Duplex }).createConnection = () => this.sshConnection()
      this.agent = agent
    } else this.agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  }

  /** Extra `ssh` arguments (`-i KEY`, `-o UserKnownHostsFile=…`) for `ssh://` engines. */
  private readonly sshArgs: readonly string[]
  private readonly sshChildren = new Set<ChildProcess>()

  /**
   * A connection to an `ssh://` engine: `ssh [-l user] [-p port] ARGS -- host docker system
   * dial-stdio`, its stdin/stdout as the socket. Host keys are checked by ssh as configured
   * (BatchMode: never a prompt). Closing the connection ends the ssh process.
   */
  private sshConnection(): Duplex {
    const a = this.address as Extract<EngineAddress, { kind: 'ssh' }>
    const args = ['-o', 'BatchMode=yes', ...(a.user ? ['-l', a.user] : []), ...(a.port ? ['-p', String(a.port)] : []), ...this.sshArgs, '--', a.host, 'docker', 'system', 'dial-stdio']
    const child = spawn('ssh', args, { stdio: ['pipe', 'pipe', 'pipe'] })
    this.sshChildren.add(child)
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)))
    // The readable side ends only once ssh is gone: a failure (host key, auth) then errors the
    // connection with ssh's own words instead of a bare "socket hang up".
    const readable = new PassThrough()
    child.stdout!.pipe(readable, { end: false })
    const socket = Duplex.from({ readable, writable: child.stdin! }) as Duplex & Record<string, unknown>
    // What node:http and the keep-alive agent call on a net.Socket; meaningless over a pipe.
    for (const name of ['setNoDelay', 'setKeepAlive', 'setTimeout', 'ref', 'unref']) socket[name] = () => socket
    child.stdin!.on('error', () => {})
    child.on('error', (error) => socket.destroy(error))
    child.on('close', (code) => {
      this.sshChildren.delete(child)
      const why = stderr.replace(/\r/g, '').trim().split('\n').filter(Boolean).slice(-1)[0] ?? ''
      if (code !== 0 && code !== null && !socket.destroyed) socket.destroy(engineErrors.ssh(code, why))
      else readable.end()
    })
    socket.on('close', () => {
      if (child.exitCode === null) child.kill()
    })
    return socket
  }

  private tlsOptions(): https.AgentOptions {
    const tls = this.tls!
    return { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.verify }
  }

  /** A JSON request; resolves with the parsed body (or undefined for an empty one); non-2xx rejects with EngineError. */
  async request<T = unknown>(method: string, path: string, body?: unknown, timeoutMs = 60_000): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
    return new Promise<T>((resolve, reject) => {
      const req = this.transport.request(
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
   * `PUT /containers/<id>/archive?path=<dir>`: the engine extracts a tar stream into the container
   * (as root, with the entries' owners and modes; missing parent directories are created root-owned).
   * Resolves when the engine has answered 2xx; rejects with EngineError otherwise.
   */
  putArchive(id: string, dir: string, tar: Readable, timeoutMs = 600_000): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const path = `/containers/${id}/archive?path=${encodeURIComponent(dir)}`
      const req = this.transport.request(
        { ...this.target(), agent: this.agent, method: 'PUT', path, headers: { 'content-type': 'application/x-tar' }, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (chunk: Buffer) => chunks.push(chunk))
          res.on('error', (error) => reject(this.wrap(error)))
          res.on('end', () => {
            const status = res.statusCode ?? 0
            if (status >= 200 && status < 300) return resolve()
            let message = Buffer.concat(chunks).toString('utf8').trim()
            try {
              message = (JSON.parse(message) as { message?: string }).message ?? message
            } catch {
              // Raw text.
            }
            reject(new EngineError(status, `PUT /containers/{id}/archive: ${status} ${message}`))
          })
        },
      )
      req.on('timeout', () => req.destroy(engineErrors.timeout(this.address.url, 'PUT /containers/{id}/archive')))
      req.on('error', (error) => reject(this.wrap(error)))
      tar.on('error', (error) => req.destroy(error))
      tar.pipe(req)
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
      const req = this.transport.request({
        ...this.target(),
        ...(this.tls ? this.tlsOptions() : {}),
        // A connection of its own: it is never returned to a pool (over ssh: a process of its own;
        // node:http uses createConnection only when no agent is given at all).
        ...(this.address.kind === 'ssh' ? { createConnection: () => this.sshConnection() as unknown as Socket, agent: undefined } : { agent: false }),
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

  /** Closes idle keep-alive connections (and ends their ssh processes). */
  close(): void {
    this.agent.destroy()
    for (const child of this.sshChildren) if (child.exitCode === null) child.kill()
  }

  private target(): http.RequestOptions {
    if (this.address.kind === 'ssh') return { host: 'docker' }
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
