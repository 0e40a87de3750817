import { realpathSync, statSync } from 'node:fs'
import { constants as osConstants } from 'node:os'
import { join, resolve as resolvePath } from 'node:path'
import { PassThrough, type Readable } from 'node:stream'
import type { Context } from 'cordis'
import type { BashExecRequest, BashExecSpec, BashRunResult, BashTask, CollectedOutput, SandboxFacts } from '@deepseek-ai/dsh-bash'
import type { ExitFacts, LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { type CommandLine, isLive, LocalExecutor, type LocalExecutorConfigInput } from '@deepseek-ai/dsh-bash-local'
import {
  bwrapArgs,
  bwrapSaid,
  type ConfinedMode,
  gitProtections,
  lookupExecutable,
  probeBwrap,
  readStatus,
  openStatusFile,
  removeFile,
} from './bwrap.js'
import {
  checkRequestedMode,
  parseSandboxConfig,
  SANDBOX_KEYS,
  type SandboxExecutorConfig,
  type SandboxExecutorConfigInput,
  type SandboxModeName,
  widerModes,
} from './config.js'
import { showsDeniedWrite } from './denial.js'

/** The start of every refusal when the sandbox cannot work on this machine. */
export const UNAVAILABLE_PREFIX = 'the sandbox is unavailable, so no command was run'

/** What the launch of one confined command hands to `commandLine` (called synchronously inside it). */
interface PendingLaunch {
  mode: ConfinedMode
  statusPath: string
}

/**
 * The sandbox executor: the local executor with every command confined by bubblewrap.
 *
 * - `read-only`: the host's file system read-only, a private /tmp, /dev and /proc; writes succeed
 *   only in /dev/null (and the other harmless /dev nodes) and the private /tmp.
 * - `workspace-write`: the same, plus the workspace root writable, its git hooks and config read-only.
 * - `danger-full-access`: no confinement: exactly the local executor's command line.
 *
 * A new PID namespace and session; the network namespace is private unless `network` is on. bwrap is
 * started like any wrapper by the local executor (through its `/bin/sh` launcher that joins the
 * per-command cgroup when there is one), so its containment still covers every process of the command.
 */
export class SandboxExecutor extends LocalExecutor {
  static readonly inject: string[] = []
  /** The validated config, sandbox keys included. */
  readonly sandboxConfig: SandboxExecutorConfig
  /** Physical path of the workspace root. */
  readonly workspaceRoot: string
  /** The bwrap binary in use; undefined when none was found. */
  readonly bwrapPath: string | undefined
  /** Why confined commands are refused; undefined when the sandbox works. */
  readonly unavailableReason: string | undefined
  private pending?: PendingLaunch
  /** Physical path of the spill directory (bound read-only into the sandbox). */
  private readonly spillDirReal: string

  constructor(ctx: Context, config: SandboxExecutorConfigInput = {}) {
    const parsed = parseSandboxConfig(config)
    // Checked before the executor registers itself, so that a bad root leaves nothing behind.
    const workspaceRoot = physicalDirectory(parsed.workspaceRoot, parsed.cwd)
    const local: Record<string, unknown> = { ...parsed }
    for (const key of SANDBOX_KEYS) delete local[key]
    super(ctx, local as LocalExecutorConfigInput)
    this.sandboxConfig = parsed
    this.workspaceRoot = workspaceRoot
    this.spillDirReal = realpathSync(this.spillDir)
    this.bwrapPath = lookupExecutable(parsed.bwrapPath ?? 'bwrap')
    // Probed once: every confined command is refused with this reason when bwrap cannot work here.
    this.unavailableReason = this.probe()
  }

  /** The default mode of every command. */
  get sandboxMode(): SandboxModeName {
    return this.sandboxConfig.mode
  }

  /** Applies the local executor's defaults and the sandbox mode: the request's when given (validated), else the default. */
  resolve(request: BashExecRequest): BashExecSpec {
    const spec = super.resolve(request)
    if (request.sandboxMode === undefined) return spec
    return { ...spec, sandboxMode: checkRequestedMode(request.sandboxMode) }
  }

  run(spec: BashExecSpec): Promise<BashRunResult> {
    try {
      this.refusal(spec)
    } catch (error) {
      return Promise.reject(error)
    }
    return super.run(spec)
  }

  start(spec: BashExecSpec): BashTask {
    this.refusal(spec)
    return super.start(spec)
  }

  protected async launch(spec: BashExecSpec, label: string): Promise<LaunchedCommand> {
    const mode = this.refusal(spec)
    if (mode === 'danger-full-access') return new SandboxedCommand(await super.launch(spec, label), mode)
    const statusPath = join(this.spillDir, `dsh-bash-${label}-bwrap.json`)
    let launching: Promise<LaunchedCommand>
    this.pending = { mode, statusPath }
    try {
      // `commandLine` runs synchronously inside: it takes `pending`.
      launching = super.launch(spec, label)
    } catch (error) {
      removeFile(statusPath)
      throw error
    } finally {
      this.pending = undefined
    }
    let launched: LaunchedCommand
    try {
      launched = await launching
    } catch (error) {
      removeFile(statusPath)
      throw error
    }
    return new SandboxedCommand(launched, mode, statusPath)
  }

  protected commandLine(spec: BashExecSpec, scriptPath: string | undefined): CommandLine {
    const inner = super.commandLine(spec, scriptPath)
    const pending = this.pending
    this.pending = undefined
    if (!pending) return inner
    const args = bwrapArgs({
      mode: pending.mode,
      network: this.sandboxConfig.network,
      workspaceRoot: this.workspaceRoot,
      protections: pending.mode === 'workspace-write' ? gitProtections(this.workspaceRoot) : [],
      workdir: spec.workdir,
      workdirReal: realpathSync(spec.workdir),
      // The spill directory (full outputs, long scripts) lives under /tmp by default: keep it readable.
      readOnlyExtras: [this.spillDirReal],
    })
    // Handed to bwrap as fd 3 (`--json-status-fd 3`); the local executor closes its copy once spawned.
    const statusFd = openStatusFile(pending.statusPath)
    return {
      file: this.bwrapPath!,
      args: [...args, '--', inner.file, ...inner.args],
      joinsThroughBashEnv: false,
      monitor: true,
      extraFds: [statusFd],
    }
  }

  /** The spec's mode; throws when it is unknown, or when it needs the sandbox and the sandbox cannot work. */
  private refusal(spec: BashExecSpec): SandboxModeName {
    const mode = spec?.sandboxMode === undefined ? this.sandboxMode : checkRequestedMode(spec.sandboxMode)
    if (mode !== 'danger-full-access' && this.unavailableReason) throw new Error(this.unavailableReason)
    return mode
  }

  private probe(): string | undefined {
    if (!this.bwrapPath) {
      const wanted = this.sandboxConfig.bwrapPath
      const where = wanted === undefined ? 'bwrap was not found in PATH' : `bwrap was not found at ${JSON.stringify(wanted)}`
      return `${UNAVAILABLE_PREFIX}: ${where} (install the bubblewrap package, or set bwrapPath)`
    }
    if (this.containment === 'pgroup') {
      return `${UNAVAILABLE_PREFIX}: neither a cgroup nor /proc is available to follow the sandboxed processes (${this.containmentNote})`
    }
    const reason = probeBwrap({
      bwrapPath: this.bwrapPath,
      shellPath: this.shellPath,
      network: this.sandboxConfig.network,
      statusPath: join(this.spillDir, 'dsh-bash-probe-bwrap.json'),
    })
    return reason ? `${UNAVAILABLE_PREFIX}: ${reason}` : undefined
  }
}

/** Resolves the workspace root to a physical directory, or throws naming the key. */
function physicalDirectory(configured: string | undefined, cwd: string | undefined): string {
  const base = cwd ? resolvePath(cwd) : process.cwd()
  const path = configured === undefined ? base : resolvePath(base, configured)
  try {
    if (!statSync(path).isDirectory()) throw new Error('not a directory')
    return realpathSync(path)
  } catch {
    throw new Error(`invalid sandbox executor config: workspaceRoot is not an existing directory: ${path}`)
  }
}

/** Signal numbers to names (`9` → `SIGKILL`). */
const SIGNAL_NAMES = new Map<number, string>(Object.entries(osConstants.signals).map(([name, number]) => [number, name]))

/** At most this much of the start of stderr is kept to explain a failure of bwrap itself. */
const STDERR_PREFIX_BYTES = 4096

/**
 * One command as the sandbox sees it: the local launch, with bwrap's exit status turned back into
 * the command's, bwrap's own failures turned into infrastructure errors, the sandbox's init left
 * out of the leftover count, and the sandbox facts.
 */
class SandboxedCommand implements LaunchedCommand {
  readonly exited: Promise<ExitFacts>
  private failure?: string
  private stderrPrefix = ''
  private stderrCopy?: PassThrough

  constructor(
    private readonly inner: LaunchedCommand,
    private readonly mode: SandboxModeName,
    private readonly statusPath?: string,
  ) {
    if (!statusPath) {
      this.exited = inner.exited
      return
    }
    // bwrap prints its own failure before the command runs: keep the start of stderr to explain one.
    // The executor reads a pass-through copy, so that this extra reader can never steal its data.
    const source = inner.stderr
    const copy = new PassThrough()
    source.on('data', (chunk: Buffer) => {
      if (this.stderrPrefix.length < STDERR_PREFIX_BYTES) this.stderrPrefix += chunk.toString('utf8')
      copy.write(chunk)
    })
    source.once('end', () => copy.end())
    source.once('error', (error) => copy.destroy(error))
    source.once('close', () => copy.end())
    // The executor destroys its stream when it stops waiting for the pipe (a leftover holding it).
    copy.once('close', () => source.destroy())
    this.stderrCopy = copy
    this.exited = inner.exited.then((exit) => this.interpret(exit))
  }

  get stdout(): Readable {
    return this.inner.stdout
  }

  get stderr(): Readable {
    return this.stderrCopy ?? this.inner.stderr
  }

  /**
   * bwrap exits with the command's code, or 128+N when the command died from signal N: that is
   * reported as the signal (as the local executor would). bwrap writes the `exit-code` status only
   * when the command was executed; without it, bwrap itself failed.
   */
  private interpret(exit: ExitFacts): ExitFacts {
    // The monitor itself was killed (SIGKILL after the grace period, or a stop before the command started).
    if (exit.signal !== null || exit.exitCode === null) return exit
    const status = readStatus(this.statusPath!)
    if (status.exitCode === undefined) {
      const said = bwrapSaid(this.stderrPrefix)
      this.failure = `the sandbox failed to start the command (bwrap exited with code ${exit.exitCode})${said ? `: ${said}` : ''}`
      return exit
    }
    const code = status.exitCode
    const signal = code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined
    return signal ? { exitCode: null, signal } : { exitCode: code, signal: null }
  }

  async countLeftovers(): Promise<number> {
    const init = this.statusPath ? readStatus(this.statusPath).childPid : undefined
    // The sandbox's init lives exactly as long as some process of the command does: it is no leftover.
    const initAlive = init !== undefined && isLive(init)
    const count = await this.inner.countLeftovers()
    return Math.max(0, count - (initAlive ? 1 : 0))
  }

  terminate(graceMs: number): Promise<void> {
    return this.inner.terminate(graceMs)
  }

  whenEmpty(): Promise<void> {
    return this.inner.whenEmpty()
  }

  release(): void | Promise<void> {
    if (this.statusPath) removeFile(this.statusPath)
    return this.inner.release()
  }

  sandboxFacts(exit: ExitFacts, stderr: CollectedOutput): SandboxFacts {
    const confined = this.mode !== 'danger-full-access'
    const failed = exit.exitCode !== null && exit.exitCode !== 0
    return {
      mode: this.mode,
      accessDenied: confined && failed && showsDeniedWrite(stderr.text),
      escalations: widerModes(this.mode),
    }
  }

  lostReason(): string | undefined {
    return this.failure ?? this.inner.lostReason?.()
  }
}
