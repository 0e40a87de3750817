import { MAX_TIMER_MS } from './config.js'

/**
 * Why a foreground run stopped being an ordinary call that waits for its command: its timeout, the
 * caller's abort, the executor's disposal, or its yield into a background task. Never the command's
 * own exit (that is no stop).
 */
export type StopCause = 'timeout' | 'abort' | 'dispose' | 'yield'

/**
 * The stop causes of one foreground run racing on one AbortController (after execa's
 * `lib/terminate/`): each cause is a small function below; the first cause recorded is the run's
 * cause, later ones are ignored. `kill` terminates the command's tree; it is idempotent (the
 * launched command's `terminate` joins a running termination).
 */
export class RunStops {
  private readonly _controller = new AbortController()
  /**
   * Set when the timeout fired and killed, even after a yield (the yielded task then ends "timed
   * out"); not when the yielded task's own `kill` came first.
   */
  timedOut = false

  /** `kill` returns false when it refused (the yielded task is being killed by its own `kill` already). */
  constructor(private readonly _kill: () => boolean) {}

  /** Aborted once a cause is recorded; its `reason` is that cause. */
  get signal(): AbortSignal {
    return this._controller.signal
  }

  /** The first recorded cause; undefined while the run is an ordinary call. */
  get cause(): StopCause | undefined {
    return this._controller.signal.aborted ? (this._controller.signal.reason as StopCause) : undefined
  }

  /** Records `cause` if no cause is recorded yet; true when it is the run's cause. */
  record(cause: StopCause): boolean {
    if (this._controller.signal.aborted) return false
    this._controller.abort(cause)
    return true
  }

  kill(): boolean {
    return this._kill()
  }
}

/**
 * The timeout: records `timeout` and kills the command. It kills even when another cause came
 * first: after a yield the timeout still counts from the command's start (the task is killed), and
 * after an abort or a disposal the kill is already under way (the call joins it). Returns the canceller.
 */
export function stopOnTimeout(stops: RunStops, timeoutMs: number): () => void {
  const timer = setTimeout(() => {
    stops.record('timeout')
    if (stops.kill()) stops.timedOut = true
  }, Math.min(timeoutMs, MAX_TIMER_MS))
  return () => clearTimeout(timer)
}

/**
 * The caller's abort: kills the command when it is the first cause (an abort after a yield no longer
 * belongs to the call: the yield detaches it). An already aborted signal stops at once. Returns the detacher.
 */
export function stopOnAbort(stops: RunStops, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => {}
  const onAbort = () => {
    if (stops.record('abort')) stops.kill()
  }
  signal.addEventListener('abort', onAbort, { once: true })
  if (signal.aborted) onAbort()
  return () => signal.removeEventListener('abort', onAbort)
}

/** The executor's disposal: kills the command when it is the first cause. */
export function stopOnDispose(stops: RunStops): void {
  if (stops.record('dispose')) stops.kill()
}

/**
 * The yield: after `yieldAfterMs`, the run becomes a background task if no other cause came first
 * and `canYield()` agrees (not while the executor is being disposed). `yielded` resolves true then,
 * false when the yield lost (or was cancelled); it never kills.
 */
export function yieldAfter(stops: RunStops, yieldAfterMs: number, canYield: () => boolean): { yielded: Promise<boolean>; cancel: () => void } {
  let timer: ReturnType<typeof setTimeout> | undefined
  let settle!: (yielded: boolean) => void
  const yielded = new Promise<boolean>((resolve) => (settle = resolve))
  timer = setTimeout(() => settle(canYield() && stops.record('yield')), yieldAfterMs)
  return {
    yielded,
    cancel: () => {
      clearTimeout(timer)
      settle(false)
    },
  }
}
