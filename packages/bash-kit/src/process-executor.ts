import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import {
  BashExecutor,
  type BashExecRequest,
  type BashExecSpec,
  type BashRunResult,
  type BashTask,
  type BashTaskRead,
  type ByteRange,
  type ExecutorCapabilities,
  type FullOutputInfo,
  type FullOutputRead,
  type FullOutputRef,
  type TerminalModes,
  unknownTaskError,
  BASH_ERROR,
  codedError,
  sleep,
  interactiveUnsupportedError,
  notInteractiveError,
  taskFinishedError,
} from '@deepseek-ai/dsh-bash'
import { type ExecutorConfig, resolveRequest } from './config.js'
import { type ActiveRun, type ForegroundHost, runInForeground } from './foreground-run.js'
import { KeptOutputs } from './kept-outputs.js'
import type { LaunchedCommand, LaunchIdentity } from './launched.js'
import { ensurePrivateDir, ownerSpillDirName } from './spill-dirs.js'
import { OutputPair } from './output-pair.js'
import { stopOnDispose } from './run-stops.js'
import { TaskView } from './task.js'
import { TaskLife, type TaskLifeHost } from './task-life.js'
import { TaskTable } from './task-table.js'
import { TerminalView } from './terminal.js'

/**
 * Everything an executor does above "start a process and kill its tree": defaults, timeouts,
 * aborts, leftovers, the drain window, output collection, background tasks, reads, ownership,
 * eviction and disposal. A backend implements `launch` (and may override `resolve`).
 *
 * The parts live beside it: a foreground call in foreground-run.ts, a background task's life (a
 * state machine) in task-life.ts, the outputs kept for full reads in kept-outputs.ts.
 */
export abstract class ProcessExecutor extends BashExecutor {
  protected readonly config: ExecutorConfig
  /**
   * The executor's private spill directory (0700). It holds one private directory per owner (see
   * `ownerSpillDir`) and the executor's own files (prelude, pipes, status files), never a command's
   * output directly.
   */
  protected readonly spillDir: string
  /** Owner token (or undefined) → its spill directory, created once. */
  private readonly _ownerDirs = new Map<string | undefined, string>()
  private readonly _tasks = new TaskTable<TaskLife>()
  private readonly _activeRuns = new Set<ActiveRun>()
  private readonly _kept: KeptOutputs
  private _runSeq = 0
  private _shutdown?: Promise<void>
  /** What a task's life and a foreground run need of this executor. */
  private readonly _lifeHost: TaskLifeHost
  private readonly _runHost: ForegroundHost

  constructor(ctx: Context, config: ExecutorConfig) {
    super(ctx)
    this.config = config
    const parent = resolvePath(config.spillDir ?? tmpdir())
    mkdirSync(parent, { recursive: true })
    // mkdtemp creates the directory 0700 with a random name: nobody else can plant files in it.
    this.spillDir = mkdtempSync(join(parent, 'dsh-bash-'))
    chmodSync(this.spillDir, 0o700)
    this._kept = new KeptOutputs(config.maxFinishedTasks, () => this._tasks.entries())
    this._lifeHost = {
      graceMs: config.graceMs,
      drainMs: config.drainMs,
      logError: (message, error) => this.logger.error(message, error),
      ended: (life) => {
        this.emitTaskDone(life.view)
        this._evict()
      },
    }
    this._runHost = {
      graceMs: config.graceMs,
      drainMs: config.drainMs,
      disposing: () => this.disposing,
      launch: (spec, identity) => this.launch(spec, identity),
      output: (label, owner) => this._output(label, owner),
      adopt: (spec, run, startedAt, launched, output) => this._adopt(spec, run, startedAt, launched, output),
      keep: (output, result) => this._kept.keepRun(output, result),
    }
  }

  /**
   * The private directory (0700) of one owner's spill files (and long scripts), created on first
   * use: `<spillDir>/owner-<hash of the token>`, or `<spillDir>/unowned` for commands without an
   * owner. Everything of that owner's commands that a command may need to read lives here, so a
   * sandbox can make this directory, and no other session's, visible to the command.
   */
  ownerSpillDir(owner: string | undefined): string {
    let dir = this._ownerDirs.get(owner)
    if (dir === undefined) {
      dir = join(this.spillDir, ownerSpillDirName(owner))
      ensurePrivateDir(dir)
      this._ownerDirs.set(owner, dir)
    }
    return dir
  }

  /** Starts one command. Throws (or rejects) only for infrastructure failures. */
  protected abstract launch(spec: BashExecSpec, launch: LaunchIdentity): LaunchedCommand | Promise<LaunchedCommand>

  /**
   * Called when a foreground run yields and becomes the background task `task` (same processes,
   * same `launched`), before the task is visible. Backends that keep per-task facts (the SSH
   * executor's task → host map) record them here. Must not throw.
   */
  protected adopted(_task: LaunchIdentity, _run: LaunchIdentity, _launched: LaunchedCommand): void {}

  /**
   * Called once per task the kit stops tracking (evicted as one of the oldest finished tasks past
   * `maxFinishedTasks`): `get(task.id)` is undefined from then on. Backends forget their per-task
   * facts here, so that they keep no table of their own to sweep. Not called at disposal (the
   * executor goes whole). Must not throw.
   */
  protected evicted(_task: LaunchIdentity): void {}

  /**
   * What this executor can do (`ExecutorCapabilities`), declared by each backend. The kit acts on
   * `interactive` (false: `start` refuses interactive specs with `interactiveUnsupported`; true:
   * `launch` must honour `spec.interactive` with `LaunchedCommand.terminal` and `write`) and on
   * `resize` (false: `resize` rejects; true: interactive launches have `resize`).
   */
  abstract get capabilities(): ExecutorCapabilities

  /** Subclasses release their own resources here (after every task is gone). */
  protected async disposeBackend(): Promise<void> {}

  resolve(request: BashExecRequest): BashExecSpec {
    return resolveRequest(this.config, request, this.sandboxMode)
  }

  async run(spec: BashExecSpec): Promise<BashRunResult> {
    this._assertUsable(spec)
    if (spec.interactive) {
      throw codedError(BASH_ERROR.invalidRequest, 'interactive commands run only as background tasks (start), never in the foreground (run)')
    }
    let markFinished!: () => void
    // Tracked from before the launch, so that a disposal that starts meanwhile still stops it.
    const active: ActiveRun = { finished: new Promise<void>((resolve) => (markFinished = resolve)) }
    this._activeRuns.add(active)
    try {
      return await runInForeground(this._runHost, spec, { id: `run-${++this._runSeq}`, kind: 'run', owner: spec.owner }, active)
    } finally {
      this._activeRuns.delete(active)
      markFinished()
    }
  }

  /** Turns a running foreground command into a tracked background task (the yield). */
  private _adopt(spec: BashExecSpec, run: LaunchIdentity, startedAt: number, launched: LaunchedCommand, output: OutputPair): TaskLife {
    const task: LaunchIdentity = { id: this._tasks.nextId(), kind: 'task', owner: spec.owner }
    try {
      this.adopted(task, run, launched)
    } catch (error) {
      this.logger.error(`adopting ${run.id} as ${task.id} failed:`, error)
    }
    const view = new TaskView(task.id, spec.command, spec.workdir, startedAt)
    const life = TaskLife.adopted(this._lifeHost, { view, owner: spec.owner, output }, launched)
    this._tasks.add(life)
    return life
  }

  start(spec: BashExecSpec): BashTask {
    this._assertUsable(spec)
    if (spec.interactive) this._assertInteractive(spec)
    const id = this._tasks.nextId()
    const interactive = spec.interactive === true
    const view = new TaskView(id, spec.command, spec.workdir, undefined, interactive)
    const terminal = interactive ? new TerminalView() : undefined
    const output = this._output(id, spec.owner, interactive)
    let launching: LaunchedCommand | Promise<LaunchedCommand>
    try {
      launching = this.launch(spec, { id, kind: 'task', owner: spec.owner })
    } catch (error) {
      output.dispose()
      terminal?.dispose()
      throw error
    }
    const parts = { view, owner: spec.owner, output, ...(terminal ? { terminal } : {}) }
    // In the table before its life begins: a launch that settled already ends it at the earliest a turn later.
    const life = TaskLife.launching(this._lifeHost, parts, launching, spec.signal)
    this._tasks.add(life)
    return view
  }

  get(id: string): BashTask | undefined {
    return this._tasks.get(id)?.view
  }

  list(): BashTask[] {
    return this._tasks.entries().map((life) => life.view)
  }

  ownerOf(id: string): string | undefined {
    return this._tasks.get(id)?.owner
  }

  readOutput(id: string): BashTaskRead {
    const life = this._tasks.get(id)
    if (!life) throw unknownTaskError(id)
    if (!life.terminal) return { task: life.view, ...life.output.read() }
    // An interactive task reads as its terminal shows it; the collector only keeps the raw stream (spill file).
    const out = life.terminal.read()
    const spillPaths: BashTaskRead['spillPaths'] = {}
    if (life.output.stdout.spillPath) spillPaths.stdout = life.output.stdout.spillPath
    return { task: life.view, delta: out.text, streams: { stdout: out.text, stderr: '' }, screen: out.screen, lossy: out.lossy, spillPaths }
  }

  async kill(id: string): Promise<boolean> {
    const life = this._tasks.get(id)
    if (!life) throw unknownTaskError(id)
    const stoppedByThisCall = life.requestStop()
    await life.view.done
    return stoppedByThisCall
  }

  /**
   * Stops every running task of `owner` (whole trees) and waits until they are gone; resolves with
   * how many this call stopped. Finished tasks stay readable; foreground calls are their callers'.
   */
  async killOwner(owner: string): Promise<number> {
    const mine = this._tasks.entries().filter((life) => life.owner === owner && life.view.status === 'running')
    const stopped = mine.filter((life) => life.requestStop()).length
    await Promise.all(mine.map((life) => life.view.done))
    return stopped
  }

  async write(id: string, data: string | Uint8Array): Promise<void> {
    const life = this._interactiveTask(id)
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    const launched = await this._liveTerminal(life)
    try {
      await launched.write!(bytes)
    } catch (error) {
      // The terminal closed under the write: the task is ending; report it as finished once it has.
      await Promise.race([life.view.done, sleep(this.config.drainMs)])
      if (life.view.status !== 'running') throw taskFinishedError(id, taskStatusText(life.view))
      throw error
    }
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    for (const [name, value] of [['cols', cols], ['rows', rows]] as const) {
      if (!Number.isInteger(value) || value < 2 || value > 1000) {
        throw codedError(BASH_ERROR.invalidRequest, `invalid ${name}: expected an integer from 2 to 1000, got ${JSON.stringify(value ?? null)}`)
      }
    }
    const life = this._interactiveTask(id)
    const launched = await this._liveTerminal(life)
    if (!this.capabilities.resize || !launched.resize) throw codedError(BASH_ERROR.invalidRequest, `task ${id}: this executor cannot resize its terminal`)
    launched.resize(cols, rows)
    life.terminal!.resize(cols, rows)
  }

  /**
   * The terminal's modes of a running interactive task, from the backend (`LaunchedCommand.terminalModes`);
   * undefined when the backend cannot tell. Same errors as `write`.
   */
  async terminalModes(id: string): Promise<TerminalModes | undefined> {
    const life = this._interactiveTask(id)
    const launched = await this._liveTerminal(life)
    if (!launched.terminalModes) return undefined
    try {
      return await launched.terminalModes()
    } catch {
      // A backend that broke its "never rejects": it could not tell.
      return undefined
    }
  }

  readFullOutput(ref: FullOutputRef, range: ByteRange, owner: string | undefined): FullOutputRead {
    return this._kept.read(ref, range, owner)
  }

  fullOutputs(owner: string | undefined): FullOutputInfo[] {
    return this._kept.list(owner)
  }

  /** Kills every running task and foreground command, waits until they are gone, removes spill files. */
  shutdown(): Promise<void> {
    this._shutdown ??= this._doShutdown()
    return this._shutdown
  }

  private async _doShutdown(): Promise<void> {
    this.beginDisposal()
    const waits: Promise<unknown>[] = []
    for (const life of this._tasks.entries()) {
      life.requestStop()
      waits.push(life.view.done)
    }
    for (const run of this._activeRuns) {
      // A run still launching stops itself once its launch resolves (it sees `disposing`).
      if (run.stops) stopOnDispose(run.stops)
      waits.push(run.finished)
    }
    await Promise.all(waits)
    for (const life of this._tasks.entries()) {
      life.output.dispose()
      life.terminal?.dispose()
    }
    this._kept.disposeRuns()
    await this.disposeBackend()
    if (!this.config.keepSpillFiles) rmSync(this.spillDir, { recursive: true, force: true })
  }

  private _evict(): void {
    if (this.disposing) return
    for (const life of this._tasks.evictFinished(this.config.maxFinishedTasks)) {
      life.output.dispose()
      life.terminal?.dispose()
      try {
        this.evicted({ id: life.view.id, kind: 'task', owner: life.owner })
      } catch (error) {
        this.logger.error(`forgetting ${life.view.id} failed:`, error)
      }
    }
  }

  private _output(label: string, owner: string | undefined, interactive = false): OutputPair {
    const { spillAboveBytes: bytes, spillAboveLines: lines } = this.config
    const threshold = bytes === undefined && lines === undefined ? undefined : interactive ? { bytes: 0 } : { bytes, lines }
    return new OutputPair(
      {
        maxBytes: this.config.maxOutputBytes,
        maxSpillBytes: this.config.maxSpillBytes,
        dir: this.ownerSpillDir(owner),
        label,
        owner,
        keepSpillFile: this.config.keepSpillFiles,
        // An interactive task's reads are the terminal's text, not the raw stream: their size is not
        // bounded by the stream's (a cursor move prints blank lines, a screen is redrawn), so under a
        // threshold the raw stream always spills and a cut read can name it.
        ...(threshold ? { spillAbove: threshold } : {}),
      },
      join,
    )
  }

  /** `start` of an interactive spec: the backend must support terminals, and stdin is the terminal. */
  private _assertInteractive(spec: BashExecSpec): void {
    if (!this.capabilities.interactive) throw interactiveUnsupportedError(this.constructor.name)
    if (spec.stdin !== undefined) throw codedError(BASH_ERROR.invalidRequest, 'invalid request: stdin cannot be given to an interactive command (its input is the terminal)')
  }

  /** The task for `write`/`resize`: unknown id, not interactive, or finished are coded errors. */
  private _interactiveTask(id: string): TaskLife {
    const life = this._tasks.get(id)
    if (!life) throw unknownTaskError(id)
    if (!life.terminal) throw notInteractiveError(id)
    if (life.view.status !== 'running') throw taskFinishedError(id, taskStatusText(life.view))
    return life
  }

  /** The launched command of a running interactive task, once its launch settled; a finished task is an error. */
  private async _liveTerminal(life: TaskLife): Promise<LaunchedCommand> {
    const launched = await life.liveCommand()
    if (!launched) {
      // Its end is only a drain away: report the final status.
      await life.view.done
      throw taskFinishedError(life.view.id, taskStatusText(life.view))
    }
    return launched
  }

  private _assertUsable(spec: BashExecSpec): void {
    if (this.disposing) throw codedError(BASH_ERROR.disposed, 'the bash executor is disposed')
    if (!spec || typeof spec.command !== 'string' || typeof spec.workdir !== 'string' || typeof spec.timeoutMs !== 'number') {
      throw codedError(BASH_ERROR.invalidRequest, 'invalid spec: call resolve() first')
    }
    if (Buffer.byteLength(spec.command) > this.config.maxCommandBytes) {
      throw codedError(
        BASH_ERROR.commandTooLong,
        `command is too long: ${Buffer.byteLength(spec.command)} bytes (the limit is ${this.config.maxCommandBytes} bytes)`,
      )
    }
    if (spec.signal?.aborted) throw codedError(BASH_ERROR.abortedBeforeStart, 'the command was aborted before it started')
  }
}

/** `completed, exit code: 0`, `killed by SIGTERM`, `killed (why)`: a task's status as the tools' status line says it. */
export function taskStatusText(task: Pick<BashTask, 'status' | 'exitCode' | 'signal' | 'reason'>): string {
  const why = task.reason ? ` (${task.reason})` : ''
  if (task.status === 'running') return 'running'
  if (task.status === 'completed') return `completed, exit code: ${task.exitCode ?? 'unknown'}`
  return task.signal ? `killed by ${task.signal}${why}` : `killed${why}`
}
