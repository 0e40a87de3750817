import { hasProc, pidsInGroup, signalPid } from './proc.js'
import type { ProcessTracker } from './tracker.js'

/** Whether /proc can be read: a fact of the machine, asked at the first command rather than at each. */
let procMounted: boolean | undefined

/** The process group fallback: the command runs in a new session whose group id is its pid. */
export class ProcessGroupTracker implements ProcessTracker {
  readonly kind = 'pgroup' as const
  readonly env = {}
  private pgid = 0
  private readonly proc = (procMounted ??= hasProc())

  attach(pid: number): void {
    this.pgid = pid
  }

  pids(): number[] {
    if (!this.pgid) return []
    if (this.proc) return pidsInGroup(this.pgid)
    // Without /proc a zombie member still answers: the best we can do is ask the group.
    try {
      process.kill(-this.pgid, 0)
      return [this.pgid]
    } catch {
      return []
    }
  }

  signalAll(signal: NodeJS.Signals): void {
    if (!this.pgid) return
    try {
      process.kill(-this.pgid, signal)
    } catch {
      // ESRCH: the group is empty.
    }
    if (signal === 'SIGTERM') for (const pid of this.pids()) signalPid(pid, 'SIGCONT')
  }

  killAll(): void {
    this.signalAll('SIGKILL')
  }

  isEmpty(): boolean {
    return this.pids().length === 0
  }

  release(): void {}
}
