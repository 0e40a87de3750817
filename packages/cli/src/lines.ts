import type { Interface } from 'node:readline'

/**
 * Pull-based lines from a readline interface: the REPL loop and the approval prompt both read the
 * next line with `next()`, in turn. `null` once the input ended.
 */
export class LineReader {
  private readonly queue: string[] = []
  private readonly waiting: ((line: string | null) => void)[] = []
  private ended = false

  constructor(rl: Interface) {
    rl.on('line', (line) => {
      const waiter = this.waiting.shift()
      if (waiter) waiter(line)
      else this.queue.push(line)
    })
    rl.on('close', () => this.end())
  }

  /**
   * The next line, or null at the end of the input. An abort of `signal` gives null and withdraws
   * this read: the next line goes to the next reader (a cancelled hidden read must not swallow it).
   */
  next(signal?: AbortSignal): Promise<string | null> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift()!)
    if (this.ended || signal?.aborted) return Promise.resolve(null)
    return new Promise((resolve) => {
      const waiter = (line: string | null) => {
        signal?.removeEventListener('abort', onAbort)
        resolve(line)
      }
      const onAbort = () => {
        const index = this.waiting.indexOf(waiter)
        if (index >= 0) this.waiting.splice(index, 1)
        resolve(null)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(waiter)
    })
  }

  /** Ends the input: pending and later reads get null (queued lines are still delivered). */
  end(): void {
    if (this.ended) return
    this.ended = true
    for (const waiter of this.waiting.splice(0)) waiter(null)
  }
}
