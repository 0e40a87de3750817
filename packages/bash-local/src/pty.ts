import { EventEmitter } from 'node:events'
import { constants } from 'node:os'
import { PassThrough, Readable } from 'node:stream'
import pty from '@lydell/node-pty'
import type { IPty } from '@lydell/node-pty'
import { TERMINAL_COLS, TERMINAL_ROWS, TERMINAL_TERM } from '@deepseek-ai/dsh-bash'
import type { LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { closeFds, type LaunchPlan, LocalCommand, type MainProcess, releasePlan } from './launch.js'

/**
 * Interactive launches: the plan runs in a pseudo-terminal made by `@lydell/node-pty` (forkpty:
 * the child calls setsid and takes the pty as its controlling terminal, so it is a session and
 * process-group leader as with `spawn({ detached: true })`, and Ctrl-C reaches its foreground
 * group as SIGINT). Everything else is the ordinary launch: the same tracker (the cgroup joined
 * by the prelude before anything runs, or the marker, or the group), the same termination of the
 * whole tree (`LocalCommand`), the same cleanup.
 *
 * node-pty cannot hand extra descriptors to the child (fd 3, 4, … of a wrapper such as bwrap): the
 * launcher re-opens them from /proc/<our pid>/fd (see `reopenFdsScript`), so they stay open here
 * until the command is released.
 */
export function spawnPtyPlan(plan: LaunchPlan): Promise<LaunchedCommand> {
  let term: IPty
  try {
    term = pty.spawn(plan.file, plan.args, {
      name: TERMINAL_TERM,
      cols: TERMINAL_COLS,
      rows: TERMINAL_ROWS,
      cwd: plan.cwd,
      env: { ...plan.env, TERM: TERMINAL_TERM },
      // Raw bytes: the collector and the terminal view decode them (a split character stays whole).
      encoding: null,
    })
  } catch (error) {
    closeFds(plan.extraFds ?? [])
    releasePlan(plan)
    return Promise.reject(new Error(`failed to start ${plan.file} in a terminal: ${(error as Error).message}`))
  }
  const main = new PtyMain(term)
  // A pty merges stdout and stderr: the task's stderr is an empty stream.
  return Promise.resolve(new PtyCommand(term, plan, main, new PassThrough(), Readable.from([])))
}

/** node-pty reports a signal death by number; the seam speaks names (`SIGINT`). */
function signalName(signal: number | undefined): string | null {
  if (!signal) return null
  for (const [name, number] of Object.entries(constants.signals)) if (number === signal) return name
  return `SIG${signal}`
}

/** The pty's child as a `MainProcess`: `exit` is emitted once node-pty reports it (after the terminal closed or 200 ms). */
class PtyMain extends EventEmitter {
  readonly stdin = null
  constructor(private readonly term: IPty) {
    super()
  }
  get pid(): number {
    return this.term.pid
  }
  kill(signal?: NodeJS.Signals | number): boolean {
    try {
      process.kill(this.term.pid, signal ?? 'SIGTERM')
      return true
    } catch {
      return false
    }
  }
}

class PtyCommand extends LocalCommand {
  readonly terminal = true
  private closed = false

  constructor(
    private readonly term: IPty,
    plan: LaunchPlan,
    main: PtyMain,
    stdout: PassThrough,
    stderr: Readable,
  ) {
    super(main as unknown as MainProcess, plan, { stdout, stderr })
    term.onData((chunk: string | Buffer) => stdout.write(chunk))
    term.onExit(({ exitCode, signal }) => {
      this.closed = true
      const name = signalName(signal)
      // node-pty reports a signal death with exit code 0 besides the signal.
      main.emit('exit', name ? null : exitCode, name)
      stdout.end()
    })
  }

  write(data: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the terminal is closed'))
    // node-pty writes through its non-blocking socket (queued, never blocking the event loop).
    this.term.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength) as unknown as string)
    return Promise.resolve()
  }

  resize(cols: number, rows: number): void {
    if (!this.closed) this.term.resize(cols, rows)
  }

  release(): void {
    // The wrapper's descriptors were kept open for the launcher to re-open (see spawnPtyPlan).
    closeFds(this.plan.extraFds ?? [])
    super.release()
  }
}
