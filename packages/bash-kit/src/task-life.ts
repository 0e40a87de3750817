import { type CollectedOutput, messageOf, type ResourceFacts, type SandboxFacts } from '@deepseek-ai/dsh-bash'
import type { ExitFacts, LaunchedCommand } from './launched.js'
import type { OutputPair } from './output-pair.js'
import type { TaskView } from './task.js'
import type { TerminalView } from './terminal.js'
import { usageFields } from './usage-fields.js'

/**
 * Where a background task is in its life. Every change is one of the edges below, made by one
 * method of `TaskLife` (the tests in test/task-life.test.ts take each edge):
 *
 * ```
 *  launching ──launched──▶ running ──stop / no terminal──▶ stopping
 *     │  │                   │                               │
 *     │  stop                processes gone                  processes gone
 *     │  ▼                   ▼                               ▼
 *     │ stop-pending ─launched─▶ stopping      draining ◀────┘
 *     │     │                                     │
 *     └─────┴──launch failed──▶ ended ◀──drained──┘
 * ```
 *
 * A run that yields enters at `running` (its command is launched already).
 */
export type TaskState = 'launching' | 'stop-pending' | 'running' | 'stopping' | 'draining' | 'ended'

/** What a task's life needs of its executor. */
export interface TaskLifeHost {
  readonly graceMs: number
  readonly drainMs: number
  /** A failure with no caller to report to (a `release` that threw). */
  logError(message: string, error: unknown): void
  /** The task ended (its view is final): the executor announces it and evicts. Called once. */
  ended(life: TaskLife): void
}

/** What a task is made of, besides its state. */
export interface TaskParts {
  view: TaskView
  owner: string | undefined
  output: OutputPair
  /** Interactive tasks only: the terminal emulator fed with the raw stream; reads come from it. */
  terminal?: TerminalView
}

/**
 * One background task's life, from its launch (or a run's yield) to its end, as an explicit state
 * machine. It holds the task's parts and its launched command; it never starts anything itself.
 */
export class TaskLife {
  readonly view: TaskView
  readonly owner: string | undefined
  readonly output: OutputPair
  readonly terminal?: TerminalView
  private _state: TaskState
  private _launched?: LaunchedCommand
  /** Settles with the launched command, or undefined when the launch failed. */
  private _launching?: Promise<LaunchedCommand | undefined>
  /** `kill` (the task's signal, disposal, its owner's end) asked to stop it; decides `killed`. */
  private _stopRequested = false
  private _termination?: Promise<void>
  /** Why the executor ended the task itself (a backend that gave no terminal). */
  private _failure?: string
  /** Removes the listener on the caller's AbortSignal. */
  private _detach?: () => void

  private constructor(
    private readonly host: TaskLifeHost,
    parts: TaskParts,
    state: TaskState,
  ) {
    this.view = parts.view
    this.owner = parts.owner
    this.output = parts.output
    if (parts.terminal) this.terminal = parts.terminal
    this._state = state
  }

  /** A task started by `start`: its launch is under way (`launching` may be a settled value). */
  static launching(host: TaskLifeHost, parts: TaskParts, launching: LaunchedCommand | Promise<LaunchedCommand>, signal?: AbortSignal): TaskLife {
    const life = new TaskLife(host, parts, 'launching')
    life._launching = Promise.resolve(launching).then(
      (launched) => launched,
      () => undefined,
    )
    if (signal) {
      const onAbort = () => void life.requestStop()
      signal.addEventListener('abort', onAbort, { once: true })
      life._detach = () => signal.removeEventListener('abort', onAbort)
    }
    Promise.resolve(launching).then(
      (launched) => life._follow(launched),
      (error: unknown) => life.launchFailed(error),
    )
    return life
  }

  /** A foreground run that yielded: the same processes, already launched, followed by the run. */
  static adopted(host: TaskLifeHost, parts: TaskParts, launched: LaunchedCommand): TaskLife {
    const life = new TaskLife(host, parts, 'running')
    life._launched = launched
    return life
  }

  get state(): TaskState {
    return this._state
  }

  get stopRequested(): boolean {
    return this._stopRequested
  }

  /** The launched command once known (undefined while launching, and after a failed launch). */
  get launched(): LaunchedCommand | undefined {
    return this._launched
  }

  /**
   * Edge `launching → running` (or `→ stopping` for an interactive task whose backend gave no
   * terminal), and `stop-pending → stopping`. Returns the state entered.
   */
  launchedAs(launched: LaunchedCommand): TaskState {
    if (this._state === 'launching') {
      this._launched = launched
      this._state = 'running'
      if (this.terminal && !this._attachTerminal(launched)) {
        this._failure = 'failed to start: the executor gave the interactive command no terminal'
        this._stopRequested = true
        this._stop(launched)
      }
    } else if (this._state === 'stop-pending') {
      this._launched = launched
      this._stop(launched)
    } else {
      throw new Error(`task life: ${this.view.id} launched while ${this._state}`)
    }
    return this._state
  }

  /** Edge `launching | stop-pending → ended`: the launch failed; the task ends `killed` with the reason. */
  launchFailed(error: unknown): void {
    if (this._state !== 'launching' && this._state !== 'stop-pending') {
      throw new Error(`task life: ${this.view.id} launch failed while ${this._state}`)
    }
    this._end({ exitCode: null, signal: null }, `failed to start: ${messageOf(error)}`)
  }

  /**
   * A stop request (`kill`, the task's signal, disposal). Edges `launching → stop-pending` (the
   * stop is applied once launched) and `running → stopping`; true then. In any later state the
   * task is already stopping or gone: false (this call stopped nothing).
   */
  requestStop(): boolean {
    switch (this._state) {
      case 'launching':
        this._stopRequested = true
        this._state = 'stop-pending'
        return true
      case 'running':
        this._stopRequested = true
        this._stop(this._launched!)
        return true
      case 'stop-pending':
      case 'stopping':
      case 'draining':
      case 'ended':
        return false
    }
  }

  /** Edge `running | stopping → draining`: no process of the task is left; its end is a drain away. */
  processesGone(): void {
    if (this._state !== 'running' && this._state !== 'stopping') {
      throw new Error(`task life: ${this.view.id} lost its processes while ${this._state}`)
    }
    this._state = 'draining'
  }

  /**
   * Edge `draining → ended`: the output is drained and the launch released. `reason` ends it
   * `killed` (a lost connection, a timeout); sandbox facts are read only for a task that ended by
   * itself or by a kill, never with a reason. `usage`: what the command used, read before the
   * launch was released (absent where the backend does not measure).
   */
  drained(exit: ExitFacts, reason?: string, facts?: (stderr: CollectedOutput) => SandboxFacts | undefined, usage?: ResourceFacts): void {
    if (this._state !== 'draining') throw new Error(`task life: ${this.view.id} drained while ${this._state}`)
    this._end(exit, reason ?? this._failure, facts, usage)
  }

  /**
   * The launched command of a running interactive task, once its launch settled; undefined when
   * the task is over or about to be (its end is then only a drain away: wait for `view.done`).
   */
  async liveCommand(): Promise<LaunchedCommand | undefined> {
    const launched = this._launched ?? (await this._launching)
    if (!launched || this._failure || this._state === 'draining' || this._state === 'ended') return undefined
    return launched
  }

  /**
   * The rest of a yielded run. It ends the way it would have in the foreground (leftovers stopped
   * when the main process exits by itself, its timeout kills it), then finishes as a task.
   */
  async followYielded(ending: Promise<{ exit: ExitFacts }>, timeoutReason: () => string | undefined): Promise<void> {
    let exit: ExitFacts = { exitCode: null, signal: null }
    let failure: string | undefined
    try {
      ;({ exit } = await ending)
    } catch (error) {
      failure = messageOf(error)
    }
    this.processesGone()
    const launched = this._launched!
    const usage = usageFields(launched)
    await this._release(launched)
    this.drained(exit, launched.lostReason?.() ?? failure ?? timeoutReason(), (stderr) => launched.sandboxFacts?.(exit, stderr), usage)
  }

  /** A started task from its launch to its end: over when none of its processes is left, not when the shell exits. */
  private async _follow(launched: LaunchedCommand): Promise<void> {
    this.launchedAs(launched)
    const drain = this.output.collect(launched, this.host.drainMs)
    const exit = await launched.exited
    await launched.whenEmpty()
    this.processesGone()
    await this._termination
    await drain()
    // Read before `release` frees the cgroup they are read from.
    const usage = usageFields(launched)
    await this._release(launched)
    // Sandbox facts ride on the task, set before `done` and the listeners (as on a foreground result).
    this.drained(exit, launched.lostReason?.(), (stderr) => launched.sandboxFacts?.(exit, stderr), usage)
  }

  private _stop(launched: LaunchedCommand): void {
    this._state = 'stopping'
    this._termination = launched.terminate(this.host.graceMs)
  }

  private async _release(launched: LaunchedCommand): Promise<void> {
    try {
      await launched.release()
    } catch (error) {
      // The task is over all the same; a leaked resource must not leave it running forever.
      this.host.logError(`releasing ${this.view.id} failed:`, error)
    }
  }

  /**
   * Feeds the raw terminal stream into the task's terminal view, every chunk as it arrives (the
   * collector keeps the raw stream for the spill file). False when the backend gave no terminal
   * for an interactive spec (a bug there: the command is stopped rather than run without one).
   */
  private _attachTerminal(launched: LaunchedCommand): boolean {
    const terminal = this.terminal!
    if (!launched.terminal || typeof launched.write !== 'function') return false
    launched.stdout.on('data', (chunk: Buffer) => terminal.write(chunk))
    return true
  }

  private _end(exit: ExitFacts, reason?: string, facts?: (stderr: CollectedOutput) => SandboxFacts | undefined, usage?: ResourceFacts): void {
    this._state = 'ended'
    this._detach?.()
    this.output.end()
    const killed = this._stopRequested || exit.signal !== null || reason !== undefined
    const sandbox = reason === undefined ? facts?.(this.output.stderr.result()) : undefined
    if (!this.view.end(killed ? 'killed' : 'completed', exit.exitCode, exit.signal, reason, sandbox, usage)) return
    this.host.ended(this)
  }
}
