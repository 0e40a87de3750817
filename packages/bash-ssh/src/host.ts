import type { Context, Logger } from 'cordis'
import { pluginTimer } from '@deepseek-ai/dsh-bash'
import type { ClientChannel, ExecOptions } from 'ssh2'
import type { ConnectionSettings } from './connection.js'
import { sshErrors } from './errors.js'
import { type ChannelLease, ConnectionPool, type Lease, onceLease } from './pool.js'
import { type ControlHooks, dispatchReport, type GroupClaim, groupFields } from './control-agent.js'
import { AGENT_SCRIPT, CONTROL_SCRIPT, execText } from './scripts.js'

/** What a finished remote helper printed. */
export interface HelperResult {
  stdout: string
  stderr: string
  /** Exit code; null when it died from a signal or the channel closed without a status. */
  code: number | null
  /** True when the channel closed without an exit status (the connection went away). */
  lost: boolean
}

export type ControlOp = 'count' | 'term' | 'wait'

/**
 * One remote machine: its connection pool, how busy it is (for pinning), and the processes of
 * commands whose connection was lost, which are killed as soon as the host can be reached again.
 */
export class SshHost {
  private readonly pool: ConnectionPool
  private _active = 0
  /** Markers of commands lost with their connection; their processes are killed on reconnection. */
  private readonly orphans = new Set<string>()
  /** Cancels the pending reap round (a timer bound to the executor plugin's context). */
  private cancelReap?: () => void
  private reapDelay: number
  private reaping?: Promise<void>
  private disposed = false

  constructor(
    readonly settings: ConnectionSettings,
    private readonly shell: string,
    private readonly graceMs: number,
    /** The executor plugin's context: owner of the reconnection timer. */
    private readonly ctx: Context,
    /** The executor plugin's logger: what cannot be cleaned up at disposal, and waits that do not end, are said there. */
    readonly logger: Logger,
  ) {
    this.pool = new ConnectionPool(settings)
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

  /**
   * Opens a channel running `text`; kicks the orphan reaper once the host answers again. The
   * caller releases the lease once (see ChannelLease).
   */
  async exec(text: string, setup: (lease: ChannelLease) => void, attempts?: number, options?: ExecOptions): Promise<ChannelLease> {
    const lease = await this.pool.exec(text, setup, attempts, options)
    if (this.orphans.size > 0 && !this.reaping) {
      this.stopReapTimer()
      void this.reap()
    }
    return lease
  }

  /** The shell text of a control operation (see CONTROL_SCRIPT); no group: only the marker finds processes. */
  controlText(op: ControlOp, group: GroupClaim | undefined, marker: string, arg = 0): string {
    return execText(this.shell, CONTROL_SCRIPT, 'dsh-bash-ssh-ctl', [op, ...groupFields(group).split(' '), marker, String(arg)])
  }

  /**
   * Runs a control operation for a command whose channel is `lease`: through its connection's
   * control agent when it can run, else through a one-shot helper channel. Resolves with the
   * answer (`count`: a number; `term`: `done`; `wait`: `empty`), or undefined when the connection
   * is gone. Rejects when no channel can be opened at all. `hooks` hear the report and release
   * lines printed before the answer (see ControlHooks), on both paths; `onChannel` receives a
   * one-shot helper's channel (to end it).
   */
  async control(
    lease: ChannelLease,
    op: ControlOp,
    group: GroupClaim | undefined,
    marker: string,
    arg = 0,
    hooks: ControlHooks & { onChannel?: (channel: ClientChannel) => void } = {},
  ): Promise<string | undefined> {
    if (lease.alive) {
      const agent = await lease.controlAgent(this.agentText)
      if (agent) {
        const answer = await agent.request(op, group, marker, arg, hooks)
        if (answer !== undefined) return answer
      }
    }
    // The command's channel lived on this connection: without it, the command is lost.
    if (!lease.alive) return undefined
    const result = await this.runHelper(this.controlText(op, group, marker, arg), {
      stdin: null,
      onChannel: (channel) => {
        forEachLine(channel, (line) => dispatchReport(line, hooks))
        hooks.onChannel?.(channel)
      },
    })
    if (result.lost) return undefined
    // The answer is the last line; report and release lines come before it.
    const lines = result.stdout.split('\n').filter((line) => line !== '' && !dispatchReport(line, {}))
    return (lines.at(-1) ?? '').trim()
  }

  private get agentText(): string {
    return execText(this.shell, AGENT_SCRIPT, 'dsh-bash-ssh-agent', [])
  }

  /**
   * Runs a helper to its end and returns what it printed. `stdin`: bytes to send then EOF; `null`
   * keeps stdin open until the helper exits (control waits stop when stdin ends). `onChannel`
   * receives the channel (to cancel it). Rejects only when no channel could be opened.
   */
  async runHelper(
    text: string,
    options: { stdin?: string | Uint8Array | null; onChannel?: (channel: ClientChannel) => void; attempts?: number } = {},
  ): Promise<HelperResult> {
    let finished!: Promise<HelperResult>
    const lease = await this.exec(
      text,
      ({ channel }) => {
        finished = collectHelper(channel, options.stdin)
        options.onChannel?.(channel)
      },
      options.attempts,
    )
    try {
      return await finished
    } finally {
      lease.release()
    }
  }


  /** Records a lost command: its processes are killed (TERM, then KILL) once the host answers. */
  addOrphan(marker: string): void {
    if (this.disposed) return
    this.orphans.add(marker)
    this.scheduleReap()
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
        for (const marker of [...this.orphans]) {
          const result = await this.runHelper(this.controlText('term', undefined, marker, this.graceMs), { stdin: null, attempts })
          if (result.lost) throw sshErrors.connectionLost(this.label)
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

  /** Last try to clean up lost commands (one connection attempt), then closes every connection. */
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
    this.pool.close()
  }
}

/** Calls `listener` with each complete stdout line of `channel` as it arrives. */
function forEachLine(channel: ClientChannel, listener: (line: string) => void): void {
  let buffer = ''
  channel.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    let newline: number
    while ((newline = buffer.indexOf('\n')) >= 0) {
      listener(buffer.slice(0, newline))
      buffer = buffer.slice(newline + 1)
    }
  })
}

/** Collects what a helper prints until its channel closes. Attached synchronously (see SshConnection.exec). */
function collectHelper(channel: ClientChannel, stdin: string | Uint8Array | null | undefined): Promise<HelperResult> {
  return new Promise((resolve) => {
    const out: Buffer[] = []
    const err: Buffer[] = []
    let code: number | null = null
    let exited = false
    channel.on('data', (chunk: Buffer) => out.push(chunk))
    channel.stderr.on('data', (chunk: Buffer) => err.push(chunk))
    channel.on('error', () => {})
    channel.once('exit', (status: number | null) => {
      exited = true
      code = typeof status === 'number' ? status : null
    })
    channel.once('close', () =>
      resolve({ stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), code, lost: !exited }),
    )
    if (stdin !== null) channel.end(stdin ?? undefined)
  })
}
