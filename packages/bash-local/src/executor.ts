import { randomBytes } from 'node:crypto'
import { closeSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Context } from 'cordis'
import { BASH_ERROR, type BashExecSpec, codedError, type ExecutorCapabilities, messageOf, TERMINAL_ENV, TERMINAL_TERM } from '@deepseek-ai/dsh-bash'
import {
  BASH_ENV_NEXT_VARIABLE as BASH_ENV_NEXT,
  buildEnvironment,
  type LaunchedCommand,
  type LaunchIdentity,
  ProcessExecutor,
} from '@deepseek-ai/dsh-bash-kit'
import { CgroupManager, type CgroupTracker } from './cgroup.js'
import { findExecutable, type LocalExecutorConfig, type LocalExecutorConfigInput, parseLocalConfig } from './config.js'
import { LauncherHelper, nativeHelperPath } from './helper-launch.js'
import { checkWorkdir, spawnPlan, writeScript } from './launch.js'
import { MarkerTracker } from './marker.js'
import { ProcessGroupTracker } from './pgroup.js'
import { closePipe, FifoPipePool, type PipeEnds } from './pipes.js'
import { launcherScript, preludeScript } from './prelude.js'
import { spawnPtyPlan } from './pty.js'
import type { CommandLine } from './command-line.js'
import { CleanedUpCommand, type LaunchTransform, runCleanup, type TransformedLaunch } from './transform.js'
import { type CommandResources, ResourceControl } from './limits.js'
import { hasProc } from './proc.js'
import type { ContainmentKind, ProcessTracker } from './tracker.js'

/**
 * The kernel refuses a single argument of 128 KiB or more (MAX_ARG_STRLEN, with its NUL): a longer
 * script is handed to bash as a private file instead of `-c`.
 */
export const MAX_ARGUMENT_BYTES = 128 * 1024 - 1

/**
 * The local executor: each command is `bash --noprofile --norc -c <command>` in a new session and
 * process group, tracked by a per-command cgroup where possible (see `containment`).
 */
const LOCAL_CAPABILITIES: ExecutorCapabilities = Object.freeze({
  sandboxModes: [],
  interactive: true,
  resize: true,
  paths: 'host',
  limits: [],
  networkModes: [],
})

export class LocalExecutor extends ProcessExecutor {
  static readonly inject: string[] = []
  protected readonly localConfig: LocalExecutorConfig
  /** Absolute path of the shell. */
  protected readonly shellPath: string
  /** The containment strategy in use. */
  readonly containment: ContainmentKind
  /** Why a better containment strategy is not in use (empty when cgroups are used). */
  readonly containmentNote: string
  /** What the command's stdout and stderr are: real pipes (`fifo`), or Node's socketpairs (`socket`). */
  readonly outputPipes: 'fifo' | 'socket'
  /** Why `outputPipes` is `socket` when `auto` was asked for (empty otherwise). */
  readonly outputPipesNote: string
  private readonly cgroups?: CgroupManager
  /** The limits of every command, and how each is enforced here (see limits.ts). */
  readonly resources: ResourceControl
  private readonly pipePool?: FifoPipePool
  private readonly preludePath: string
  /** The launcher helper unless `launcher` is `spawn` (started at the first command). */
  private readonly helper?: LauncherHelper
  /**
   * Who forks the commands (see the `launcher` config): this event loop (`spawn`), the native helper
   * (`helper-native`) or the Node helper (`helper-node`). Never `helper`: that choice is resolved here.
   */
  readonly launcher: 'spawn' | 'helper-native' | 'helper-node'
  private pipeFailureLogged = false
  /** The scrubbed, non-interactive inherited environment (computed at the first command). */
  private inheritedEnv?: Readonly<Record<string, string>>
  /** The command-line transform composed with this launcher (the sandbox), fixed at construction. */
  private readonly transform?: LaunchTransform

  /**
   * `transform` (for executors built on this one, such as the sandbox) rewrites every command line
   * before it is launched, or refuses it; see `LaunchTransform`.
   */
  constructor(ctx: Context, config: LocalExecutorConfigInput = {}, transform?: LaunchTransform) {
    const parsed = parseLocalConfig(config)
    if (parsed.limits.tmp !== undefined && !transform) {
      throw codedError(BASH_ERROR.invalidConfig, 'invalid local executor config: limits.tmp needs a private /tmp, which only the sandbox executor makes')
    }
    const shellPath = findExecutable(parsed.shell)
    const choice = chooseContainment(parsed.containment)
    // Before super: the base constructor publishes the service, and a plugin that injects it
    // (tool-bash) reads `capabilities`, whose limits come from these mechanisms, at once.
    const resources = ResourceControl.create(parsed.limits, choice.manager)
    LocalExecutor.constructing = resources
    try {
      super(ctx, parsed)
    } catch (error) {
      resources.dispose()
      choice.manager?.dispose()
      throw error
    } finally {
      LocalExecutor.constructing = undefined
    }
    this.resources = resources
    this.localConfig = parsed
    this.shellPath = shellPath
    this.containment = choice.kind
    this.containmentNote = choice.note
    this.cgroups = choice.manager
    this.transform = transform
    if (this.resources.note) this.logger.info(`resource limits: ${this.resources.note}`)
    this.preludePath = join(this.spillDir, 'prelude.sh')
    writeFileSync(this.preludePath, preludeScript(), { mode: 0o600, flag: 'wx' })
    let pipes: ReturnType<typeof choosePipes>
    try {
      pipes = choosePipes(parsed.outputPipes, dirname(this.spillDir))
    } catch (error) {
      // Registered already (super): leave nothing behind.
      this.resources.dispose()
      this.cgroups?.dispose()
      rmSync(this.spillDir, { recursive: true, force: true })
      throw error
    }
    this.outputPipes = pipes.kind
    this.outputPipesNote = pipes.note
    this.pipePool = pipes.pool
    const nativePath = parsed.launcher === 'helper' || parsed.launcher === 'helper-native' ? nativeHelperPath() : undefined
    if (parsed.launcher === 'helper-native' && !nativePath) {
      this.resources.dispose()
      this.cgroups?.dispose()
      this.pipePool?.dispose()
      rmSync(this.spillDir, { recursive: true, force: true })
      throw codedError(BASH_ERROR.invalidConfig, `launcher "helper-native" is not available: no native helper ships for ${process.platform}-${process.arch}, or it is not executable`)
    }
    this.launcher = parsed.launcher === 'spawn' ? 'spawn' : nativePath ? 'helper-native' : 'helper-node'
    if (this.launcher !== 'spawn') {
      const helper = nativePath ? new LauncherHelper('native', nativePath) : new LauncherHelper('node')
      this.helper = helper
      // The helper makes the pool's FIFOs too: then this event loop never forks, bursts included.
      this.pipePool?.useMaker((mkfifo, paths) => helper.mkfifo(mkfifo, paths))
    }
  }

  /** The bash command line for a spec (before any transform). */
  protected commandLine(spec: BashExecSpec, scriptPath: string | undefined): CommandLine {
    const args = scriptPath ? ['--noprofile', '--norc', scriptPath] : ['--noprofile', '--norc', '-c', spec.command]
    return { file: this.shellPath, args, joinsThroughBashEnv: true }
  }

  protected launch(spec: BashExecSpec, launch: LaunchIdentity): Promise<LaunchedCommand> {
    checkWorkdir(spec.workdir)
    const label = launch.id
    let scriptPath: string | undefined
    if (Buffer.byteLength(spec.command) > MAX_ARGUMENT_BYTES) {
      scriptPath = join(this.ownerSpillDir(spec.owner), `dsh-bash-${label}-script.sh`)
      writeScript(scriptPath, spec.command)
    }
    let tracker: ProcessTracker | undefined
    let resources: CommandResources | undefined
    let line: CommandLine
    let transformed: TransformedLaunch | undefined
    try {
      line = this.commandLine(spec, scriptPath)
      if (this.transform) {
        const executorDirs = this.pipePool ? [this.spillDir, this.pipePool.dir] : [this.spillDir]
        const result = this.transform({ spec, label, line, privateDir: this.spillDir, ownerDir: this.ownerSpillDir(spec.owner), executorDirs })
        if (result.kind === 'refused') throw codedError(result.code ?? BASH_ERROR.startFailed, result.reason)
        transformed = result
        line = result.line
      }
      tracker = this.tracker(label)
      resources = this.resources.forCommand(label, tracker.kind === 'cgroup' ? (tracker as CgroupTracker).dir : undefined)
    } catch (error) {
      // Nothing was started: leave no script file, no cgroup, no descriptor and no guard behind.
      tracker?.release()
      if (scriptPath) rmSync(scriptPath, { force: true })
      if (transformed) {
        closeFds(transformed.line.extraFds ?? [])
        runCleanup(transformed.cleanup, this.logger)
      }
      throw error
    }
    // A trusted caller's variables win over the inherited ones and the non-interactive defaults…
    // The scrubbed inherited environment is computed once per executor (at its first command):
    // rebuilding it per call cost a measurable share of a `true` call.
    this.inheritedEnv ??= buildEnvironment(process.env, { secretPatterns: this.config.secretEnvPatterns })
    // An interactive task also gets the terminal's TERM and the pagers' secure modes (TERMINAL_ENV).
    const env: Record<string, string> = { ...this.inheritedEnv, ...(spec.interactive ? TERMINAL_ENV : {}), ...spec.env }
    // …but not over the executor's own control variables: a caller's BASH_ENV or marker must not
    // switch off containment (the command would escape its cgroup and survive every kill).
    Object.assign(env, tracker.env, resources.env)
    // A terminal for an interactive command: programs may draw (the terminal view reads it).
    if (spec.interactive) env.TERM = TERMINAL_TERM
    let file = line.file
    let args = line.args
    if (line.joinsThroughBashEnv) {
      // The prelude sources the caller's BASH_ENV, if any, once the cgroup is joined.
      if (env.BASH_ENV !== undefined) env[BASH_ENV_NEXT] = env.BASH_ENV
      env.BASH_ENV = this.preludePath
    } else {
      // The launcher runs outside any sandbox: it must not source the caller's BASH_ENV; it gives it back.
      if (env.BASH_ENV !== undefined) env[BASH_ENV_NEXT] = env.BASH_ENV
      delete env.BASH_ENV
      args = ['--noprofile', '--norc', '-c', launcherScript(line.extraFds?.length ?? 0), 'dsh-bash', file, ...args]
      file = this.shellPath
    }
    const plan = {
      file,
      args,
      cwd: spec.workdir,
      env,
      stdin: spec.stdin,
      tracker,
      cleanup: scriptPath ? [scriptPath] : [],
      resources,
      monitor: line.monitor === true,
      extraFds: line.extraFds,
    }
    const launching = spec.interactive
      ? spawnPtyPlan(plan, this.setsidPath(), this.sttyPath())
      : this.takePipes().then((pipes) => {
          const full = { ...plan, pipes }
          return this.helper && LauncherHelper.canUse(full) ? this.helper.launch(full) : spawnPlan(full)
        })
    if (!transformed) return launching
    const { adapt, cleanup } = transformed
    return launching.then(
      (launched) => new CleanedUpCommand(adapt ? adapt(launched) : launched, cleanup, this.logger),
      (error: unknown) => {
        runCleanup(cleanup, this.logger)
        throw error
      },
    )
  }

  /**
   * Two real pipes from the pool, or undefined for Node's socketpairs: when the pool cannot make
   * pipes any more (its directory removed by a temp cleaner, a full file table), the command still
   * runs, with sockets, and the failure is logged once.
   */
  private async takePipes(): Promise<{ stdout: PipeEnds; stderr: PipeEnds } | undefined> {
    if (!this.pipePool) return undefined
    let stdout: PipeEnds | undefined
    try {
      stdout = await this.pipePool.take()
      return { stdout, stderr: await this.pipePool.take() }
    } catch (error) {
      if (stdout) closePipe(stdout)
      if (!this.pipeFailureLogged) {
        this.pipeFailureLogged = true
        this.logger.warn(`real pipes failed, commands get sockets for stdout and stderr: ${messageOf(error)}`)
      }
      return undefined
    }
  }

  /**
   * Commands run here, on this machine's paths, without confinement; interactive ones in a
   * pseudo-terminal (`@lydell/node-pty`'s openpty and util-linux `setsid --ctty`; see pty.ts),
   * which can be resized; the limits its machine lets it enforce (ResourceControl.enforceable).
   */
  get capabilities(): ExecutorCapabilities {
    // `resources` is unset while super() runs; the one being built is in `constructing` then.
    const resources = this.resources ?? LocalExecutor.constructing!
    this._capabilities ??= Object.freeze({ ...LOCAL_CAPABILITIES, limits: Object.freeze(resources.enforceable()) })
    return this._capabilities
  }

  private _capabilities?: ExecutorCapabilities
  /** The resource control of the executor whose super() is running (constructors run one at a time). */
  private static constructing?: ResourceControl

  private setsid?: string

  /** util-linux `setsid`, found at the first interactive launch; its absence is a clear start failure. */
  private setsidPath(): string {
    if (this.setsid) return this.setsid
    try {
      this.setsid = findExecutable('setsid')
    } catch {
      throw codedError(BASH_ERROR.startFailed, 'interactive commands need the setsid program (util-linux), which was not found in PATH')
    }
    return this.setsid
  }

  private stty?: string | null

  /**
   * coreutils `stty`, which reads an interactive task's terminal modes (pty.ts); null when it is
   * not in PATH: the modes are then unknown (`terminalModes` answers undefined), nothing fails.
   */
  private sttyPath(): string | undefined {
    if (this.stty === undefined) this.stty = findExecutableOrUndefined('stty') ?? null
    return this.stty ?? undefined
  }

  protected async disposeBackend(): Promise<void> {
    await this.helper?.dispose()
    this.resources.dispose()
    this.cgroups?.dispose()
    this.pipePool?.dispose()
  }

  private tracker(label: string): ProcessTracker {
    if (this.cgroups) return this.cgroups.tracker(label)
    // Unique across executors too (two executors in one process both have a `bash-1`).
    if (this.containment === 'marker') return new MarkerTracker(`${process.pid}-${label}-${randomBytes(8).toString('hex')}`)
    return new ProcessGroupTracker()
  }
}

function closeFds(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd)
    } catch {
      // Already closed.
    }
  }
}

function choosePipes(wanted: LocalExecutorConfig['outputPipes'], parent: string): {
  kind: 'fifo' | 'socket'
  note: string
  pool?: FifoPipePool
} {
  if (wanted === 'socket') return { kind: 'socket', note: '' }
  const { pool, reason } = FifoPipePool.create(parent, findExecutableOrUndefined('mkfifo'))
  if (pool) return { kind: 'fifo', note: '', pool }
  if (wanted === 'fifo') throw codedError(BASH_ERROR.invalidConfig, `outputPipes "fifo" is not available: ${reason}`)
  return { kind: 'socket', note: `no real pipes (commands cannot open /dev/stdout): ${reason}` }
}

function findExecutableOrUndefined(name: string): string | undefined {
  try {
    return findExecutable(name)
  } catch {
    return undefined
  }
}

function chooseContainment(wanted: LocalExecutorConfig['containment']): {
  kind: ContainmentKind
  note: string
  manager?: CgroupManager
} {
  const notes: string[] = []
  if (wanted === 'auto' || wanted === 'cgroup') {
    const { manager, reason } = CgroupManager.create()
    if (manager) return { kind: 'cgroup', note: '', manager }
    if (wanted === 'cgroup') throw codedError(BASH_ERROR.invalidConfig, `containment "cgroup" is not available: ${reason}`)
    notes.push(`no cgroup: ${reason}`)
  }
  if (wanted === 'auto' || wanted === 'marker') {
    if (hasProc()) return { kind: 'marker', note: notes.join('; ') }
    if (wanted === 'marker') throw codedError(BASH_ERROR.invalidConfig, 'containment "marker" is not available: /proc is not mounted')
    notes.push('no /proc')
  }
  return { kind: 'pgroup', note: notes.join('; ') }
}
