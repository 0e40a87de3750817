/**
 * Loop turns: under contention, at most one piece of MCP work per turn of the event loop.
 *
 * Why: with many sessions, one turn of the loop that reads twenty requests runs the whole of each
 * (HTTP parse, the SDK's checks, the tool's start; later each result's render and write) before any
 * timer or other read: the turn grows with the load, and every session's output, progress, notices
 * and kills wait behind it. Measured with `bench/load.mjs --quick` (10 sessions, 2 CPUs, 7 interleaved
 * pairs, 2026-12-03): the server's event-loop delay p99 was lower with the queue in every pair
 * (62/78, 50/102, 91/113, 63/81, 101/145, 60/110, 79/198 ms); throughput and errors unchanged.
 *
 * How: `setImmediate` callbacks queued during the check phase run in the next turn, so releasing one
 * waiter per immediate releases one per turn; its continuation runs in the microtask checkpoint right
 * after, before the next turn's timers and reads.
 *
 * No contention, no wait: with at most one call in progress (a stdio client, one HTTP client at a
 * time) `next()` resolves at once, so a lone client pays nothing for it.
 */
export class LoopTurns {
  private readonly _waiting: Array<() => void> = []
  private _scheduled = false
  private _active = 0

  /**
   * Counts one call as in progress until the returned function is called (once; later calls do
   * nothing). Calls in progress are what makes `next()` wait.
   */
  hold(): () => void {
    this._active++
    let held = true
    return () => {
      if (!held) return
      held = false
      this._active--
    }
  }

  /** Calls in progress (see `hold`). */
  get active(): number {
    return this._active
  }

  /** Waiters not yet released. */
  get waiting(): number {
    return this._waiting.length
  }

  /**
   * Resolves in a later turn of the loop, after every waiter queued before it (first come, first
   * served), when another call is in progress or others wait; at once otherwise. `self` tells
   * whether the caller's own call is among the held ones (then one more is needed for contention).
   */
  next(self: boolean): Promise<void> {
    if (this._waiting.length === 0 && this._active <= (self ? 1 : 0)) return Promise.resolve()
    return new Promise<void>((resolve) => {
      this._waiting.push(resolve)
      if (!this._scheduled) this.schedule()
    })
  }

  private schedule(): void {
    this._scheduled = true
    setImmediate(() => {
      this._scheduled = false
      this._waiting.shift()?.()
      if (this._waiting.length > 0) this.schedule()
    })
  }
}
