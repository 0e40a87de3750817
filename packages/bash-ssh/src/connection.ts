import ssh2 from 'ssh2'
import type { Client as ClientType, ClientChannel, ConnectConfig, ExecOptions } from 'ssh2'
import type { HostKeyPolicy } from './hostkey.js'
import { HEADER_PREFIX } from './scripts.js'

const AGENT_HEADER = `${HEADER_PREFIX}agent`

/** What one host connection needs. */
export interface ConnectionSettings {
  label: string
  connect: Omit<ConnectConfig, 'hostVerifier' | 'algorithms'>
  policy: HostKeyPolicy
  /** Session channels allowed on one connection before another one is opened. */
  maxSessions: number
  connectAttempts: number
  reconnectDelayMs: number
  maxReconnectDelayMs: number
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref?.())

/** An error that no retry can fix (host key refused, authentication failed). */
class FatalConnectError extends Error {}

/** The message of a lost connection; the kit reports it on the task and rejects runs with it. */
export function lostMessage(label: string): string {
  return `connection to ${label} lost`
}

type LostListener = (reason: string) => void

/** One ssh2 client. Lost once it closes after being ready; never reused after that. */
export class SshConnection {
  state: 'connecting' | 'ready' | 'closed' = 'connecting'
  /** Session channels reserved or open on this connection. */
  sessions = 0
  /** Session channels open on this connection (counted by `exec`). */
  open = 0
  /** The control agent on this connection (see AGENT_SCRIPT), once asked for. */
  agent?: Promise<ControlAgent | undefined>
  /** True while the agent's channel is open (it holds one session slot). */
  agentOpen = false
  /** The server refused the agent's channel: use one-shot helpers on this connection. */
  agentRefused = false
  /** Commands launched on this connection and not yet released (they need it for control requests). */
  holders = 0
  capacity: number
  readonly ready: Promise<void>
  private client?: ClientType
  private readonly lostListeners = new Set<LostListener>()
  private closing = false

  constructor(private readonly settings: ConnectionSettings) {
    this.capacity = settings.maxSessions
    this.ready = this.connectWithRetry()
    // Callers that gave up on this connection must not see an unhandled rejection.
    this.ready.catch(() => {})
  }

  /** Called once if the connection is lost after it was ready (not when we close it). */
  onLost(listener: LostListener): () => void {
    this.lostListeners.add(listener)
    return () => this.lostListeners.delete(listener)
  }

  private async connectWithRetry(): Promise<void> {
    const { connectAttempts, reconnectDelayMs, maxReconnectDelayMs, label } = this.settings
    let lastError: Error | undefined
    for (let attempt = 0; attempt < connectAttempts; attempt++) {
      if (attempt > 0) await sleep(Math.min(reconnectDelayMs * 2 ** (attempt - 1), maxReconnectDelayMs))
      if (this.closing) break
      try {
        await this.connectOnce()
        return
      } catch (error) {
        lastError = error as Error
        if (error instanceof FatalConnectError) break
      }
    }
    this.state = 'closed'
    if (lastError instanceof FatalConnectError) throw lastError
    if (this.closing && !lastError) throw new Error(`connection to ${label} closed`)
    throw new Error(`cannot connect to ${label}: ${lastError?.message ?? 'closed'}`)
  }

  private connectOnce(): Promise<void> {
    const { policy, label } = this.settings
    return new Promise((resolve, reject) => {
      const client = new ssh2.Client()
      let refusal: string | undefined
      let settled = false
      let lastError: Error | undefined
      const fail = (error: Error) => {
        if (settled) return
        settled = true
        client.removeAllListeners('ready')
        client.on('error', () => {})
        client.end()
        reject(error)
      }
      client.once('ready', () => {
        if (settled) return
        settled = true
        this.client = client
        // Small request/response exchanges: Nagle's algorithm would add ~40 ms to each.
        client.setNoDelay(true)
        this.state = this.closing ? 'closed' : 'ready'
        if (this.closing) client.end()
        resolve()
      })
      client.on('error', (error: Error & { level?: string }) => {
        lastError = error
        if (!settled) {
          if (refusal) fail(new FatalConnectError(`host key verification failed for ${label}: ${refusal}`))
          else if (error.level === 'client-authentication') fail(new FatalConnectError(`authentication failed for ${label}: ${error.message}`))
          else fail(error)
        }
      })
      client.on('close', () => {
        if (!settled) {
          fail(refusal ? new FatalConnectError(`host key verification failed for ${label}: ${refusal}`) : (lastError ?? new Error('connection closed during the handshake')))
          return
        }
        if (this.client !== client) return
        const wasReady = this.state === 'ready'
        this.state = 'closed'
        if (wasReady && !this.closing) {
          const reason = lostMessage(label)
          for (const listener of [...this.lostListeners]) listener(reason)
        }
        this.lostListeners.clear()
      })
      const algorithms = policy.algorithms()
      try {
        client.connect({
          ...this.settings.connect,
          ...(algorithms ? { algorithms: { serverHostKey: algorithms as never } } : {}),
          hostVerifier: (key: Buffer) => {
            const verdict = policy.verify(key)
            if (!verdict.ok) refusal = verdict.reason
            return verdict.ok
          },
        })
      } catch (error) {
        fail(new FatalConnectError(`cannot connect to ${label}: ${(error as Error).message}`))
      }
    })
  }

  /**
   * Opens a session channel running `text` (the slot must be reserved). `setup` runs synchronously
   * in ssh2's callback: the command's output, exit status and close may arrive in the same packet
   * batch as the reply to the exec request, before any promise continuation could listen.
   * Rejects when the channel cannot be opened.
   */
  exec(text: string, setup: (channel: ClientChannel) => void, options?: ExecOptions): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      const client = this.client
      if (this.state !== 'ready' || !client) {
        reject(new Error(lostMessage(this.settings.label)))
        return
      }
      try {
        client.exec(text, options ?? {}, (error, channel) => {
          if (error) {
            reject(error)
            return
          }
          this.open++
          channel.once('close', () => {
            this.open--
          })
          try {
            setup(channel)
          } catch (setupError) {
            channel.close()
            reject(setupError as Error)
            return
          }
          resolve(channel)
        })
      } catch (error) {
        reject(error as Error)
      }
    })
  }

  /** Closes the connection (not a loss). */
  close(): void {
    this.closing = true
    if (this.state === 'ready') this.client?.end()
    this.state = 'closed'
  }
}

/** An open channel and the connection it lives on. */
export interface ExecHandle {
  channel: ClientChannel
  connection: SshConnection
}

/**
 * All connections to one host: the first one is reused for every command; further ones are opened
 * only while the first one has no free session channel (sshd's MaxSessions) and closed when idle.
 */
export class ConnectionPool {
  private readonly connections: SshConnection[] = []
  private closed = false

  constructor(private readonly settings: ConnectionSettings) {}

  get label(): string {
    return this.settings.label
  }

  /** True while at least one connection is up. */
  get connected(): boolean {
    return this.connections.some((c) => c.state === 'ready')
  }

  /**
   * Opens a session channel running `text`, connecting (with retries and backoff) when needed;
   * `setup` attaches listeners synchronously (see SshConnection.exec). Rejects with an error naming
   * the host when no connection can be made.
   */
  async exec(text: string, setup: (handle: ExecHandle) => void, attempts?: number, options?: ExecOptions): Promise<ExecHandle> {
    let refusals = 0
    for (;;) {
      if (this.closed) throw new Error(`the connection pool for ${this.label} is closed`)
      const connection = await this.reserve(attempts)
      try {
        const channel = await connection.exec(
          text,
          (channel) => {
            channel.once('close', () => this.releaseSlot(connection))
            setup({ channel, connection })
          },
          options,
        )
        return { channel, connection }
      } catch (error) {
        const alive = connection.state === 'ready'
        // The channel opened (a refused open carries ssh2's `reason` code) but the server refused
        // the pty request (`PermitTTY no`, no free pty): not a session limit, and no retry helps.
        if (alive && options?.pty && typeof (error as { reason?: unknown }).reason !== 'number') {
          this.releaseSlot(connection)
          throw new Error(`${this.label} refused a pseudo-terminal: ${(error as Error).message}`)
        }
        if (alive) {
          // The server refused one more session on this connection (its MaxSessions is lower than
          // ours): remember the real capacity and use another connection.
          connection.capacity = Math.max(1, Math.min(connection.capacity, connection.open))
        }
        this.releaseSlot(connection)
        if (!alive) throw new Error(lostMessage(this.label))
        if (++refusals > 20) throw new Error(`cannot open a session on ${this.label}: ${(error as Error).message}`)
      }
    }
  }

  private async reserve(attempts?: number): Promise<SshConnection> {
    for (;;) {
      let connection = this.connections.find((c) => c.state !== 'closed' && c.sessions < c.capacity)
      if (!connection) {
        connection = new SshConnection(attempts === undefined ? this.settings : { ...this.settings, connectAttempts: attempts })
        this.connections.push(connection)
        const created = connection
        created.onLost(() => this.forget(created))
      }
      connection.sessions++
      try {
        await connection.ready
      } catch (error) {
        connection.sessions--
        this.forget(connection)
        throw error
      }
      if (connection.state === 'ready') return connection
      connection.sessions--
      this.forget(connection)
    }
  }

  /**
   * The control agent of a connection, started on first use; undefined when it cannot run there
   * (no free session slot, refused, connection gone): callers fall back to one-shot helpers.
   */
  agentFor(connection: SshConnection, text: string): Promise<ControlAgent | undefined> {
    if (connection.agent) return connection.agent
    if (connection.state !== 'ready' || connection.agentRefused || connection.sessions >= connection.capacity) {
      return Promise.resolve(undefined)
    }
    connection.sessions++
    let agent: ControlAgent | undefined
    const started = connection
      .exec(text, (channel) => {
        connection.agentOpen = true
        agent = new ControlAgent(channel)
        channel.once('close', () => {
          connection.agentOpen = false
          connection.agent = undefined
          this.releaseSlot(connection)
        })
      })
      .then(
        () => agent,
        () => {
          connection.agentRefused = true
          connection.agent = undefined
          this.releaseSlot(connection)
          return undefined
        },
      )
    connection.agent = started
    return started
  }

  /** A command launched on `connection` keeps it open until `unhold`. */
  hold(connection: SshConnection): void {
    connection.holders++
  }

  unhold(connection: SshConnection): void {
    connection.holders = Math.max(0, connection.holders - 1)
    this.closeIfIdle(connection)
  }

  private releaseSlot(connection: SshConnection): void {
    connection.sessions = Math.max(0, connection.sessions - 1)
    this.closeIfIdle(connection)
  }

  /** Overflow connections are closed as soon as nothing uses them (their agent aside); the first one stays. */
  private closeIfIdle(connection: SshConnection): void {
    if (connection.holders > 0 || connection.sessions !== (connection.agentOpen ? 1 : 0)) return
    if (this.connections.indexOf(connection) > 0) {
      this.forget(connection)
      connection.close()
    }
  }

  private forget(connection: SshConnection): void {
    const index = this.connections.indexOf(connection)
    if (index >= 0) this.connections.splice(index, 1)
  }

  /** Closes every connection; later `exec` calls fail. */
  close(): void {
    this.closed = true
    for (const connection of this.connections.splice(0)) connection.close()
  }
}

/**
 * The client side of a control agent: numbered requests, one answer line each. An answer of
 * undefined means the agent's channel closed first (the caller decides whether the connection is
 * gone or falls back to a one-shot helper).
 */
export class ControlAgent {
  private readonly pending = new Map<number, (answer: string | undefined) => void>()
  private seq = 0
  private buffer = ''
  private closed = false
  /** False until the agent's first line: what a login shell prints before it is skipped. */
  private ready = false

  constructor(private readonly channel: ClientChannel) {
    channel.on('error', () => {})
    channel.stderr.on('data', () => {})
    channel.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8')
      let newline: number
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline)
        this.buffer = this.buffer.slice(newline + 1)
        if (!this.ready) {
          this.ready = line.endsWith(AGENT_HEADER)
          continue
        }
        const space = line.indexOf(' ')
        const id = Number(line.slice(0, space))
        const resolve = this.pending.get(id)
        if (!resolve) continue
        this.pending.delete(id)
        resolve(line.slice(space + 1))
      }
    })
    channel.once('close', () => {
      this.closed = true
      for (const resolve of this.pending.values()) resolve(undefined)
      this.pending.clear()
    })
  }

  request(op: string, pgid: number, marker: string, arg: number): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined)
    const id = ++this.seq
    return new Promise((resolve) => {
      this.pending.set(id, resolve)
      this.channel.write(`${id} ${op} ${pgid} ${marker} ${arg}\n`)
    })
  }
}
