import { MARKER_VARIABLE } from '@deepseek-ai/dsh-bash-kit'
import { CONFIRM_SCANS, freezeAndKill } from './exact-kill.js'
import { signalEach } from './proc.js'
import { TreeScanner } from './scan.js'
import type { ProcessTracker } from './tracker.js'

/**
 * The environment-marker fallback: descendants inherit `DSH_BASH_TASK=<unique>`, so escapees that
 * left the process group are still found through /proc/<pid>/environ. The process group is added
 * for processes that replaced their environment but stayed in the group, and children of found
 * processes (by parent pid) for those that did both while their parent lives. Scans are settled
 * (scan.ts: a process inside execve is looked at again) and the kill freezes the tree first
 * (exact-kill.ts).
 */
export class MarkerTracker implements ProcessTracker {
  readonly kind = 'marker' as const
  readonly env: Readonly<Record<string, string>>
  private readonly scanner: TreeScanner
  /** Consecutive `isEmpty` scans that found nothing. */
  private emptyScans = 0

  constructor(private readonly marker: string) {
    this.env = { [MARKER_VARIABLE]: marker }
    this.scanner = new TreeScanner({ env: { name: MARKER_VARIABLE, value: marker } })
  }

  attach(pid: number): void {
    this.scanner.claimGroup(pid)
  }

  pids(): number[] {
    return [...this.scanner.once().found]
  }

  async livePids(): Promise<number[]> {
    return [...(await this.scanner.settled()).found]
  }

  signalAll(signal: NodeJS.Signals): number[] {
    const pids = this.pids()
    signalEach(pids, signal)
    return pids
  }

  async killAll(): Promise<void> {
    await freezeAndKill({ scan: () => this.scanner.settled(), pgid: this.scanner.group })
  }

  isEmpty(): boolean {
    const scan = this.scanner.once()
    // A process inside execve may be ours: not empty until a later look proves it.
    if (scan.found.size > 0 || scan.unsure.size > 0) this.emptyScans = 0
    else this.emptyScans++
    return this.emptyScans >= CONFIRM_SCANS
  }

  release(): void {}
}
