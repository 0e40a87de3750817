import { type ChildProcess, spawn } from 'node:child_process'
import { accessSync, constants as fsConstants, readFileSync } from 'node:fs'
import { constants as osConstants } from 'node:os'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import type { ExitFacts, LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { closePipe, closeQuietly, pipeReader } from './pipes.js'
import { closeFds, type LaunchPlan, LocalCommand, type MainProcess, releasePlan } from './launch.js'
import type { HelperRequest, MkfifoRequest } from './launcher-helper.js'

/** The built helper: `dist/launcher-helper.js`, from `dist/` (the package) and from `src/` (tests run the sources). */
const HELPER_PATH = fileURLToPath(new URL('../dist/launcher-helper.js', import.meta.url))

/**
 * Which helper forks the commands: `native` (native/launcher.c, prebuilt and shipped in the package
 * for x86-64 Linux so far, arm64 where one is built: it forks each command from its own small process, ~2x cheaper than any fork of a
 * Node process here; bench/README.md, "Launcher, third round") or `node` (dist/launcher-helper.js).
 */
export type HelperKind = 'native' | 'node'

/** The prebuilt native helper for this platform, when the package ships one that this process may execute. */
export function nativeHelperPath(): string | undefined {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) return undefined
  const path = fileURLToPath(new URL(`../native/dsh-launcher-linux-${process.arch}`, import.meta.url))
  try {
    accessSync(path, fsConstants.X_OK)
    return path
  } catch {
    return undefined
  }
}

/** Signal number → name (`SIGKILL`), as the native helper reports a death by signal. */
const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, number]) => [number as number, name]))

/**
 * A request for the native helper: its byte count in decimal, a newline, then NUL-terminated fields
 * (arguments, paths and environment entries cannot hold a NUL: the kernel's strings end there).
 */
function nativeFrame(fields: string[]): string {
  const payload = `${fields.join('\0')}\0`
  return `${Buffer.byteLength(payload)}\n${payload}`
}

interface Pending {
  started?: (pid: number) => void
  failed?: (message: string) => void
  exited: (exit: ExitFacts) => void
  /** A mkfifo request's answer (`made`). */
  made?: () => void
}

/**
 * The server's end of the launcher helper (`launcher: 'helper'`): one helper process per executor,
 * started at the first command, that forks the commands so that this event loop never forks.
 * Only plans with real pipes and no stdin go through it (see `canUse`); the others are spawned
 * here as before. Extra descriptors (the sandbox's) go by their /proc path, like the pipes' write ends.
 */
export class LauncherHelper {
  #child?: ChildProcess
  #seq = 0
  readonly #pending = new Map<number, Pending>()
  #failure?: string
  #disposed = false
  /** Requests are being gathered for one write (see `#send`). */
  #corked = false
  readonly #kind: HelperKind
  readonly #nativePath?: string

  /** `native` needs `nativePath` (see `nativeHelperPath`). */
  constructor(kind: HelperKind = 'node', nativePath?: string) {
    if (kind === 'native' && !nativePath) throw new Error('the native launcher helper needs its path')
    this.#kind = kind
    this.#nativePath = nativePath
  }

  /** Which helper this is. */
  get kind(): HelperKind {
    return this.#kind
  }

  /** True when the helper can start this plan (else the caller spawns it in-process). */
  static canUse(plan: LaunchPlan): boolean {
    return plan.pipes !== undefined && plan.stdin === undefined
  }

  /** Starts the plan through the helper; resolves once the process exists, rejects when it cannot start. */
  launch(plan: LaunchPlan): Promise<LaunchedCommand> {
    const pipes = plan.pipes!
    const extraFds = plan.extraFds ?? []
    const fail = (message: string) => {
      closeFds(extraFds)
      closePipe(pipes.stdout)
      closePipe(pipes.stderr)
      releasePlan(plan)
      return Promise.reject(new Error(`failed to start ${plan.file}: ${message}`))
    }
    if (this.#disposed) return fail('the launcher helper is stopped')
    let child: ChildProcess
    try {
      child = this.#ensure()
    } catch (error) {
      return fail((error as Error).message)
    }
    let extra: NonNullable<HelperRequest['extra']>
    try {
      extra = extraFds.map((fd) => ({ path: `/proc/${process.pid}/fd/${fd}`, accessMode: accessModeOf(fd) }))
    } catch (error) {
      return fail((error as Error).message)
    }
    const id = ++this.#seq
    // The helper opens the write ends by their /proc path (a pipe reopens through it; no name on disk).
    const stdout = `/proc/${process.pid}/fd/${pipes.stdout.writeFd}`
    const stderr = `/proc/${process.pid}/fd/${pipes.stderr.writeFd}`
    let line: string
    if (this.#kind === 'native') {
      const env = Object.entries(plan.env).map(([name, value]) => `${name}=${value}`)
      const extraFields = extra.flatMap(({ path, accessMode }) => [path, String(accessMode)])
      // argv[0] is the file, as Node's spawn sets it (a `-` there would make bash a login shell).
      line = nativeFrame([
        'S', String(id), plan.file, plan.cwd, stdout, stderr, String(extra.length), ...extraFields,
        String(plan.args.length + 1), plan.file, ...plan.args, String(env.length), ...env,
      ])
    } else {
      const request: HelperRequest = { id, file: plan.file, args: plan.args, cwd: plan.cwd, env: plan.env, stdout, stderr, ...(extra.length > 0 ? { extra } : {}) }
      line = `${JSON.stringify(request)}\n`
    }
    let resolveExit!: (exit: ExitFacts) => void
    const exited = new Promise<ExitFacts>((resolve) => (resolveExit = resolve))
    return new Promise<LaunchedCommand>((resolve, reject) => {
      const entry: Pending = {
        exited: (exit) => {
          this.#pending.delete(id)
          this.#idle()
          resolveExit(exit)
        },
        failed: (message) => {
          this.#pending.delete(id)
          this.#idle()
          fail(message).catch(reject)
        },
        started: (pid) => {
          entry.started = undefined
          entry.failed = undefined
          // The helper's copies are open in the command now: ours go, so the pipes reach EOF when it ends.
          closeQuietly(pipes.stdout.writeFd)
          closeQuietly(pipes.stderr.writeFd)
          closeFds(extraFds)
          const main: MainProcess = { pid, kill: (signal) => killQuietly(pid, signal), exited }
          resolve(new LocalCommand(main, plan, { stdout: pipeReader(pipes.stdout.readFd), stderr: pipeReader(pipes.stderr.readFd) }))
        },
      }
      this.#pending.set(id, entry)
      this.#busy()
      this.#send(child, line)
    })
  }

  /**
   * Has the helper make FIFOs (for the pipe pool: see `FifoPipePool`'s maker). Resolves once the
   * mkfifo run is over; rejects with its error (some of the FIFOs may exist all the same).
   */
  mkfifo(program: string, paths: string[]): Promise<void> {
    if (this.#disposed) return Promise.reject(new Error('the launcher helper is stopped'))
    let child: ChildProcess
    try {
      child = this.#ensure()
    } catch (error) {
      return Promise.reject(error)
    }
    const id = ++this.#seq
    // The native helper makes them itself (mkfifo(3)); the Node one forks the program.
    const request: MkfifoRequest = { id, mkfifo: program, paths }
    const line = this.#kind === 'native' ? nativeFrame(['F', String(id), String(paths.length), ...paths]) : `${JSON.stringify(request)}\n`
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        this.#pending.delete(id)
        this.#idle()
      }
      this.#pending.set(id, {
        made: () => (done(), resolve()),
        failed: (message) => (done(), reject(new Error(message))),
        exited: () => (done(), reject(new Error('the launcher helper is stopped'))),
      })
      this.#busy()
      this.#send(child, line)
    })
  }

  /**
   * Writes a request. The requests of one burst go in one write: the stream is corked until the
   * current work (this tick and the promise continuations queued with it) is done. Each write wakes
   * the helper, and on a busy machine the woken helper takes this process's CPU: with a write per
   * request, 50 starts issued together reached the helper in turns over ~400 ms at load 100
   * (strace of the helper; bench/README.md, "Line-heavy output and bursts").
   */
  #send(child: ChildProcess, line: string): void {
    const stdin = child.stdin!
    if (!this.#corked) {
      this.#corked = true
      stdin.cork()
      process.nextTick(() => {
        this.#corked = false
        stdin.uncork()
      })
    }
    stdin.write(line)
  }

  /** Stops the helper (once every command is gone: the executor kills them first). */
  async dispose(): Promise<void> {
    this.#disposed = true
    const child = this.#child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    // Held while it stops (an idle helper is unref'd: the wait alone would not keep the loop alive).
    child.ref()
    child.stdin!.end()
    await gone
    // Nothing more will answer: a mkfifo in flight fails (its pool is being disposed too).
    for (const entry of [...this.#pending.values()]) {
      if (entry.failed) entry.failed('the launcher helper is stopped')
      else entry.exited({ exitCode: null, signal: null })
    }
  }

  #ensure(): ChildProcess {
    if (this.#failure) throw new Error(this.#failure)
    if (this.#child) return this.#child
    // The one fork of the server for the helper's whole life; small heap: its own forks stay cheap.
    const child =
      this.#kind === 'native'
        ? spawn(this.#nativePath!, [], { stdio: ['pipe', 'pipe', 'inherit'] })
        : spawn(process.execPath, ['--max-old-space-size=64', HELPER_PATH], { stdio: ['pipe', 'pipe', 'inherit'] })
    child.stdin!.on('error', () => {})
    child.on('error', (error) => this.#lost(`the launcher helper failed: ${error.message}`))
    child.once('exit', (code, signal) => {
      if (!this.#disposed) this.#lost(`the launcher helper exited (${signal ?? `exit code ${code}`})`)
    })
    createInterface({ input: child.stdout! }).on('line', (line) => this.#message(line))
    this.#child = child
    return child
  }

  #message(line: string): void {
    let message: {
      id: number
      pid?: number
      error?: string
      made?: boolean
      exitCode?: number | null
      signal?: string | null
      /** The native helper's death by signal, as a number. */
      signalNumber?: number | null
    }
    try {
      message = JSON.parse(line)
    } catch {
      return
    }
    const entry = this.#pending.get(message.id)
    if (!entry) return
    if (message.made) entry.made?.()
    else if (message.pid !== undefined) entry.started?.(message.pid)
    else if (message.error !== undefined) entry.failed?.(message.error)
    else {
      const number = message.signalNumber
      const signal = message.signal ?? (typeof number === 'number' ? (SIGNAL_NAMES.get(number) ?? `SIG${number}`) : null)
      entry.exited({ exitCode: message.exitCode ?? null, signal })
    }
  }

  /** The helper died: nothing it started can report any more; every pending command fails or ends. */
  #lost(reason: string): void {
    this.#failure = reason
    this.#child = undefined
    for (const entry of [...this.#pending.values()]) {
      if (entry.failed) entry.failed(reason)
      else entry.exited({ exitCode: null, signal: null })
    }
  }

  /** The helper keeps the server alive only while it has commands in flight. */
  #busy(): void {
    if (this.#pending.size !== 1 || !this.#child) return
    this.#child.ref()
    ;(this.#child.stdout as unknown as { ref?: () => void }).ref?.()
  }

  #idle(): void {
    if (this.#pending.size !== 0 || !this.#child) return
    this.#child.unref()
    ;(this.#child.stdout as unknown as { unref?: () => void }).unref?.()
  }
}

/** Linux's O_ACCMODE (Node's fs.constants has no such member). */
const O_ACCMODE = 0o3

/**
 * The access mode (O_RDONLY, O_WRONLY or O_RDWR) of one of this process's descriptors, from
 * /proc/self/fdinfo: the helper reopens it with the same mode (creation flags and O_NOFOLLOW do not
 * apply to a reopen through /proc, and O_NOFOLLOW would refuse the /proc link itself).
 */
function accessModeOf(fd: number): number {
  const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
  const flags = /^flags:\s*([0-7]+)$/m.exec(info)?.[1]
  if (flags === undefined) throw new Error(`cannot read the flags of descriptor ${fd}`)
  return parseInt(flags, 8) & O_ACCMODE
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Already gone.
  }
}
