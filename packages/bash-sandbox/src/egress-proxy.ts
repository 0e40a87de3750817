import { lookup } from 'node:dns/promises'
import { chmodSync, existsSync, unlinkSync } from 'node:fs'
import { createServer as createHttpServer, type IncomingMessage, request as httpRequest, type Server as HttpServer, type ServerResponse } from 'node:http'
import { connect, createServer, isIP, type Server, type Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { type EgressRuleSet, hostAddresses, namedExactly, normalizeHost, protectedAddress, refusal } from './egress-rules.js'

/**
 * The egress proxy on the host (proxy mode; see the README, "Egress by domain"): HTTP forward
 * proxy, HTTP CONNECT, and SOCKS5 CONNECT, one protocol sniffed from the first byte (5: SOCKS5),
 * built on node:http and node:net (why not a library: the checks must sit between the name and the
 * connection, on the address actually dialled; no proxy package we found lets a caller refuse by
 * resolved address without resolving twice).
 *
 * Each launch gets its own listener on a Unix socket in the executor's private directory, bound
 * into that launch's sandbox only, so that every connection is the launch's: its refusals are its
 * own (`deniedHosts`) and its rule sets (a session's narrower lists) apply. For every request the
 * proxy normalizes the host, checks it against every rule set (deny wins), resolves it itself
 * (`hosts` first, as `--add-host`; then the system resolver), drops the protected addresses
 * (`protectedAddress`) unless the host was named exactly or mapped by `hosts`, and connects to the
 * first address left, never to the name again (no second lookup to rebind). A refusal is a 403
 * (SOCKS5: reply 2) naming the rule; the command sees no route otherwise.
 */

export interface EgressSettings {
  /** The executor's lists. */
  rules: EgressRuleSet
  /** Names the proxy resolves to a fixed address (`--add-host NAME:IP`), normalized names. */
  hosts: Readonly<Record<string, string>>
  /** Resolves a name to its addresses (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<string[]>
  /** How long a connection to a destination may take to open (ms). */
  connectTimeoutMs?: number
}

/** Where a request goes, once allowed. */
interface Destination {
  address: string
  port: number
}

type Decision = { allowed: true; destination: Destination } | { allowed: false; status: 403 | 502; message: string; denied: boolean }

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

/** The proxy of one executor: rules, name mapping, and the listeners of the launches running now. */
export class EgressProxy {
  private readonly launches = new Set<ProxyLaunch>()

  constructor(readonly settings: EgressSettings) {}

  /**
   * Listens for one launch at `socketPath` (created now, mode 0600; it must not exist). `extra`
   * are the launch's own rule sets (a session's lists), checked after the executor's.
   */
  listen(socketPath: string, extra: readonly EgressRuleSet[] = []): ProxyLaunch {
    const launch = new ProxyLaunch(this, socketPath, [this.settings.rules, ...extra])
    this.launches.add(launch)
    void launch.closed.then(() => this.launches.delete(launch))
    return launch
  }

  /** Closes every launch's listener and connection. */
  close(): void {
    for (const launch of this.launches) launch.close()
  }

  /** The decision for `rawHost`:`port` under `sets`. */
  async decide(rawHost: string, port: number, sets: readonly EgressRuleSet[]): Promise<Decision> {
    const host = normalizeHost(rawHost)
    if (host === undefined) return { allowed: false, status: 403, message: `${JSON.stringify(rawHost)} is not a host name`, denied: false }
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { allowed: false, status: 403, message: `bad port ${port}`, denied: false }
    const refused = refusal(host, sets)
    if (refused) return { allowed: false, status: 403, message: `network access to ${host} denied: ${refused.reason}`, denied: true }
    const mapped = this.settings.hosts[host]
    let addresses: string[]
    if (mapped !== undefined) addresses = [mapped]
    else if (isIP(host)) addresses = [host]
    else {
      try {
        addresses = await (this.settings.resolve ?? systemResolve)(host)
      } catch (error) {
        return { allowed: false, status: 502, message: `cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, denied: false }
      }
    }
    // A protected address only where the rules or --add-host name it; never by a DNS answer.
    const explicit = mapped !== undefined || (isIP(host) !== 0 && namedExactly(host, sets))
    const own = hostAddresses()
    const usable = explicit ? addresses : addresses.filter((address) => protectedAddress(address, own) === undefined)
    if (usable.length === 0) {
      const why = addresses.map((address) => `${address}: ${protectedAddress(address, own)}`).join(', ')
      return {
        allowed: false,
        status: 403,
        message: `network access to ${host} denied: it resolves only to protected addresses (${why}); only an exact allow rule for the address or --add-host may lead there`,
        denied: true,
      }
    }
    return { allowed: true, destination: { address: usable[0], port } }
  }
}

async function systemResolve(host: string): Promise<string[]> {
  const answers = await lookup(host, { all: true, verbatim: true })
  return answers.map((answer) => answer.address)
}

/** One launch's listener: its connections, and the hosts it was refused. */
export class ProxyLaunch {
  /** Hosts refused during this launch (normalized), each once, in order. */
  readonly deniedHosts: string[] = []
  readonly closed: Promise<void>
  private readonly server: Server
  private readonly http: HttpServer
  private readonly sockets = new Set<Duplex>()
  private done = false

  constructor(
    private readonly proxy: EgressProxy,
    readonly socketPath: string,
    private readonly sets: readonly EgressRuleSet[],
  ) {
    this.http = createHttpServer({ requestTimeout: 0, keepAliveTimeout: 5_000 })
    this.http.on('request', (req: IncomingMessage, res: ServerResponse) => void this.forward(req, res))
    this.http.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.tunnel(req, socket, head))
    this.http.on('clientError', (_error, socket: Duplex) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n')
      else socket.destroy()
    })
    this.server = createServer((socket) => this.accept(socket))
    this.server.on('error', () => this.close())
    // Synchronous for a Unix socket: the file exists when this returns (checked below).
    this.server.listen(socketPath)
    if (!existsSync(socketPath)) {
      this.server.close()
      throw new Error(`the egress proxy cannot listen at ${socketPath}`)
    }
    chmodSync(socketPath, 0o600)
    this.closed = new Promise((resolve) => this.server.once('close', () => resolve()))
  }

  /** Stops listening, ends every connection, removes the socket file. */
  close(): void {
    if (this.done) return
    this.done = true
    this.server.close()
    for (const socket of this.sockets) socket.destroy()
    try {
      unlinkSync(this.socketPath)
    } catch {
      // Removed already.
    }
  }

  private track(socket: Duplex): void {
    this.sockets.add(socket)
    socket.once('close', () => this.sockets.delete(socket))
    socket.on('error', () => socket.destroy())
  }

  private deny(host: string): void {
    const name = normalizeHost(host) ?? host
    if (!this.deniedHosts.includes(name)) this.deniedHosts.push(name)
  }

  /** The first byte says which protocol: 5 is SOCKS5, anything else HTTP. */
  private accept(socket: Socket): void {
    this.track(socket)
    socket.once('data', (chunk: Buffer) => {
      socket.pause()
      if (chunk[0] === 5) {
        void this.socks(socket, chunk)
        return
      }
      socket.unshift(chunk)
      this.http.emit('connection', socket)
      socket.resume()
    })
  }

  private async decide(host: string, port: number): Promise<Decision> {
    const decision = await this.proxy.decide(host, port, this.sets)
    if (!decision.allowed && decision.denied) this.deny(host)
    return decision
  }

  /** A connection to `destination`, or the error (bounded by the connect timeout). */
  private dial(destination: Destination): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const upstream = connect({ host: destination.address, port: destination.port })
      const timer = setTimeout(() => upstream.destroy(new Error('timed out')), this.proxy.settings.connectTimeoutMs ?? 30_000)
      upstream.once('connect', () => {
        clearTimeout(timer)
        upstream.removeAllListeners('error')
        this.track(upstream)
        resolve(upstream)
      })
      upstream.once('error', (error) => {
        clearTimeout(timer)
        reject(error)
      })
    })
  }

  /** CONNECT host:port: a tunnel after the checks. */
  private async tunnel(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const target = parseAuthority(req.url ?? '')
    if (!target) return refuseRaw(socket, 400, `CONNECT needs host:port, got ${JSON.stringify(req.url)}`)
    const decision = await this.decide(target.host, target.port)
    if (!decision.allowed) return refuseRaw(socket, decision.status, decision.message)
    let upstream: Socket
    try {
      upstream = await this.dial(decision.destination)
    } catch (error) {
      return refuseRaw(socket, 502, `cannot connect to ${target.host}:${target.port}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
    }
    if (socket.destroyed) return void upstream.destroy()
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length > 0) upstream.write(head)
    splice(socket, upstream)
  }

  /** A forward-proxy request (`GET http://host/path`; or origin-form with a Host header). */
  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const target = forwardTarget(req)
    if ('error' in target) return refuseResponse(res, 400, target.error)
    const decision = await this.decide(target.host, target.port)
    if (!decision.allowed) return refuseResponse(res, decision.status, decision.message)
    const headers = withoutHopByHop(req.rawHeaders)
    const upstream = httpRequest({
      host: decision.destination.address,
      port: decision.destination.port,
      method: req.method,
      path: target.path,
      headers,
      setHost: false,
      agent: false,
    })
    upstream.on('socket', (socket) => this.track(socket))
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.rawHeaders))
      answer.pipe(res)
    })
    upstream.on('error', (error) => {
      if (!res.headersSent) refuseResponse(res, 502, `cannot reach ${target.host}:${target.port}: ${(error as NodeJS.ErrnoException).code ?? error.message}`)
      else res.destroy()
    })
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  }

  /** SOCKS5 (RFC 1928): no authentication, CONNECT only. */
  private async socks(socket: Socket, first: Buffer): Promise<void> {
    const reader = new ByteReader(socket, first)
    try {
      const [version, count] = await reader.take(2)
      const methods = await reader.take(count)
      if (version !== 5 || !methods.includes(0)) {
        socket.end(Buffer.from([5, 0xff]))
        return
      }
      socket.write(Buffer.from([5, 0]))
      const [, command, , type] = await reader.take(4)
      let host: string
      if (type === 1) host = [...(await reader.take(4))].join('.')
      else if (type === 3) host = (await reader.take((await reader.take(1))[0])).toString('latin1')
      else if (type === 4) {
        const bytes = await reader.take(16)
        host = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16)).join(':')
      } else return void socket.end(socksReply(8))
      const port = (await reader.take(2)).readUInt16BE(0)
      if (command !== 1) return void socket.end(socksReply(7))
      const decision = await this.decide(host, port)
      if (!decision.allowed) return void socket.end(socksReply(decision.status === 403 ? 2 : 4))
      let upstream: Socket
      try {
        upstream = await this.dial(decision.destination)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        return void socket.end(socksReply(code === 'ECONNREFUSED' ? 5 : code === 'ENETUNREACH' ? 3 : 4))
      }
      if (socket.destroyed) return void upstream.destroy()
      socket.write(socksReply(0))
      const rest = reader.rest()
      if (rest.length > 0) upstream.write(rest)
      splice(socket, upstream)
    } catch {
      socket.destroy()
    }
  }
}

/** Both directions, each ending the other's writing when it ends; an error ends both. */
function splice(a: Duplex, b: Duplex): void {
  a.pipe(b)
  b.pipe(a)
  a.resume()
  const end = () => {
    a.destroy()
    b.destroy()
  }
  a.once('close', end)
  b.once('close', end)
}

function socksReply(code: number): Buffer {
  return Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0])
}

function refuseRaw(socket: Duplex, status: number, message: string): void {
  const body = `dsh-bash sandbox proxy: ${message}\n`
  socket.end(`HTTP/1.1 ${status} ${status === 403 ? 'Forbidden' : status === 400 ? 'Bad Request' : 'Bad Gateway'}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

function refuseResponse(res: ServerResponse, status: number, message: string): void {
  const body = `dsh-bash sandbox proxy: ${message}\n`
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' })
  res.end(body)
}

/** `host:port` of CONNECT (`[v6]:port` for IPv6). */
function parseAuthority(text: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+):(\d{1,5})$/.exec(text)
  return match ? { host: match[1], port: Number(match[2]) } : undefined
}

/** Where a forward request goes: its absolute URL (http only), else its Host header. */
function forwardTarget(req: IncomingMessage): { host: string; port: number; path: string } | { error: string } {
  const url = req.url ?? ''
  const hostHeader = req.headers.host
  if (url.startsWith('/')) {
    if (!hostHeader) return { error: 'a request without a host' }
    const authority = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/]+)(?::(\d{1,5}))?$/.exec(hostHeader)
    if (!authority) return { error: `a bad Host header ${JSON.stringify(hostHeader)}` }
    return { host: authority[1], port: authority[2] ? Number(authority[2]) : 80, path: url }
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return { error: `a bad request target ${JSON.stringify(url)}` }
  }
  if (parsed.protocol !== 'http:') return { error: `only http:// is forwarded (use CONNECT for ${parsed.protocol}//)` }
  // The Host header must name the same host: the host checked is the host that receives the request.
  if (hostHeader !== undefined && normalizeHost(hostHeader.replace(/:\d+$/, '')) !== normalizeHost(parsed.hostname)) {
    return { error: `the Host header (${hostHeader}) does not name the request's host (${parsed.hostname})` }
  }
  return { host: parsed.hostname, port: parsed.port ? Number(parsed.port) : 80, path: `${parsed.pathname}${parsed.search}` }
}

/** Raw headers (name, value, …) without the hop-by-hop ones and those `Connection` names. */
function withoutHopByHop(raw: string[]): string[] {
  const named = new Set(HOP_BY_HOP)
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].toLowerCase() === 'connection') for (const token of raw[i + 1].split(',')) named.add(token.trim().toLowerCase())
  }
  const kept: string[] = []
  for (let i = 0; i < raw.length; i += 2) if (!named.has(raw[i].toLowerCase())) kept.push(raw[i], raw[i + 1])
  return kept
}

/** Reads exact byte counts from a socket (SOCKS5's framing). */
class ByteReader {
  private buffer: Buffer
  private waiting?: () => void

  constructor(
    private readonly socket: Socket,
    first: Buffer,
  ) {
    this.buffer = first
    socket.on('data', this.onData)
    socket.once('close', () => this.waiting?.())
    socket.resume()
  }

  private readonly onData = (chunk: Buffer) => {
    this.buffer = Buffer.concat([this.buffer, chunk])
    if (this.buffer.length > 1024) this.socket.destroy()
    this.waiting?.()
  }

  async take(count: number): Promise<Buffer> {
    while (this.buffer.length < count) {
      if (this.socket.destroyed || this.socket.readableEnded) throw new Error('closed')
      await new Promise<void>((resolve) => (this.waiting = resolve))
      this.waiting = undefined
    }
    const taken = this.buffer.subarray(0, count)
    this.buffer = this.buffer.subarray(count)
    return taken
  }

  /** What arrived after the handshake; the socket is handed back paused. */
  rest(): Buffer {
    this.socket.off('data', this.onData)
    this.socket.pause()
    const rest = this.buffer
    this.buffer = Buffer.alloc(0)
    return rest
  }
}
