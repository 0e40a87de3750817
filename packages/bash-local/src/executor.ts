import { randomBytes } from 'node:crypto'
import { closeSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Context } from 'cordis'
import type { BashExecSpec } from '@deepseek-ai/dsh-bash'
import {
  BASH_ENV_NEXT_VARIABLE as BASH_ENV_NEXT,
  buildEnvironment,
  CGROUP_VARIABLE,
  type LaunchedCommand,
  ProcessExecutor,
} from '@deepseek-ai/dsh-bash-kit'
import { CgroupManager } from './cgroup.js'
import { findExecutable, type LocalExecutorConfig, type LocalExecutorConfigInput, parseLocalConfig } from './config.js'
import { checkWorkdir, spawnPlan, writeScript } from './launch.js'
import { MarkerTracker } from './marker.js'
import { ProcessGroupTracker } from './pgroup.js'
import { CleanedUpCommand, type LaunchTransform, runCleanup, type TransformedLaunch } from './transform.js'
import { hasProc } from './proc.js'
import type { ContainmentKind, ProcessTracker } from './tracker.js'

/**
 * The kernel refuses a single argument of 128 KiB or more (MAX_ARG_STRLEN, with its NUL): a longer
 * script is handed to bash as a private file instead of `-c`.
 */
export const MAX_ARGUMENT_BYTES = 128 * 1024 - 1

/** What to execute for one command. */
export interface CommandLine {
  file: string
  args: string[]
  /**
   * True when `file` is bash itself, which joins its cgroup through the BASH_ENV prelude before it
   * runs anything. False for wrappers (bwrap, …): they are started through a `/bin/sh` launcher
   * that joins the cgroup and then execs them.
   */
  joinsThroughBashEnv: boolean
  /**
   * True when `file` is a monitor that ends by itself when the command's main process does and
   * forwards no signal (bwrap). Termination then sends SIGTERM to the other processes only, so
   * that the command can handle it (the monitor then reports its exit), and SIGKILL to everything
   * after the grace period. Default false: SIGTERM goes to every process, `file` included.
   */
  monitor?: boolean
  /**
   * Open file descriptors given to `file` as fd 3, 4, … (a wrapper's status file). The executor
   * closes its own copies once the process is spawned, or failed to spawn.
   */
  extraFds?: number[]
}

/**
 * The local executor: each command is `bash --noprofile --norc -c <command>` in a new session and
 * process group, tracked by a per-command cgroup where possible (see `containment`).
 */
export class LocalExecutor extends ProcessExecutor {
  static readonly inject: string[] = []
  protected readonly localConfig: LocalExecutorConfig
  /** Absolute path of the shell. */
  protected readonly shellPath: string
  /** The containment strategy in use. */
  readonly containment: ContainmentKind
  /** Why a better containment strategy is not in use (empty when cgroups are used). */
  readonly containmentNote: string
  private readonly cgroups?: CgroupManager
  private readonly preludePath: string
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
    const shellPath = findExecutable(parsed.shell)
    const choice = chooseContainment(parsed.containment)
    super(ctx, parsed)
    this.localConfig = parsed
    this.shellPath = shellPath
    this.containment = choice.kind
    this.containmentNote = choice.note
    this.cgroups = choice.manager
    this.transform = transform
    this.preludePath = join(this.spillDir, 'join-cgroup.sh')
    writeFileSync(
      this.preludePath,
      [
        '# dsh-bash: join this command\'s cgroup before anything runs, so nothing it starts can escape the kill.',
        `if [ -n "\${${CGROUP_VARIABLE}-}" ]; then`,
        `  if ! echo 0 2>/dev/null >"\$${CGROUP_VARIABLE}/cgroup.procs"; then echo "dsh-bash: cannot join cgroup \$${CGROUP_VARIABLE}" >&2; exit 125; fi`,
        'fi',
        `unset ${CGROUP_VARIABLE}`,
        `if [ -n "\${${BASH_ENV_NEXT}+set}" ]; then export BASH_ENV="\$${BASH_ENV_NEXT}"; unset ${BASH_ENV_NEXT}; . "\$BASH_ENV"; else unset BASH_ENV; fi`,
        '',
      ].join('\n'),
      { mode: 0o600, flag: 'wx' },
    )
  }

  /** The bash command line for a spec (before any transform). */
  protected commandLine(spec: BashExecSpec, scriptPath: string | undefined): CommandLine {
    const args = scriptPath ? ['--noprofile', '--norc', scriptPath] : ['--noprofile', '--norc', '-c', spec.command]
    return { file: this.shellPath, args, joinsThroughBashEnv: true }
  }

  protected launch(spec: BashExecSpec, label: string): Promise<LaunchedCommand> {
    checkWorkdir(spec.workdir)
    let scriptPath: string | undefined
    if (Buffer.byteLength(spec.command) > MAX_ARGUMENT_BYTES) {
      scriptPath = join(this.spillDir, `dsh-bash-${label}-script.sh`)
      writeScript(scriptPath, spec.command)
    }
    let tracker: ProcessTracker | undefined
    let line: CommandLine
    let transformed: TransformedLaunch | undefined
    try {
      line = this.commandLine(spec, scriptPath)
      if (this.transform) {
        const result = this.transform({ spec, label, line, privateDir: this.spillDir })
        if (result.kind === 'refused') throw new Error(result.reason)
        transformed = result
        line = result.line
      }
      tracker = this.tracker(label)
    } catch (error) {
      // Nothing was started: leave no script file, no cgroup, no descriptor and no guard behind.
      tracker?.release()
      if (scriptPath) rmSync(scriptPath, { force: true })
      if (transformed) {
        closeFds(transformed.line.extraFds ?? [])
        runCleanup(transformed.cleanup)
      }
      throw error
    }
    // A trusted caller's variables win over the inherited ones and the non-interactive defaults…
    // The scrubbed inherited environment is computed once per executor (at its first command):
    // rebuilding it per call cost a measurable share of a `true` call.
    this.inheritedEnv ??= buildEnvironment(process.env, { secretPatterns: this.config.secretEnvPatterns })
    const env: Record<string, string> = { ...this.inheritedEnv, ...spec.env }
    // …but not over the executor's own control variables: a caller's BASH_ENV or marker must not
    // switch off containment (the command would escape its cgroup and survive every kill).
    Object.assign(env, tracker.env)
    let file = line.file
    let args = line.args
    if (tracker.kind === 'cgroup') {
      if (line.joinsThroughBashEnv) {
        // The prelude sources the caller's BASH_ENV, if any, once the cgroup is joined.
        if (env.BASH_ENV !== undefined) env[BASH_ENV_NEXT] = env.BASH_ENV
        env.BASH_ENV = this.preludePath
      } else {
        args = ['-c', `echo 0 >"$${CGROUP_VARIABLE}/cgroup.procs" || exit 125; unset ${CGROUP_VARIABLE}; exec "$@"`, 'dsh-bash', file, ...args]
        file = '/bin/sh'
      }
    }
    const launching = spawnPlan({
      file,
      args,
      cwd: spec.workdir,
      env,
      stdin: spec.stdin,
      tracker,
      cleanup: scriptPath ? [scriptPath] : [],
      monitor: line.monitor === true,
      extraFds: line.extraFds,
    })
    if (!transformed) return launching
    const { adapt, cleanup } = transformed
    return launching.then(
      (launched) => new CleanedUpCommand(adapt ? adapt(launched) : launched, cleanup),
      (error: unknown) => {
        runCleanup(cleanup)
        throw error
      },
    )
  }

  protected async disposeBackend(): Promise<void> {
    this.cgroups?.dispose()
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

function chooseContainment(wanted: LocalExecutorConfig['containment']): {
  kind: ContainmentKind
  note: string
  manager?: CgroupManager
} {
  const notes: string[] = []
  if (wanted === 'auto' || wanted === 'cgroup') {
    const { manager, reason } = CgroupManager.create()
    if (manager) return { kind: 'cgroup', note: '', manager }
    if (wanted === 'cgroup') throw new Error(`containment "cgroup" is not available: ${reason}`)
    notes.push(`no cgroup: ${reason}`)
  }
  if (wanted === 'auto' || wanted === 'marker') {
    if (hasProc()) return { kind: 'marker', note: notes.join('; ') }
    if (wanted === 'marker') throw new Error('containment "marker" is not available: /proc is not mounted')
    notes.push('no /proc')
  }
  return { kind: 'pgroup', note: notes.join('; ') }
}
