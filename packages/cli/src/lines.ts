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

  /** The next line, or null at the end of the input. */
  next(): Promise<string | null> {
    if (this.queue.length > 0) return Promise.resolve(this.queue.shift()!)
    if (this.ended) return Promise.resolve(null)
    return new Promise((resolve) => this.waiting.push(resolve))
  }

  /** Ends the input: pending and later reads get null (queued lines are still delivered). */
  end(): void {
    if (this.ended) return
    this.ended = true
    for (const waiter of this.waiting.splice(0)) waiter(null)
  }
}
