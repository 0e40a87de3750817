import { type Context, type Logger, symbols } from 'cordis'
import type {
  BashExecRequest,
  BashExecSpec,
  BashRunResult,
  BashTask,
  BashTaskRead,
  ByteRange,
  ExecutorCapabilities,
  FullOutputInfo,
  FullOutputRead,
  FullOutputRef,
  SandboxMode,
  TaskDoneListener,
} from './types.js'
import type { TerminalModes } from './terminal-modes.js'

declare module 'cordis' {
  interface Context {
    bash: BashExecutor
  }
}

import { notInteractiveError, unknownTaskError } from './errors.js'

export { unknownTaskError } from './errors.js'

/**
 * The executor seam, registered as `ctx.bash`. Subclasses run processes; this base class owns the
 * `onTaskDone` listeners, whose lifetime is bound to the plugin that registered them.
 *
 * An executor is a cordis plugin: `ctx.plugin(LocalExecutor, config)`. Constructing it registers it
 * as `ctx.bash` (undone when the plugin unloads) and binds `shutdown()` to the plugin's disposal.
 * It is not a cordis `Service` subclass because the seam's `start(spec)` and `config` would collide
 * with `Service.start()` and `Service.config`; it uses the same context tracing instead, so that
 * inside a method `this.ctx` is the calling plugin's context.
 */
export abstract class BashExecutor {
  /** Inside a method called as `ctx.bash.x()`, the caller's context; else the executor plugin's own. */
  protected ctx: Context
  /**
   * The executor plugin's own context, whoever calls: owner of what outlives a call (timers bound
   * with `pluginTimer`). Never a caller's context, unlike `ctx` inside a method.
   */
  protected readonly pluginCtx: Context
  /** The executor plugin's logger (`dsh-bash`): diagnostics that have no caller to go to. */
  protected readonly logger: Logger
  private readonly _listeners = new Set<TaskDoneListener>()
  private _disposing = false

  constructor(ctx: Context) {
    this.ctx = ctx
    this.pluginCtx = ctx
    this.logger = ctx.logger('dsh-bash')
    Object.defineProperty(this, symbols.tracker, { value: { associate: 'bash', property: 'ctx' } })
    ctx.set('bash', this)
    ctx.on('dispose', () => this.shutdown())
  }

  /**
   * Kills every running task (whole process trees) and waits until they are gone; then frees the
   * executor's resources. Idempotent. Called when the executor plugin unloads.
   */
  abstract shutdown(): Promise<void>

  /** Applies defaults and caps; synchronous; the only place defaults apply. Throws on invalid input. */
  abstract resolve(request: BashExecRequest): BashExecSpec
  /** Runs in the foreground. Rejects only for infrastructure failures. */
  abstract run(spec: BashExecSpec): Promise<BashRunResult>
  /** Starts a background task and returns at once. No timeout applies. */
  abstract start(spec: BashExecSpec): BashTask
  /** A tracked task (running or finished, not yet evicted). */
  abstract get(id: string): BashTask | undefined
  /** Tracked tasks, oldest first. */
  abstract list(): BashTask[]
  /** The owner token stored at start, or undefined (unknown id, or started without owner). */
  abstract ownerOf(id: string): string | undefined
  /** Output since the previous read. Unknown id → `unknown bash task "<id>"`. */
  abstract readOutput(id: string): BashTaskRead
  /** Stops a task: true if this call stopped it, false if it had already finished. */
  abstract kill(id: string): Promise<boolean>
  /**
   * Stops every running background task of `owner` (whole process trees) and resolves once they
   * are gone, with how many this call stopped (0 when the owner had none running, or every one was
   * being stopped already). Finished tasks stay readable; tasks of other owners and unowned tasks
   * are never touched; foreground calls belong to their callers (their signal stops them). Never
   * rejects for an owner it does not know.
   */
  abstract killOwner(owner: string): Promise<number>

  /**
   * A byte range of a launch's complete output, from the file the executor keeps of it (the spill
   * file a cut result names; a task's output that memory still holds from its first byte), on the
   * machine that runs this server, whichever machine ran the command. Fenced by `owner`: output of
   * a launch with an owner is read only by that owner; an unowned launch's by anyone. Anything not
   * kept for this owner (unknown, evicted, never spilled, another owner's) → the one error
   * `noFullOutput`. The range is clamped to the output and to `MAX_FULL_OUTPUT_READ`.
   */
  abstract readFullOutput(ref: FullOutputRef, range: ByteRange, owner: string | undefined): FullOutputRead

  /** The complete outputs kept for `owner` (as `readFullOutput` would read them), oldest first. */
  abstract fullOutputs(owner: string | undefined): FullOutputInfo[]

  /**
   * Writes input to an interactive task's terminal, as a person types it: `\n` or `\r` is Enter,
   * `\u0003` Ctrl-C (the terminal turns it into SIGINT for the foreground process group),
   * `\u0004` Ctrl-D, `\u001b[A` arrow up. A string is sent as UTF-8. Resolves once the bytes are
   * handed to the terminal (not when the program read them). Rejects with a coded error:
   * `unknownTask` (no such id), `notInteractive` (started without `interactive`), `taskFinished`
   * (the task ended; the message names its status). Never checks the owner: the caller fences.
   *
   * This default is for executors that never start interactive tasks: unknown id, else not interactive.
   */
  async write(id: string, data: string | Uint8Array): Promise<void> {
    void data
    if (!this.get(id)) throw unknownTaskError(id)
    throw notInteractiveError(id)
  }

  /**
   * Changes an interactive task's terminal size (the program gets SIGWINCH). Optional: executors
   * without it keep the fixed 120x40. Same errors as `write`.
   */
  resize?(id: string, cols: number, rows: number): Promise<void>

  /**
   * Checks, before the first command, what this executor needs outside this process (a host it
   * connects to, an engine and an image, a cluster); rejects with an Error whose one-line message
   * names what is missing and how to fix it. Front ends call it at start (the CLI does), so a wrong
   * setup fails there instead of on every call. The default has nothing to check.
   */
  async check(): Promise<void> {}

  /**
   * Reads an interactive task's terminal modes now (echo, line mode; see `TerminalModes`).
   * Resolves with undefined when this executor cannot tell (no way to read the terminal's settings
   * on its side, or the read failed): callers that need the answer must then refuse, never assume.
   * Optional: an executor without it cannot tell either. Same errors as `write`.
   */
  terminalModes?(id: string): Promise<TerminalModes | undefined>

  /**
   * Optional hook: the owner is gone (its MCP session closed, its agent ended), so the executor may
   * free what it holds for it — a session's container or pod, a pinned host. Called after the
   * owner's running tasks were killed; it kills any it still finds. Finished tasks stay readable.
   * Resolves once released; should not reject. Executors without per-owner state omit it.
   */
  releaseOwner?(owner: string): Promise<void>

  /** The default sandbox mode; undefined for executors that do not confine. */
  get sandboxMode(): SandboxMode | undefined {
    return undefined
  }

  /** What this executor can do (see `ExecutorCapabilities`): fixed for its life. */
  abstract get capabilities(): ExecutorCapabilities

  /** True once disposal began: no listener fires for kills done by disposal. */
  protected get disposing(): boolean {
    return this._disposing
  }

  /**
   * Calls `listener` exactly once per background task when it ends. The registration is an effect of
   * the calling plugin: it is removed when that plugin unloads.
   */
  onTaskDone(listener: TaskDoneListener): () => void {
    if (typeof listener !== 'function') throw new Error('onTaskDone expects a function')
    return this.ctx.effect(() => {
      // A wrapper per registration, so registering the same function twice is two registrations.
      const entry: TaskDoneListener = (task) => listener(task)
      this._listeners.add(entry)
      return () => {
        this._listeners.delete(entry)
      }
    })
  }

  /** Subclasses call this once per ended background task. Silent during disposal; isolates failures. */
  protected emitTaskDone(task: BashTask): void {
    if (this._disposing) return
    const report = (error: unknown) => this.logger.error(`a task-done listener failed for ${task.id}:`, error)
    for (const listener of [...this._listeners]) {
      try {
        const returned: unknown = listener(task)
        // An async listener that rejects is a failure like a throw, not an unhandled rejection.
        if (returned && typeof (returned as PromiseLike<unknown>).then === 'function') {
          Promise.resolve(returned).catch(report)
        }
      } catch (error) {
        report(error)
      }
    }
  }

  /** Marks the start of disposal. Subclasses call it first thing in `stop()`. */
  protected beginDisposal(): void {
    this._disposing = true
  }
}
