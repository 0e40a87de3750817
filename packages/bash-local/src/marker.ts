import { MARKER_VARIABLE } from '@deepseek-ai/dsh-bash-kit'
import { pidsInGroup, pidsWithEnv, signalEach } from './proc.js'
import type { ProcessTracker } from './tracker.js'

/**
 * The environment-marker fallback: descendants inherit `DSH_BASH_TASK=<unique>`, so escapees that
 * left the process group are still found through /proc/<pid>/environ. The process group is added
 * for processes that replaced their environment but stayed in the group.
 */
export class MarkerTracker implements ProcessTracker {
  readonly kind = 'marker' as const
  readonly env: Readonly<Record<string, string>>
  private pgid = 0

  constructor(private readonly marker: string) {
    this.env = { [MARKER_VARIABLE]: marker }
  }

  attach(pid: number): void {
    this.pgid = pid
  }

  pids(): number[] {
    const found = new Set(pidsWithEnv(MARKER_VARIABLE, this.marker))
    if (this.pgid) for (const pid of pidsInGroup(this.pgid)) found.add(pid)
    return [...found]
  }

  signalAll(signal: NodeJS.Signals): void {
    signalEach(this.pids(), signal)
  }

  killAll(): void {
    // Repeat: a process may fork between the scan and the signal.
    for (let round = 0; round < 3; round++) {
      const pids = this.pids()
      if (pids.length === 0) return
      signalEach(pids, 'SIGKILL')
    }
  }

  isEmpty(): boolean {
    return this.pids().length === 0
  }

  release(): void {}
}
