import { Worker } from 'node:worker_threads'
import { toolBashErrors } from './errors.js'

/**
 * `until`: a regular expression the model chose, run on this server against a task's output.
 *
 * An ECMAScript regular expression can backtrack for exponential time (`(a+)+$` against a line of
 * thirty `a`s and a `b`), and V8 cannot interrupt a match. So the match never runs on the event
 * loop: one worker thread per tool-bash plugin tests the lines, and a batch that takes longer than
 * `UNTIL_LIMIT_MS` gets the worker terminated (V8 stops it mid-match) and the call an error; the
 * next `until` starts a fresh worker. What one bad expression costs is that limit of one core's
 * time per call, never the server's loop. Lines are tested up to their first `UNTIL_LINE_CHARS`
 * characters and the expression may be at most `UNTIL_MAX_CHARS` long, which bounds the messages.
 */

/** Longest time one batch of lines may take in the worker (ms). */
export const UNTIL_LIMIT_MS = 1_000
/** Characters of a line that are tested (a longer line is tested by its start). */
export const UNTIL_LINE_CHARS = 4_096
/** Longest `until` expression (characters). */
export const UNTIL_MAX_CHARS = 1_000

/** The worker: compiles the expression once per source, answers with the first matching line's index or -1. */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
let source
let re
parentPort.on('message', ({ id, pattern, lines }) => {
  if (pattern !== source) { source = pattern; re = new RegExp(pattern) }
  let index = -1
  for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) { index = i; break }
  parentPort.postMessage({ id, index })
})
`

/** Checks an `until` expression on this thread (syntax only: compiling is linear, matching is not). */
export function checkUntil(pattern: string): void {
  if (pattern === '') throw toolBashErrors.invalidArguments('invalid until: expected a non-empty regular expression')
  if (pattern.length > UNTIL_MAX_CHARS) {
    throw toolBashErrors.invalidArguments(`invalid until: ${pattern.length} characters is more than the ${UNTIL_MAX_CHARS} an expression may have`)
  }
  try {
    new RegExp(pattern)
  } catch (error) {
    throw toolBashErrors.invalidArguments(`invalid until: not an ECMAScript regular expression (${(error as Error).message})`)
  }
}

interface Pending {
  id: number
  pattern: string
  lines: string[]
  resolve(index: number): void
  reject(error: Error): void
}

/**
 * Tests lines against `until` expressions off the event loop, one batch at a time, each batch
 * within `limitMs`. `dispose` terminates the worker; later tests reject.
 */
export class UntilMatcher {
  #worker: Worker | undefined
  #ready: Promise<void> | undefined
  readonly #queue: Pending[] = []
  #running: Pending | undefined
  #timer: NodeJS.Timeout | undefined
  #seq = 0
  #disposed = false

  constructor(readonly limitMs = UNTIL_LIMIT_MS) {}

  /** The index of the first line `pattern` matches, or -1. Rejects with a coded error when the batch took too long. */
  firstMatch(pattern: string, lines: readonly string[]): Promise<number> {
    if (lines.length === 0) return Promise.resolve(-1)
    if (this.#disposed) return Promise.reject(new Error('the until matcher is disposed'))
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: ++this.#seq, pattern, lines: lines.map((l) => (l.length > UNTIL_LINE_CHARS ? l.slice(0, UNTIL_LINE_CHARS) : l)), resolve, reject })
      this.#next()
    })
  }

  dispose(): void {
    this.#disposed = true
    for (const pending of this.#queue.splice(0)) pending.reject(new Error('the until matcher is disposed'))
    this.#running?.reject(new Error('the until matcher is disposed'))
    this.#running = undefined
    this.#stop()
  }

  #start(): Promise<void> {
    const worker = new Worker(WORKER_SOURCE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 } })
    // A waiting call holds the loop, the idle worker never does.
    worker.unref()
    this.#worker = worker
    worker.on('message', ({ id, index }: { id: number; index: number }) => {
      const running = this.#running
      if (!running || running.id !== id) return
      clearTimeout(this.#timer)
      this.#running = undefined
      running.resolve(index)
      this.#next()
    })
    worker.on('error', (error) => this.#fail(error instanceof Error ? error : new Error(String(error))))
    worker.on('exit', () => {
      if (this.#worker === worker) this.#fail(new Error('the until matcher stopped'))
    })
    return new Promise((resolve) => worker.once('online', () => resolve()))
  }

  #next(): void {
    if (this.#running || this.#disposed) return
    const pending = this.#queue.shift()
    if (!pending) return
    this.#running = pending
    if (!this.#worker) this.#ready = this.#start()
    const worker = this.#worker!
    // The limit counts from when the worker can run it, not from its start-up.
    void this.#ready!.then(() => {
      if (this.#running !== pending || this.#worker !== worker) return
      this.#timer = setTimeout(() => {
        if (this.#running !== pending) return
        this.#running = undefined
        this.#stop()
        pending.reject(toolBashErrors.invalidArguments(`invalid until: matching it took longer than ${this.limitMs} ms on the task's output; use a simpler expression`))
        this.#next()
      }, this.limitMs)
      worker.postMessage({ id: pending.id, pattern: pending.pattern, lines: pending.lines })
    })
  }

  /** The worker failed or exited on its own: the running batch fails, the queue goes on with a new one. */
  #fail(error: Error): void {
    const running = this.#running
    this.#running = undefined
    this.#stop()
    running?.reject(error)
    this.#next()
  }

  #stop(): void {
    clearTimeout(this.#timer)
    const worker = this.#worker
    this.#worker = undefined
    this.#ready = undefined
    void worker?.terminate()
  }
}
