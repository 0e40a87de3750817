import type { ClientChannel, ExecOptions } from 'ssh2'
import { type ConnectionSettings, SshConnection } from './connection.js'
import { ControlAgent } from './control-agent.js'
import { sshErrors } from './errors.js'

/** Something held until `release()`. Releasing is idempotent: only the first call counts. */
export interface Lease {
  release(): void
}

/** A lease whose `release` runs `free` once. */
export function onceLease(free: () => void): Lease {
  let released = false
  return {
    release() {
      if (released) return
      released = true
      free()
    },
  }
}

/**
 * A session channel and a hold on the connection it lives on. The hold keeps an overflow connection
 * open after the channel closed (a command's control requests still need it) until `release()`,
 * which also closes the channel if it is still open. The channel's session slot itself is given
 * back when the channel closes. Never a way to change the pool's counts other than `release()`.
 */
export interface ChannelLease extends Lease {
  readonly channel: ClientChannel
  /** True while the connection is up (control requests can go over it); never true again once false. */
  readonly alive: boolean
  /** Calls `listener` once if the connection is lost while held; unsubscribed by `release()` (or the returned function). */
  onLost(listener: (reason: string) => void): () => void
  /**
   * The connection's control agent running `text`, started on first use; undefined when it cannot
   * run there (no free session slot, refused, connection gone): callers fall back to one-shot helpers.
   */
  controlAgent(text: string): Promise<ControlAgent | undefined>
}

/** The pool's record of one connection: every count lives here and is changed only by the pool. */
interface Pooled {
  readonly connection: SshConnection
  /** Session channels reserved or open on this connection. */
  sessions: number
  /** Session channels open on this connection (to learn the server's real capacity). */
  open: number
  /** Session channels allowed: `maxSessions` until the server refuses one. */
  capacity: number
  /** Leases not yet released (commands that still need the connection for control requests). */
  holders: number
  /** The control agent (see AGENT_SCRIPT), once asked for. */
  agent?: Promise<ControlAgent | undefined>
  /** True while the agent's channel is open (it holds one session slot). */
  agentOpen: boolean
  /** The server refused the agent's channel: use one-shot helpers on this connection. */
  agentRefused: boolean
}

/**
 * All connections to one host, and the only owner of their session slots: the first connection is
 * reused for every command; further ones are opened only while the first one has no free session
 * channel (sshd's MaxSessions) and closed when idle.
 */
export class ConnectionPool {
  private readonly connections: Pooled[] = []
  private closed = false

  constructor(private readonly settings: ConnectionSettings) {}

  get label(): string {
    return this.settings.label
  }

  /** True while at least one connection is up. */
  get connected(): boolean {
    return this.connections.some((p) => p.connection.state === 'ready')
  }

  /**
   * Opens a session channel running `text`, connecting (with retries and backoff) when needed;
   * `setup` attaches listeners synchronously (see SshConnection.exec). Rejects with an error naming
   * the host when no connection can be made. The caller releases the lease once.
   */
  async exec(text: string, setup: (lease: ChannelLease) => void, attempts?: number, options?: ExecOptions): Promise<ChannelLease> {
    let refusals = 0
    for (;;) {
      if (this.closed) throw sshErrors.poolClosed(this.label)
      const pooled = await this.reserve(attempts)
      let lease!: ChannelLease
      try {
        await this.openChannel(
          pooled,
          text,
          (channel) => {
            channel.once('close', () => this.releaseSlot(pooled))
            lease = this.lease(pooled, channel)
            try {
              setup(lease)
            } catch (error) {
              lease.release()
              throw error
            }
          },
          options,
        )
        return lease
      } catch (error) {
        const alive = pooled.connection.state === 'ready'
        // The channel opened (a refused open carries ssh2's numeric `reason`) but the server refused
        // the pty request (`PermitTTY no`, no free pty): not a session limit, and no retry helps.
        if (alive && options?.pty && typeof (error as { reason?: unknown }).reason !== 'number') {
          this.releaseSlot(pooled)
          throw sshErrors.ptyRefused(this.label, (error as Error).message)
        }
        if (alive) {
          // The server refused one more session on this connection (its MaxSessions is lower than
          // ours): remember the real capacity and use another connection.
          pooled.capacity = Math.max(1, Math.min(pooled.capacity, pooled.open))
        }
        this.releaseSlot(pooled)
        if (!alive) throw sshErrors.connectionLost(this.label)
        if (++refusals > 20) throw sshErrors.sessionRefused(this.label, (error as Error).message)
      }
    }
  }

  /** Opens a channel on a reserved slot, counting it as open until it closes. */
  private openChannel(pooled: Pooled, text: string, setup: (channel: ClientChannel) => void, options?: ExecOptions): Promise<ClientChannel> {
    return pooled.connection.exec(
      text,
      (channel) => {
        pooled.open++
        channel.once('close', () => {
          pooled.open--
        })
        setup(channel)
      },
      options,
    )
  }

  private lease(pooled: Pooled, channel: ClientChannel): ChannelLease {
    const { connection } = pooled
    const unsubscribes = new Set<() => void>()
    pooled.holders++
    const held = onceLease(() => {
      for (const unsubscribe of unsubscribes) unsubscribe()
      unsubscribes.clear()
      try {
        channel.close()
      } catch {
        // Already closed.
      }
      pooled.holders = Math.max(0, pooled.holders - 1)
      this.closeIfIdle(pooled)
    })
    return {
      channel,
      get alive() {
        return connection.state === 'ready'
      },
      onLost: (listener) => {
        const unsubscribe = connection.onLost(listener)
        unsubscribes.add(unsubscribe)
        return () => {
          unsubscribes.delete(unsubscribe)
          unsubscribe()
        }
      },
      controlAgent: (text) => this.agentFor(pooled, text),
      release: () => held.release(),
    }
  }

  private async reserve(attempts?: number): Promise<Pooled> {
    for (;;) {
      // Checked on every pass: a connection that `close()` ended while it was being awaited sends
      // this loop round again, and a new connection made then would outlive the pool (an sshd
      // session left behind after disposal, seen when a task's fresh wait raced the disposal).
      if (this.closed) throw sshErrors.poolClosed(this.label)
      let pooled = this.connections.find((p) => p.connection.state !== 'closed' && p.sessions < p.capacity)
      if (!pooled) {
        const connection = new SshConnection(attempts === undefined ? this.settings : { ...this.settings, connectAttempts: attempts })
        const created: Pooled = { connection, sessions: 0, open: 0, capacity: this.settings.maxSessions, holders: 0, agentOpen: false, agentRefused: false }
        this.connections.push(created)
        connection.onLost(() => this.forget(created))
        pooled = created
      }
      pooled.sessions++
      try {
        await pooled.connection.ready
      } catch (error) {
        pooled.sessions--
        this.forget(pooled)
        throw error
      }
      if (pooled.connection.state === 'ready') return pooled
      pooled.sessions--
      this.forget(pooled)
    }
  }

  /** The control agent of a connection (see ChannelLease.controlAgent). */
  private agentFor(pooled: Pooled, text: string): Promise<ControlAgent | undefined> {
    if (pooled.agent) return pooled.agent
    if (pooled.connection.state !== 'ready' || pooled.agentRefused || pooled.sessions >= pooled.capacity) {
      return Promise.resolve(undefined)
    }
    pooled.sessions++
    let agent: ControlAgent | undefined
    const started = this.openChannel(pooled, text, (channel) => {
      pooled.agentOpen = true
      agent = new ControlAgent(channel)
      channel.once('close', () => {
        pooled.agentOpen = false
        pooled.agent = undefined
        this.releaseSlot(pooled)
      })
    }).then(
      () => agent,
      () => {
        pooled.agentRefused = true
        pooled.agent = undefined
        this.releaseSlot(pooled)
        return undefined
      },
    )
    pooled.agent = started
    return started
  }

  private releaseSlot(pooled: Pooled): void {
    pooled.sessions = Math.max(0, pooled.sessions - 1)
    this.closeIfIdle(pooled)
  }

  /** Overflow connections are closed as soon as nothing uses them (their agent aside); the first one stays. */
  private closeIfIdle(pooled: Pooled): void {
    if (pooled.holders > 0 || pooled.sessions !== (pooled.agentOpen ? 1 : 0)) return
    if (this.connections.indexOf(pooled) > 0) {
      this.forget(pooled)
      pooled.connection.close()
    }
  }

  private forget(pooled: Pooled): void {
    const index = this.connections.indexOf(pooled)
    if (index >= 0) this.connections.splice(index, 1)
  }

  /** Closes every connection; later `exec` calls fail. */
  close(): void {
    this.closed = true
    for (const pooled of this.connections.splice(0)) pooled.connection.close()
  }
}
