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
  type CollectedOutput,
  type FullOutputInfo,
  type FullOutputRead,
  type FullOutputRef,
  MAX_FULL_OUTPUT_READ,
  noFullOutputError,
  type ResourceFacts,
  type SandboxFacts,
  type TerminalModes,
  unknownTaskError,
  BASH_ERROR,
  codedError,
  messageOf,
  sleep,
  type OutputListener,
  interactiveUnsupportedError,
  notInteractiveError,
  taskFinishedError,
} from '@deepseek-ai/dsh-bash'
import { type ExecutorConfig, resolveRequest } from './config.js'
import type { ExitFacts, LaunchedCommand, LaunchIdentity } from './launched.js'
import { ensurePrivateDir, ownerSpillDirName } from './spill-dirs.js'
import { forwardLive, OutputPair } from './output-pair.js'
import { RunStops, stopOnAbort, stopOnDispose, stopOnTimeout, yieldAfter } from './run-stops.js'
import { TaskView } from './task.js'
import { TaskTable } from './task-table.js'
import { TerminalView } from './terminal.js'

/** cordis' key for the object behind its tracing proxy. */
const CORDIS_ORIGINAL = Symbol.for('cordis.original')

/**
 * The executor itself when `self` is cordis' tracing proxy of it (what `ctx.bash` hands callers).
 * Through the proxy, every `this.x` inside a method builds a shadow context and a Proxy (profiled
 * under the load bench: ~20% of the server's CPU, most of it in calls like these); the executor's
 * methods use no caller context (`this.ctx` matters only to `onTaskDone`, which stays proxied), so
 * the public methods below run on the object itself.
 */
/** The fence of complete outputs: an owned launch's output is its owner's; an unowned one is anyone's. */
function mayRead(output: OutputPair, owner: string | undefined): boolean {
  return output.owner === undefined || output.owner === owner
}

function unproxied<T extends object>(self: T): T {
  return ((self as Record<symbol, unknown>)[CORDIS_ORIGINAL] as T | undefined) ?? self
}

interface TaskEntry {
  view: TaskView
  owner: string | undefined
  output: OutputPair
  launched?: LaunchedCommand
  /** No process of the task is left (its end is only a drain away). */
  processesGone: boolean
  /** `kill` (or disposal) asked to stop it. */
  stopRequested: boolean
  termination?: Promise<void>
  /** Removes the listener on the caller's AbortSignal. */
  detach?: () => void
  /** Interactive tasks only: the terminal emulator fed with the raw stream; reads come from it. */
  terminal?: TerminalView
  /** Settles with the launched command, or undefined when the launch failed. */
  launching?: Promise<LaunchedCommand | undefined>
  /** Why the executor ended the task itself (a backend that gave no terminal). */
  failure?: string
}

interface ActiveRun {
  /** Set once the launch succeeded. */
  launched?: LaunchedCommand
  /** Set once the launch succeeded: its stop causes (disposal records `dispose` there). */
  stops?: RunStops
  /** Settles when the call is over and everything it launched is released. Never rejects. */
  finished: Promise<void>
}

/**
 * Everything an executor does above "start a process and kill its tree": defaults, timeouts,
 * aborts, leftovers, the drain window, output collection, background tasks, reads, ownership,
 * eviction and disposal. A backend implements `launch` (and may override `resolve`).
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
  private readonly _tasks = new TaskTable<TaskEntry>()
  private readonly _activeRuns = new Set<ActiveRun>()
  /** Foreground results whose spill files are kept for the model to read, oldest first, with how the run ended. */
  private readonly _runSpills: { output: OutputPair; ended: Pick<BashRunResult, 'exitCode' | 'signal' | 'timedOut'> }[] = []
  private _runSeq = 0
  private _shutdown?: Promise<void>

  constructor(ctx: Context, config: ExecutorConfig) {
    super(ctx)
    this.config = config
    const parent = resolvePath(config.spillDir ?? tmpdir())
    mkdirSync(parent, { recursive: true })
    // mkdtemp creates the directory 0700 with a random name: nobody else can plant files in it.
    this.spillDir = mkdtempSync(join(parent, 'dsh-bash-'))
    chmodSync(this.spillDir, 0o700)
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
   * True when `launch` honours `spec.interactive` (a pseudo-terminal, `LaunchedCommand.terminal`
   * and `write`). Default false: `start` then refuses interactive specs with `interactiveUnsupported`.
   */
  protected get supportsInteractive(): boolean {
    return false
  }

  /** Subclasses release their own resources here (after every task is gone). */
  protected async disposeBackend(): Promise<void> {}

  resolve(request: BashExecRequest): BashExecSpec {
    const self = unproxied(this)
    if (self !== this) return self.resolve(request)
    return resolveRequest(this.config, request, this.sandboxMode)
  }

  async run(spec: BashExecSpec): Promise<BashRunResult> {
    const self = unproxied(this)
    if (self !== this) return self.run(spec)
    this._assertUsable(spec)
    if (spec.interactive) {
      throw codedError(BASH_ERROR.invalidRequest, 'interactive commands run only as background tasks (start), never in the foreground (run)')
    }
    let markFinished!: () => void
    // Tracked from before the launch, so that a disposal that starts meanwhile still stops it.
    const active: ActiveRun = { finished: new Promise<void>((resolve) => (markFinished = resolve)) }
    this._activeRuns.add(active)
    try {
      return await this._run(spec, active)
    } finally {
      this._activeRuns.delete(active)
      markFinished()
    }
  }

  private async _run(spec: BashExecSpec, active: ActiveRun): Promise<BashRunResult> {
    const identity: LaunchIdentity = { id: `run-${++this._runSeq}`, kind: 'run', owner: spec.owner }
    const output = this._output(identity.id, spec.owner)
    const startedAt = performance.now()
    const startedAtEpoch = Date.now()
    let launched: LaunchedCommand
    try {
      launched = await this.launch(spec, identity)
    } catch (error) {
      output.dispose()
      throw error
    }
    active.launched = launched
    // Once the run yielded, the task owns the output and the launch: this call releases nothing.
    let yielded = false
    try {
      const drain = output.collect(launched, this.config.drainMs)
      let live = true
      if (spec.onOutput) {
        const listener = spec.onOutput
        // Progress belongs to the call: a yielded command's later output is read with readOutput.
        const forward: OutputListener = (stream, text) => live && listener(stream, text)
        forwardLive(launched.stdout, 'stdout', forward)
        forwardLive(launched.stderr, 'stderr', forward)
      }
      let termination: Promise<void> | undefined
      // The task a yield turned this run into; a `kill` of it that came first wins over the timeout.
      let adopted: TaskEntry | undefined
      const stops = new RunStops(() => {
        if (adopted?.stopRequested) return false
        termination ??= launched.terminate(this.config.graceMs)
        return true
      })
      active.stops = stops
      const cancelTimeout = stopOnTimeout(stops, spec.timeoutMs)
      const detachAbort = stopOnAbort(stops, spec.signal)
      // A disposal that began while the command was being launched.
      if (this.disposing) stopOnDispose(stops)
      const ending = (async () => {
        const exit = await launched.exited
        cancelTimeout()
        detachAbort()
        let leftoverProcesses = 0
        if (!termination) {
          // The main process exited by itself: whatever it left behind is stopped and counted.
          leftoverProcesses = await launched.countLeftovers()
          if (leftoverProcesses > 0) termination = launched.terminate(this.config.graceMs)
        }
        // Escalation to SIGKILL runs to its end even though the main process is gone already.
        await termination
        await drain()
        output.end()
        return { exit, leftoverProcesses }
      })()

      if (spec.yieldAfterMs !== undefined && spec.yieldAfterMs < spec.timeoutMs) {
        // A command already being stopped (timeout, abort, disposal) ends as a foreground call.
        const yieldTime = yieldAfter(stops, spec.yieldAfterMs, () => !this.disposing)
        const first = await Promise.race([ending.then(() => false), yieldTime.yielded])
        yieldTime.cancel()
        if (first) {
          live = false
          detachAbort()
          yielded = true
          const entry = this._adopt(spec, identity, startedAtEpoch, launched, output)
          adopted = entry
          // The timer keeps running: the timeout still counts from the command's start.
          void this._followYielded(entry, ending, () => (stops.timedOut ? `timed out after ${spec.timeoutMs}ms` : undefined))
          const so = output.soFar()
          return {
            id: identity.id,
            exitCode: null,
            signal: null,
            timedOut: false,
            aborted: false,
            timeoutMs: spec.timeoutMs,
            stdout: so.stdout,
            stderr: so.stderr,
            durationMs: Math.round(performance.now() - startedAt),
            leftoverProcesses: 0,
            yieldedTo: entry.view.id,
          }
        }
      }

      const { exit, leftoverProcesses } = await ending
      const lost = launched.lostReason?.()
      if (lost) throw codedError(BASH_ERROR.connectionLost, lost)
      if (stops.cause === 'dispose' || this.disposing) throw codedError(BASH_ERROR.disposed, 'the bash executor was disposed while the command ran')
      const out = output.stdout.result()
      const err = output.stderr.result()
      const result: BashRunResult = {
        id: identity.id,
        exitCode: exit.exitCode,
        signal: exit.signal,
        timedOut: stops.cause === 'timeout',
        aborted: stops.cause === 'abort',
        timeoutMs: spec.timeoutMs,
        stdout: out,
        stderr: err,
        durationMs: Math.round(performance.now() - startedAt),
        leftoverProcesses,
      }
      const sandbox = launched.sandboxFacts?.(exit, err)
      if (sandbox) result.sandbox = sandbox
      // Read before `release` (finally, below) frees what they are read from.
      Object.assign(result, usageFields(launched))
      this._keepRunSpills(output, result)
      return result
    } catch (error) {
      if (!yielded) output.dispose()
      throw error
    } finally {
      if (!yielded) await launched.release()
    }
  }

  /** Turns a running foreground command into a tracked background task (the yield). */
  private _adopt(
    spec: BashExecSpec,
    run: LaunchIdentity,
    startedAt: number,
    launched: LaunchedCommand,
    output: OutputPair,
  ): TaskEntry {
    const task: LaunchIdentity = { id: this._tasks.nextId(), kind: 'task', owner: spec.owner }
    try {
      this.adopted(task, run, launched)
    } catch (error) {
      this.logger.error(`adopting ${run.id} as ${task.id} failed:`, error)
    }
    const entry: TaskEntry = {
      view: new TaskView(task.id, spec.command, spec.workdir, startedAt),
      owner: spec.owner,
      output,
      launched,
      processesGone: false,
      stopRequested: false,
    }
    this._tasks.add(entry)
    return entry
  }

  /**
   * The rest of a yielded run. It ends the way it would have in the foreground (leftovers stopped
   * when the main process exits by itself, its timeout kills it), then finishes as a task.
   */
  private async _followYielded(
    entry: TaskEntry,
    ending: Promise<{ exit: ExitFacts }>,
    timeoutReason: () => string | undefined,
  ): Promise<void> {
    let exit: ExitFacts = { exitCode: null, signal: null }
    let failure: string | undefined
    try {
      ;({ exit } = await ending)
    } catch (error) {
      failure = messageOf(error)
    }
    entry.processesGone = true
    const launched = entry.launched!
    const usage = usageFields(launched)
    try {
      await launched.release()
    } catch (error) {
      this.logger.error(`releasing ${entry.view.id} failed:`, error)
    }
    this._finish(entry, exit, launched.lostReason?.() ?? failure ?? timeoutReason(), (stderr) => launched.sandboxFacts?.(exit, stderr), usage)
  }

  start(spec: BashExecSpec): BashTask {
    const self = unproxied(this)
    if (self !== this) return self.start(spec)
    this._assertUsable(spec)
    if (spec.interactive) this._assertInteractive(spec)
    const id = this._tasks.nextId()
    const entry: TaskEntry = {
      view: new TaskView(id, spec.command, spec.workdir, undefined, spec.interactive === true),
      ...(spec.interactive ? { terminal: new TerminalView() } : {}),
      owner: spec.owner,
      output: this._output(id, spec.owner, spec.interactive === true),
      processesGone: false,
      stopRequested: false,
    }
    let launching: LaunchedCommand | Promise<LaunchedCommand>
    try {
      launching = this.launch(spec, { id, kind: 'task', owner: spec.owner })
    } catch (error) {
      entry.output.dispose()
      entry.terminal?.dispose()
      throw error
    }
    entry.launching = Promise.resolve(launching).then(
      (launched) => launched,
      () => undefined,
    )
    this._tasks.add(entry)
    if (spec.signal) {
      const signal = spec.signal
      const onAbort = () => void this._requestStop(entry)
      signal.addEventListener('abort', onAbort, { once: true })
      entry.detach = () => signal.removeEventListener('abort', onAbort)
    }
    Promise.resolve(launching).then(
      (launched) => this._follow(entry, launched),
      (error: unknown) => this._finish(entry, { exitCode: null, signal: null }, `failed to start: ${messageOf(error)}`),
    )
    return entry.view
  }

  get(id: string): BashTask | undefined {
    const self = unproxied(this)
    if (self !== this) return self.get(id)
    return this._tasks.get(id)?.view
  }

  list(): BashTask[] {
    const self = unproxied(this)
    if (self !== this) return self.list()
    return this._tasks.entries().map((entry) => entry.view)
  }

  ownerOf(id: string): string | undefined {
    const self = unproxied(this)
    if (self !== this) return self.ownerOf(id)
    return this._tasks.get(id)?.owner
  }

  readOutput(id: string): BashTaskRead {
    const self = unproxied(this)
    if (self !== this) return self.readOutput(id)
    const entry = this._tasks.get(id)
    if (!entry) throw unknownTaskError(id)
    if (!entry.terminal) return { task: entry.view, ...entry.output.read() }
    // An interactive task reads as its terminal shows it; the collector only keeps the raw stream (spill file).
    const out = entry.terminal.read()
    const spillPaths: BashTaskRead['spillPaths'] = {}
    if (entry.output.stdout.spillPath) spillPaths.stdout = entry.output.stdout.spillPath
    return { task: entry.view, delta: out.text, streams: { stdout: out.text, stderr: '' }, screen: out.screen, lossy: out.lossy, spillPaths }
  }

  async kill(id: string): Promise<boolean> {
    const self = unproxied(this)
    if (self !== this) return self.kill(id)
    const entry = this._tasks.get(id)
    if (!entry) throw unknownTaskError(id)
    const stoppedByThisCall = this._requestStop(entry)
    await entry.view.done
    return stoppedByThisCall
  }

  async write(id: string, data: string | Uint8Array): Promise<void> {
    const self = unproxied(this)
    if (self !== this) return self.write(id, data)
    const entry = this._interactiveEntry(id)
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    const launched = await this._liveTerminal(entry)
    try {
      await launched.write!(bytes)
    } catch (error) {
      // The terminal closed under the write: the task is ending; report it as finished once it has.
      await Promise.race([entry.view.done, sleep(this.config.drainMs)])
      if (entry.view.status !== 'running') throw taskFinishedError(id, taskStatusText(entry.view))
      throw error
    }
  }

  async resize(id: string, cols: number, rows: number): Promise<void> {
    const self = unproxied(this)
    if (self !== this) return self.resize(id, cols, rows)
    for (const [name, value] of [['cols', cols], ['rows', rows]] as const) {
      if (!Number.isInteger(value) || value < 2 || value > 1000) {
        throw codedError(BASH_ERROR.invalidRequest, `invalid ${name}: expected an integer from 2 to 1000, got ${JSON.stringify(value ?? null)}`)
      }
    }
    const entry = this._interactiveEntry(id)
    const launched = await this._liveTerminal(entry)
    if (!launched.resize) throw codedError(BASH_ERROR.invalidRequest, `task ${id}: this executor cannot resize its terminal`)
    launched.resize(cols, rows)
    entry.terminal!.resize(cols, rows)
  }

  /**
   * The terminal's modes of a running interactive task, from the backend (`LaunchedCommand.terminalModes`);
   * undefined when the backend cannot tell. Same errors as `write`.
   */
  async terminalModes(id: string): Promise<TerminalModes | undefined> {
    const self = unproxied(this)
    if (self !== this) return self.terminalModes(id)
    const entry = this._interactiveEntry(id)
    const launched = await this._liveTerminal(entry)
    if (!launched.terminalModes) return undefined
    try {
      return await launched.terminalModes()
    } catch {
      // A backend that broke its "never rejects": it could not tell.
      return undefined
    }
  }

  /** Kills every running task and foreground command, waits until they are gone, removes spill files. */
  shutdown(): Promise<void> {
    this._shutdown ??= this._doShutdown()
    return this._shutdown
  }

  private async _doShutdown(): Promise<void> {
    this.beginDisposal()
    const waits: Promise<unknown>[] = []
    for (const entry of this._tasks.entries()) {
      this._requestStop(entry)
      waits.push(entry.view.done)
    }
    for (const run of this._activeRuns) {
      // A run still launching stops itself once its launch resolves (it sees `disposing`).
      if (run.stops) stopOnDispose(run.stops)
      waits.push(run.finished)
    }
    await Promise.all(waits)
    for (const entry of this._tasks.entries()) {
      entry.output.dispose()
      entry.terminal?.dispose()
    }
    for (const run of this._runSpills) run.output.dispose()
    this._runSpills.length = 0
    await this.disposeBackend()
    if (!this.config.keepSpillFiles) rmSync(this.spillDir, { recursive: true, force: true })
  }

  /** Returns true when this request is the one that stops a still-running task. */
  private _requestStop(entry: TaskEntry): boolean {
    if (entry.view.status !== 'running' || entry.processesGone || entry.stopRequested) return false
    entry.stopRequested = true
    if (entry.launched) entry.termination = entry.launched.terminate(this.config.graceMs)
    return true
  }

  private async _follow(entry: TaskEntry, launched: LaunchedCommand): Promise<void> {
    entry.launched = launched
    if (entry.terminal) this._attachTerminal(entry, launched)
    if (entry.stopRequested) entry.termination = launched.terminate(this.config.graceMs)
    const drain = entry.output.collect(launched, this.config.drainMs)
    const exit = await launched.exited
    // A background task is over when none of its processes are left, not when the shell exits.
    await launched.whenEmpty()
    entry.processesGone = true
    await entry.termination
    await drain()
    const usage = usageFields(launched)
    try {
      await launched.release()
    } catch (error) {
      // The task is over all the same; a leaked resource must not leave it running forever.
      this.logger.error(`releasing ${entry.view.id} failed:`, error)
    }
    // Sandbox facts ride on the task, set before `done` and the listeners (as on a foreground result).
    this._finish(entry, exit, launched.lostReason?.() ?? entry.failure, (stderr) => launched.sandboxFacts?.(exit, stderr), usage)
  }

  private _finish(
    entry: TaskEntry,
    exit: ExitFacts,
    reason?: string,
    facts?: (stderr: CollectedOutput) => SandboxFacts | undefined,
    usage?: ResourceFacts,
  ): void {
    entry.detach?.()
    entry.output.end()
    const killed = entry.stopRequested || exit.signal !== null || reason !== undefined
    const sandbox = reason === undefined ? facts?.(entry.output.stderr.result()) : undefined
    if (!entry.view.end(killed ? 'killed' : 'completed', exit.exitCode, exit.signal, reason, sandbox, usage)) return
    this.emitTaskDone(entry.view)
    this._evict()
  }

  private _evict(): void {
    if (this.disposing) return
    for (const entry of this._tasks.evictFinished(this.config.maxFinishedTasks)) {
      entry.output.dispose()
      entry.terminal?.dispose()
    }
  }

  private _keepRunSpills(output: OutputPair, result: BashRunResult): void {
    if (!output.spilled) {
      output.dispose()
      return
    }
    this._runSpills.push({ output, ended: { exitCode: result.exitCode, signal: result.signal, timedOut: result.timedOut } })
    while (this._runSpills.length > this.config.maxFinishedTasks) this._runSpills.shift()!.output.dispose()
  }

  readFullOutput(ref: FullOutputRef, range: ByteRange, owner: string | undefined): FullOutputRead {
    const self = unproxied(this)
    if (self !== this) return self.readFullOutput(ref, range, owner)
    const what = 'path' in ref ? JSON.stringify(String(ref.path)) : `${JSON.stringify(String(ref.id))} (${ref.stream ?? 'stdout'})`
    const found = this._findOutput(ref, owner)
    if (!found) throw noFullOutputError(what)
    const collector = found.output[found.stream]
    const offset = Math.max(0, Math.floor(range.offset))
    const length = Math.max(0, Math.min(Math.floor(range.length), MAX_FULL_OUTPUT_READ))
    const data = collector.readRange(offset, length)
    if (!data) throw noFullOutputError(what)
    const read: FullOutputRead = { id: found.id, stream: found.stream, size: collector.totalBytes, complete: collector.ended, data }
    if (found.task) read.task = found.task
    if (found.ended) read.run = { ...found.ended }
    return read
  }

  fullOutputs(owner: string | undefined): FullOutputInfo[] {
    const self = unproxied(this)
    if (self !== this) return self.fullOutputs(owner)
    const infos: FullOutputInfo[] = []
    for (const { id, output } of this._keptOutputs()) {
      if (!mayRead(output, owner)) continue
      for (const stream of ['stdout', 'stderr'] as const) {
        const collector = output[stream]
        if (collector.readRange(0, 0) !== undefined && collector.totalBytes > 0) infos.push({ id, stream, size: collector.totalBytes, complete: collector.ended })
      }
    }
    return infos
  }

  /** Every launch whose output the executor still holds: kept foreground runs, then tasks (oldest first). */
  private *_keptOutputs(): Generator<{ id: string; output: OutputPair; task?: BashTask; ended?: Pick<BashRunResult, 'exitCode' | 'signal' | 'timedOut'> }> {
    for (const run of this._runSpills) yield { id: run.output.label, output: run.output, ended: run.ended }
    for (const entry of this._tasks.entries()) yield { id: entry.view.id, output: entry.output, task: entry.view }
  }

  /** The kept output a ref names, if `owner` may read it. A yielded run answers to its run id and its task id. */
  private _findOutput(ref: FullOutputRef, owner: string | undefined) {
    for (const kept of this._keptOutputs()) {
      if (!mayRead(kept.output, owner)) continue
      if ('path' in ref) {
        for (const stream of ['stdout', 'stderr'] as const) {
          if (typeof ref.path === 'string' && kept.output[stream].spillPath === ref.path) return { ...kept, stream }
        }
      } else if (ref.id === kept.id || ref.id === kept.output.label) {
        return { ...kept, stream: ref.stream === 'stderr' ? ('stderr' as const) : ('stdout' as const) }
      }
    }
    return undefined
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

  // ---- Interactive tasks (a pseudo-terminal): kept together, apart from the rest of the table. ----

  /** `start` of an interactive spec: the backend must support terminals, and stdin is the terminal. */
  private _assertInteractive(spec: BashExecSpec): void {
    if (!this.supportsInteractive) throw interactiveUnsupportedError(this.constructor.name)
    if (spec.stdin !== undefined) throw codedError(BASH_ERROR.invalidRequest, 'invalid request: stdin cannot be given to an interactive command (its input is the terminal)')
  }

  /**
   * Feeds the raw terminal stream into the task's terminal view, every chunk as it arrives (the
   * collector keeps the raw stream for the spill file). A backend that gave no terminal for an
   * interactive spec is a bug there: the command is stopped rather than run without one.
   */
  private _attachTerminal(entry: TaskEntry, launched: LaunchedCommand): void {
    const terminal = entry.terminal!
    if (!launched.terminal || typeof launched.write !== 'function') {
      entry.failure = 'failed to start: the executor gave the interactive command no terminal'
      entry.stopRequested = true
      entry.termination = launched.terminate(this.config.graceMs)
      return
    }
    launched.stdout.on('data', (chunk: Buffer) => terminal.write(chunk))
  }

  /** The task for `write`/`resize`: unknown id, not interactive, or finished are coded errors. */
  private _interactiveEntry(id: string): TaskEntry {
    const entry = this._tasks.get(id)
    if (!entry) throw unknownTaskError(id)
    if (!entry.terminal) throw notInteractiveError(id)
    if (entry.view.status !== 'running') throw taskFinishedError(id, taskStatusText(entry.view))
    return entry
  }

  /** The launched command of a running interactive task, once its launch settled; a finished task is an error. */
  private async _liveTerminal(entry: TaskEntry): Promise<LaunchedCommand> {
    const launched = entry.launched ?? (await entry.launching)
    if (!launched || entry.processesGone || entry.failure) {
      // Its end is only a drain away: report the final status.
      await entry.view.done
      throw taskFinishedError(entry.view.id, taskStatusText(entry.view))
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

/**
 * The backend's resource facts as result fields, only those it measured (absent, never zero). A
 * throwing backend measured nothing: the result stands without them.
 */
function usageFields(launched: LaunchedCommand): ResourceFacts {
  let facts: ResourceFacts | undefined
  try {
    facts = launched.resourceFacts?.()
  } catch {
    return {}
  }
  return {
    ...(facts?.cpuMs !== undefined ? { cpuMs: facts.cpuMs } : {}),
    ...(facts?.peakMemoryBytes !== undefined ? { peakMemoryBytes: facts.peakMemoryBytes } : {}),
    ...(facts?.limitReached && Object.keys(facts.limitReached).length > 0 ? { limitReached: facts.limitReached } : {}),
  }
}
