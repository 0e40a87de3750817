import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import type { Readable } from 'node:stream'
import { BASH_ERROR, codedError, messageOf, sleep } from '@deepseek-ai/dsh-bash'
import type { ExitFacts, LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import type { ResourceFacts } from '@deepseek-ai/dsh-bash'
import { closePipe, closeQuietly, type PipeEnds, pipeReader } from './pipes.js'
import { signalEach } from './proc.js'
import type { CommandResources } from './limits.js'
import type { ProcessTracker } from './tracker.js'

/** What to execute and how. */
export interface LaunchPlan {
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  stdin?: string | Uint8Array
  tracker: ProcessTracker
  /** Files to delete when the command is over (a long script). */
  cleanup: string[]
  /** The command's limits and measuring cgroups (limits.ts); released with the plan. */
  resources?: CommandResources
  /** `file` is a monitor that forwards no signal: SIGTERM spares it (see `CommandLine.monitor`). */
  monitor?: boolean
  /** Open descriptors given to the process as fd 3, 4, …; closed here once it is spawned (or failed to). */
  extraFds?: number[]
  /**
   * Real pipes for stdout and stderr (see `FifoPipePool`); the child gets the write ends, which are
   * closed here once it is spawned (or failed to). Undefined: Node's socketpairs.
   */
  pipes?: { stdout: PipeEnds; stderr: PipeEnds }
}

/** Polling intervals while waiting for a tree to empty: fast at first, then gentler. */
const POLL_FAST_MS = 10
const POLL_SLOW_MS = 50
/** After SIGKILL, how long to wait for the kernel to finish (processes in uninterruptible sleep). */
const AFTER_KILL_MS = 5_000

/** Checks the workdir so a missing one is a clear infrastructure error, not a spawn mystery. */
export function checkWorkdir(workdir: string): void {
  let stat
  try {
    stat = statSync(workdir)
  } catch {
    throw codedError(BASH_ERROR.startFailed, `workdir does not exist: ${workdir}`)
  }
  if (!stat.isDirectory()) throw codedError(BASH_ERROR.startFailed, `workdir is not a directory: ${workdir}`)
}

/** Writes a long script to a private file (0600, exclusive create). */
export function writeScript(path: string, command: string): void {
  writeFileSync(path, command, { mode: 0o600, flag: 'wx' })
}

/**
 * Spawns the plan in a new session and process group (`detached`): no controlling terminal, so a
 * prompt on /dev/tty fails at once instead of hanging, and the group can be signalled as a whole.
 * Resolves once the process exists; rejects when it cannot be started.
 */
export function spawnPlan(plan: LaunchPlan): Promise<LaunchedCommand> {
  let child: ChildProcess
  const extraFds = plan.extraFds ?? []
  const pipes = plan.pipes
  const stdio: Array<number | 'pipe'> = pipes ? [pipes.stdout.writeFd, pipes.stderr.writeFd] : ['pipe', 'pipe']
  try {
    child = spawn(plan.file, plan.args, {
      cwd: plan.cwd,
      env: plan.env,
      detached: true,
      stdio: [plan.stdin === undefined ? 'ignore' : 'pipe', ...stdio, ...extraFds],
    })
  } catch (error) {
    closeFds(extraFds)
    if (pipes) {
      closePipe(pipes.stdout)
      closePipe(pipes.stderr)
    }
    releasePlan(plan)
    return Promise.reject(codedError(BASH_ERROR.startFailed, `failed to start ${plan.file}: ${messageOf(error)}`, { cause: error }))
  }
  // The child has its own copies once spawn() returns (libuv forks and execs synchronously). The
  // write ends must be closed here, or the pipes would never reach end-of-file.
  closeFds(extraFds)
  let streams: { stdout: Readable; stderr: Readable } | undefined
  if (pipes) {
    closeQuietly(pipes.stdout.writeFd)
    closeQuietly(pipes.stderr.writeFd)
    streams = { stdout: pipeReader(pipes.stdout.readFd), stderr: pipeReader(pipes.stderr.readFd) }
  }
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      streams?.stdout.destroy()
      streams?.stderr.destroy()
      releasePlan(plan)
      reject(codedError(BASH_ERROR.startFailed, `failed to start ${plan.file}: ${error.message}`, { cause: error }))
    })
    child.once('spawn', () => {
      child.removeAllListeners('error')
      // Later errors (a kill of a dead pid) are harmless; an unhandled 'error' would crash.
      child.on('error', () => {})
      resolve(new LocalCommand(childMain(child, plan.stdin), plan, streams ?? { stdout: child.stdout!, stderr: child.stderr! }))
    })
  })
}

/**
 * The command's main process, however it was started: by Node's `spawn` in this process, or by the
 * launcher helper (see helper-launch.ts).
 */
export interface MainProcess {
  /** Its pid (known once started). */
  readonly pid: number
  /** Sends a signal; a process already gone is no error. */
  kill(signal: NodeJS.Signals): void
  /** Resolves once it has exited (and was reaped). Never rejects. */
  readonly exited: Promise<ExitFacts>
}

/** A process started by Node's `spawn` here, its stdin fed with the plan's input. */
export function childMain(child: ChildProcess, stdin: LaunchPlan['stdin']): MainProcess {
  if (child.stdin) {
    // The command may exit without reading its input: EPIPE is expected, not an error.
    child.stdin.on('error', () => {})
    child.stdin.end(stdin)
  }
  return {
    pid: child.pid!,
    kill: (signal) => void child.kill(signal),
    exited: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ exitCode: code, signal: signal ?? null }))),
  }
}

export class LocalCommand implements LaunchedCommand {
  readonly stdout: Readable
  readonly stderr: Readable
  readonly exited: Promise<ExitFacts>
  private termination?: Promise<void>
  private mainAlive = true

  constructor(
    private readonly child: MainProcess,
    protected readonly plan: LaunchPlan,
    streams: { stdout: Readable; stderr: Readable },
  ) {
    this.stdout = streams.stdout
    this.stderr = streams.stderr
    plan.tracker.attach(child.pid)
    this.exited = child.exited.then((exit) => {
      this.mainAlive = false
      return exit
    })
  }

  async countLeftovers(): Promise<number> {
    const main = this.child.pid
    return (await this.plan.tracker.livePids()).filter((pid) => pid !== main || this.mainAlive).length
  }

  terminate(graceMs: number): Promise<void> {
    this.termination ??= this.runTermination(graceMs)
    return this.termination
  }

  private async runTermination(graceMs: number): Promise<void> {
    const tracker = this.plan.tracker
    if (this.plan.monitor) {
      this.terminateAroundMonitor()
    } else {
      const signalled = tracker.signalAll('SIGTERM')
      // The main process is signalled directly when the tracker did not reach it (it may not have
      // joined its cgroup yet; a group kill reached it already). Never twice: a second SIGTERM runs a
      // shell's TERM trap a second time (seen: `trapped` printed twice at load 20).
      const main = this.child.pid
      if (this.mainAlive && (main === undefined || !signalled.includes(main))) this.child.kill('SIGTERM')
    }
    if (await this.waitEmpty(graceMs)) return
    if (this.mainAlive) this.child.kill('SIGKILL')
    await tracker.killAll()
    await this.waitEmpty(AFTER_KILL_MS)
  }

  /**
   * SIGTERM to every process but the monitor, which reports the command's exit once it ends. When
   * nothing but the monitor exists yet (the command has not started), the monitor itself is stopped.
   */
  private terminateAroundMonitor(): void {
    const main = this.child.pid
    const others = this.plan.tracker.pids().filter((pid) => pid !== main)
    if (others.length === 0) {
      if (this.mainAlive) this.child.kill('SIGTERM')
      return
    }
    signalEach(others, 'SIGTERM')
  }

  whenEmpty(): Promise<void> {
    return this.waitEmpty(Infinity).then(() => undefined)
  }

  /** Waits until no process is left (and the main process has been reaped); false on timeout. */
  private async waitEmpty(limitMs: number): Promise<boolean> {
    const deadline = performance.now() + limitMs
    if (this.mainAlive) {
      // Nothing to poll while the main process runs: its exit is an event.
      if (limitMs === Infinity) await this.exited
      else if (!(await Promise.race([this.exited.then(() => true), sleep(limitMs).then(() => false)]))) return false
    }
    let interval = POLL_FAST_MS
    for (let round = 0; ; round++) {
      if (this.plan.tracker.isEmpty()) return true
      const left = deadline - performance.now()
      if (left <= 0) return false
      await sleep(Math.min(interval, left))
      if (round > 20) interval = POLL_SLOW_MS
    }
  }

  /** What the command used and the limits it reached (read before `release` removes the cgroups). */
  resourceFacts(): ResourceFacts | undefined {
    return this.plan.resources?.facts()
  }

  release(): void {
    releasePlan(this.plan)
  }
}

export function closeFds(fds: number[]): void {
  for (const fd of fds) {
    try {
      closeSync(fd)
    } catch {
      // Already closed.
    }
  }
}

/** Frees what a launch created: its files (a long script) and its tracker (the cgroup). */
export function releasePlan(plan: LaunchPlan): void {
  for (const file of plan.cleanup) {
    try {
      unlinkSync(file)
    } catch {
      // Already gone.
    }
  }
  plan.tracker.release()
  plan.resources?.release()
}
