import { CONFIRM_SCANS, freezeAndKill } from './exact-kill.js'
import { hasProc, readStat, signalPid } from './proc.js'
import { TreeScanner } from './scan.js'
import type { ProcessTracker } from './tracker.js'

/** Whether /proc can be read: a fact of the machine, asked at the first command rather than at each. */
let procMounted: boolean | undefined

/**
 * The process group fallback: the command runs in a new session whose group id is its pid. With
 * /proc, children of found processes (by parent pid) are found too, so an escapee is followed
 * while its parent lives; after that it is lost (README).
 */
export class ProcessGroupTracker implements ProcessTracker {
  readonly kind = 'pgroup' as const
  readonly env = {}
  private pgid = 0
  private scanner?: TreeScanner
  private readonly proc = (procMounted ??= hasProc())
  /** Consecutive `isEmpty` looks that found nothing. */
  private emptyScans = 0

  attach(pid: number): void {
    this.pgid = pid
    this.scanner = new TreeScanner({ pgid: pid })
  }

  pids(): number[] {
    if (!this.scanner) return []
    if (this.proc) return [...this.scanner.once().found]
    return this.groupAnswers() ? [this.pgid] : []
  }

  async livePids(): Promise<number[]> {
    if (this.scanner && this.proc) return [...(await this.scanner.settled()).found]
    return this.pids()
  }

  /** Without /proc a zombie member still answers: the best we can do is ask the group. */
  private groupAnswers(): boolean {
    try {
      process.kill(-this.pgid, 0)
      return true
    } catch {
      return false
    }
  }

  signalAll(signal: NodeJS.Signals): number[] {
    if (!this.pgid) return []
    const members = this.pids()
    const inGroup = new Set(members.filter((pid) => readStat(pid)?.pgid === this.pgid))
    const signalled: number[] = []
    // The group as a whole only while a member was just found in it: a freed group number can be a
    // stranger's new session (group-claim.ts). Without /proc nothing can be proved, and the group
    // signal is all there is.
    if (!this.proc || inGroup.size > 0) {
      try {
        process.kill(-this.pgid, signal)
        // The group's leader is the command's main process (a new session per command): reached.
        signalled.push(this.pgid)
      } catch {
        // ESRCH: the group is empty.
      }
    }
    for (const pid of members) {
      // Children that left the group (found through their parent) get it one by one. Only those: a
      // member still in the group has it already, and a second SIGTERM runs a shell's TERM trap twice.
      if (inGroup.has(pid)) continue
      signalPid(pid, signal)
      if (signal === 'SIGTERM') signalPid(pid, 'SIGCONT')
      signalled.push(pid)
    }
    return signalled
  }

  async killAll(): Promise<void> {
    if (!this.scanner) return
    if (!this.proc) {
      // The group signal is atomic for its members (a fork under way restarts or its child gets it too).
      this.signalAll('SIGKILL')
      return
    }
    const scanner = this.scanner
    await freezeAndKill({ scan: () => scanner.settled(), pgid: scanner.group })
  }

  isEmpty(): boolean {
    if (this.pids().length > 0) this.emptyScans = 0
    else this.emptyScans++
    return this.emptyScans >= CONFIRM_SCANS
  }

  release(): void {}
}
