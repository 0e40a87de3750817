import type { Context, Logger } from 'cordis'
import { pluginTimer, type BashExecSpec } from '@deepseek-ai/dsh-bash'
import { DelegatingCommand, type LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { type AgentLaunchedCommand, type AgentSession, type EmptyWaitOptions, launchThroughAgent } from '@deepseek-ai/dsh-bash-agent'
import { SshAgentSession } from './agent-session.js'
import type { ConnectionSettings } from './connection.js'
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

/** What a launch on a host needs besides the spec. */
export interface HostLaunch {
  /** Unique per command: inherited by every process it starts, so escapees are found. */
  marker: string
  /** The kit's id of the launch (`bash-3`, `run-2`): how log lines name the command. Never sent to the host. */
  name: string
  /** See EmptyWaitOptions. */
  wait: EmptyWaitOptions
}

/**
 * One remote machine: its connection and the agent serving it (one at a time, made on the first
 * command and again after a loss), how busy it is (for pinning), and the markers of commands whose
 * connection was lost: the agent on the host kills them when its stdin closes, and once the host
 * answers again a new agent sweeps whatever a silent loss left (its `sweep` op, by marker).
 */
export class SshHost {
  private current?: Promise<SshAgentSession>
  private _active = 0
  /** Markers of commands running now, with the session they run through. */
  private readonly live = new Map<string, AgentSession>()
  /** Markers of commands lost with their connection; their processes are swept on reconnection. */
  private readonly orphans = new Set<string>()
  /** Cancels the pending reap round (a timer bound to the executor plugin's context). */
  private cancelReap?: () => void
  private reapDelay: number
  private reaping?: Promise<void>
  private disposed = false
  private sweeps = 0

  constructor(
    readonly settings: ConnectionSettings,
    private readonly shell: string,
    private readonly secretPatterns: readonly string[],
    private readonly graceMs: number,
    /** The executor plugin's context: owner of the reconnection timer. */
    private readonly ctx: Context,
    /** The executor plugin's logger: what cannot be cleaned up at disposal, and waits that do not end, are said there. */
    readonly logger: Logger,
  ) {
    this.reapDelay = settings.reconnectDelayMs
  }

  get label(): string {
    return this.settings.label
  }

  /** Commands launched here and not yet released (foreground runs and background tasks). */
  get active(): number {
    return this._active
  }

  /**
   * Counts one more command as running here (for pinning) until the lease is released. Taken
   * synchronously when the host is picked, so concurrent launches see each other.
   */
  occupy(): Lease {
    this._active++
    return onceLease(() => {
      this._active = Math.max(0, this._active - 1)
    })
  }

  /** Markers of lost commands not yet cleaned up (for tests and diagnostics). */
  get pendingOrphans(): number {
    return this.orphans.size
  }

  /** Starts a command through the host's agent (connecting and starting the agent when needed). */
  async launch(spec: BashExecSpec, options: HostLaunch): Promise<LaunchedCommand> {
    // The command counts on the host from now (pinning sees it at once) until it is released.
    const occupancy = this.occupy()
    try {
      const session = await this.session()
      if (this.orphans.size > 0 && !this.reaping) {
        this.stopReapTimer()
        void this.reap()
      }
      this.live.set(options.marker, session)
      const label = this.label
      const launched = await launchThroughAgent(session, spec, {
        marker: options.marker,
        wait: { ...options.wait, logger: this.logger, name: (pid) => `${options.name} (remote pid ${pid}) on ${label}` },
      })
      return new HostCommand(launched, () => {
        this.live.delete(options.marker)
        occupancy.release()
      })
    } catch (error) {
      this.live.delete(options.marker)
      occupancy.release()
      throw error
    }
  }

  /**
   * The start check (the executor's check()): one connection attempt and the agent started there
   * (installed first when needed); the session is kept for the first commands.
   */
  async check(): Promise<void> {
    await this.session(1)
  }

  /** The live session, or a new one (connection + agent); `attempts` bounds the connection's retries. */
  private session(attempts?: number): Promise<SshAgentSession> {
    if (this.disposed) return Promise.reject(sshErrors.poolClosed(this.label))
    if (!this.current) {
      const settings = attempts === undefined ? this.settings : { ...this.settings, connectAttempts: attempts }
      const opening = SshAgentSession.open(settings, this.shell, this.secretPatterns, (gone) => this.onGone(gone, opening))
      this.current = opening
      // A failed start is not kept: the next command tries again.
      opening.catch(() => {
        if (this.current === opening) this.current = undefined
      })
    }
    return this.current
  }

  /** The connection or its agent is gone: its running commands become orphans to sweep. */
  private onGone(session: AgentSession, opening: Promise<SshAgentSession>): void {
    if (this.current === opening) this.current = undefined
    for (const [marker, owner] of this.live) {
      if (owner !== session) continue
      this.live.delete(marker)
      if (!this.disposed) this.orphans.add(marker)
    }
    this.scheduleReap()
  }

  /** A `sweep` of one marker through `session`'s agent; false when the session went away first. */
  private sweep(session: AgentSession, marker: string): Promise<boolean> {
    const id = `sweep-${++this.sweeps}`
    return new Promise((resolve) => {
      session.attach(id, {
        onFrame: (op) => {
          if (op !== 'termed') return
          session.detach(id)
          resolve(true)
        },
        onLost: () => resolve(false),
      })
      if (!session.send('sweep', id, `${marker} ${this.graceMs}`)) resolve(false)
    })
  }

  private scheduleReap(): void {
    if (this.cancelReap || this.reaping || this.disposed || this.orphans.size === 0) return
    this.cancelReap = pluginTimer(this.ctx, this.reapDelay, () => {
      this.cancelReap = undefined
      void this.reap()
    })
  }

  private stopReapTimer(): void {
    this.cancelReap?.()
    this.cancelReap = undefined
  }

  /** One round of cleanup; on failure the next round comes after a doubled delay. */
  private reap(attempts = 1): Promise<void> {
    this.reaping ??= (async () => {
      try {
        const session = await this.session(attempts)
        for (const marker of [...this.orphans]) {
          if (!(await this.sweep(session, marker))) throw sshErrors.connectionLost(this.label)
          this.orphans.delete(marker)
        }
        this.reapDelay = this.settings.reconnectDelayMs
      } catch {
        this.reapDelay = Math.min(Math.max(this.reapDelay * 2, 100), this.settings.maxReconnectDelayMs)
      } finally {
        this.reaping = undefined
      }
      this.scheduleReap()
    })()
    return this.reaping
  }

  /** Last try to clean up lost commands (one connection attempt), then ends the agent and the connection. */
  async dispose(): Promise<void> {
    this.stopReapTimer()
    if (this.reaping) await this.reaping
    this.stopReapTimer()
    if (this.orphans.size > 0) await this.reap(1)
    this.disposed = true
    this.stopReapTimer()
    if (this.orphans.size > 0) {
      this.logger.warn(`${this.orphans.size} command(s) lost with the connection to ${this.label} could not be cleaned up; their processes may still run there`)
    }
    const current = this.current
    this.current = undefined
    const session = await current?.catch(() => undefined)
    // Its stdin closes: the agent kills whatever is left of its commands and exits.
    await session?.remove()
  }
}

/** A command of the host: its release also ends the host's count of it. */
class HostCommand extends DelegatingCommand {
  constructor(
    inner: AgentLaunchedCommand,
    private readonly onRelease: () => void,
  ) {
    super(inner)
  }

  release(): void | Promise<void> {
    this.onRelease()
    return this.inner.release()
  }
}
