import type { Logger } from 'cordis'

/** What an EmptyWait needs from the command it waits for. */
export interface EmptyWaitTarget {
  /** How log lines name the command: `bash-3 (remote pid 1234) on u@h:p`, `bash-3 (pid 57) in <container>`. */
  readonly name: string
  /** The executor plugin's logger. */
  readonly logger: Logger
  /**
   * Sends one `wait` request (payload: `reportMs`); resolves when it is answered, or when the
   * transport is gone (the command is then lost: nothing is left to wait for). `onNote` receives
   * the agent's reports (the payload of each `still` frame) until the wait ends.
   */
  request(reportMs: number, onNote: (note: string) => void): Promise<unknown>
}

export interface EmptyWaitOptions {
  /**
   * After this long without an answer the agent reports what it still sees (and again after twice
   * as long, and so on): each report is logged. 0: no reports. Never a limit on the wait itself.
   */
  reportMs: number
  /**
   * How long the wait may go on once the command was terminated (its `term` answered: the tree is
   * as dead as the agent can make it) before it is given up with a warning. Never applies before a
   * termination: a task whose processes live on is running.
   */
  stoppedBoundMs: number
}

/**
 * The wait until no process of a command is left (a background task is over only then), made
 * observable and bounded once the command is stopped:
 *
 * - every report of the agent (`still <pid>:<why>:<state>:<name> …`) is logged, naming the pids it
 *   still sees and why they count;
 * - a wait that stays silent past an expected report (no answer, no report: the agent's wait is
 *   not scanning) is logged and asked again (see `watch`);
 * - after a termination, a fresh `wait` is asked, and whatever happens the wait ends within
 *   `stoppedBoundMs`, with a warning when it was given up: a disposal or a kill never hangs on a
 *   wait (the executor then closes its transport, which ends the agent and its commands).
 */
export class EmptyWait {
  readonly done: Promise<void>
  private settle!: () => void
  private settled = false
  private notes = 0
  private readonly started = Date.now()
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  private stopping = false

  constructor(
    private readonly target: EmptyWaitTarget,
    private readonly options: EmptyWaitOptions,
  ) {
    this.done = new Promise((resolve) => {
      this.settle = resolve
    })
    void this.ask()
    // The first report comes `reportMs` after the wait began, plus a scan and the transport's delay.
    if (options.reportMs > 0) this.watch(2 * options.reportMs + 2_000)
  }

  /**
   * A scanning wait reports after `reportMs`, then after 2×, 4×… as long more: a silent interval
   * (each twice the previous one, so each holds an expected report) means the agent's wait is not
   * scanning (the agent is stopped, or the wait stalled while the agent lives on, so no answer and
   * no close would ever come). Then it is logged and a fresh wait is asked, whose reports start over.
   */
  private watch(interval: number): void {
    const seen = this.notes
    this.after(interval, () => {
      if (this.notes > seen) {
        this.watch(interval * 2)
        return
      }
      this.target.logger.warn(
        `${this.target.name}: no answer from the agent after ${this.elapsed()} s of waiting for the command's processes to end, and no report of what it still sees for ${(interval / 1000).toFixed(1)} s (its wait is not scanning): asking again`,
      )
      void this.ask()
      this.watch(2 * this.options.reportMs + 2_000)
    })
  }

  /** The command's termination is over: ask once more, and give up after `stoppedBoundMs`. */
  stopped(): void {
    if (this.settled || this.stopping) return
    this.stopping = true
    void this.ask()
    this.after(this.options.stoppedBoundMs, () => {
      this.target.logger.warn(
        `${this.target.name}: gave up waiting for the command's processes to end, ${this.options.stoppedBoundMs} ms after it was terminated (the agent did not report its tree empty)`,
      )
      this.finish()
    })
  }

  /** Ends the wait now (the command is released); the timers go with it. */
  dispose(): void {
    this.finish()
  }

  private async ask(): Promise<void> {
    await this.target.request(this.options.reportMs, (note) => this.onNote(note))
    this.finish()
  }

  private onNote(note: string): void {
    if (this.settled) return
    this.notes++
    this.target.logger.info(`${this.target.name} has waited ${this.elapsed()} s for its processes to end; the agent still sees ${describeNote(note)}`)
  }

  private finish(): void {
    if (this.settled) return
    this.settled = true
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    this.settle()
  }

  /**
   * A plain timer, not `pluginTimer`: the bound after a termination must fire while the executor
   * plugin is being disposed (its context then refuses new effects), or the disposal would wait on
   * this forever. Every timer is cleared when the wait ends, and `cleanup` ends it.
   */
  private after(ms: number, callback: () => void): void {
    if (this.settled) return
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      if (!this.settled) callback()
    }, ms)
    timer.unref?.()
    this.timers.add(timer)
  }

  /** Seconds since the wait began, with one decimal. */
  private elapsed(): string {
    return ((Date.now() - this.started) / 1000).toFixed(1)
  }
}

const WHY: Record<string, string> = {
  group: 'in its process group',
  marker: 'outside the group, carrying its marker',
  cgroup: 'in its cgroup, outside the group, without its marker',
  tree: 'outside the group, without its marker, a child of one of its processes',
}

/**
 * `1234:group:S:sleep 1240:marker:T:bash +3` (a `still` frame's payload) →
 * `1234 sleep (state S, in its process group), …, and 3 more`. Exported for tests.
 */
export function describeNote(note: string): string {
  const entries = note.trim().split(/\s+/).filter(Boolean)
  if (entries.length === 0) return 'nothing (a process ended between two scans)'
  return entries
    .map((entry) => {
      if (/^\+\d+$/.test(entry)) return `and ${entry.slice(1)} more`
      const [pid, why = '?', state = '?', ...name] = entry.split(':')
      return `${pid} ${name.join(':') || '?'} (state ${state}, ${WHY[why] ?? why})`
    })
    .join(', ')
}
