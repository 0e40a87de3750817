import type { BashExecutor, BashTaskRead } from '@deepseek-ai/dsh-bash'
import type { RenderableRead, TerminalPiece } from './render.js'
import { UNTIL_LINE_CHARS } from './until.js'

/** How long a task must have printed nothing for a waiting call to return (ms). */
export const QUIET_MS = 300
/** How often the task is read while waiting (ms). */
const POLL_MS = 50

/**
 * Several reads of one task joined into one: what `bash_output` or `bash_input` returns after a
 * wait. stdout is kept as terminal pieces (a non-interactive task's stdout is one line piece), so a
 * full-screen program's screen replaces the screen read right before it (only the newest screen of
 * a run of screens is kept; lines are never dropped). Whether a read is a screen is the terminal
 * view's word (`read.screen`), never the text's.
 */
export class GatheredRead {
  readonly pieces: TerminalPiece[] = []
  stderr = ''
  lossy = false
  /** Bytes of output gathered (UTF-16 units; a bound, not a measure). */
  size = 0
  last: BashTaskRead
  /** Starts with a first read. */
  constructor(first: BashTaskRead) {
    this.last = first
    this.add(first)
  }

  /** Adds a read; returns its new output as `{lines, screen}` pieces for `until` (empty when nothing new). */
  add(read: BashTaskRead): { stdout: string; stderr: string; screen: boolean } {
    this.last = read
    this.lossy ||= read.lossy
    const { stdout, stderr } = read.streams
    this.stderr += stderr
    this.size += stdout.length + stderr.length
    if (stdout !== '') {
      const last = this.pieces[this.pieces.length - 1]
      if (read.screen && last?.screen) {
        this.size -= last.text.length
        this.pieces.pop()
      }
      if (!read.screen && last && !last.screen) last.text += stdout
      else this.pieces.push({ text: stdout, screen: read.screen })
    }
    return { stdout, stderr, screen: read.screen }
  }

  /** Prepends what an earlier, cancelled wait had gathered (see `Carry`). */
  prepend(earlier: GatheredRead): void {
    const mine = this.pieces.splice(0)
    for (const piece of [...earlier.pieces, ...mine]) {
      const last = this.pieces[this.pieces.length - 1]
      if (!piece.screen && last && !last.screen) last.text += piece.text
      else if (piece.screen && last?.screen) this.pieces[this.pieces.length - 1] = { ...piece }
      else this.pieces.push({ ...piece })
    }
    this.stderr = earlier.stderr + this.stderr
    this.lossy ||= earlier.lossy
    this.size += earlier.size
  }

  get empty(): boolean {
    return this.pieces.length === 0 && this.stderr === ''
  }

  /** The one read to render. */
  toRead(): RenderableRead {
    return {
      ...this.last,
      streams: { stdout: this.pieces.map((p) => p.text).join(''), stderr: this.stderr },
      screen: false,
      lossy: this.lossy,
      pieces: this.pieces.map((p) => ({ ...p })),
    }
  }
}

/**
 * Output a cancelled wait had read (and so consumed from the executor) but could not deliver: the
 * next `bash_output` / `bash_input` of that task starts with it, so a cancel never loses output.
 * Per tool-bash plugin; an entry goes with its task (checked whenever one is added).
 */
export class Carry {
  readonly #held = new Map<string, GatheredRead>()

  hold(id: string, gathered: GatheredRead, exists: (id: string) => boolean): void {
    for (const key of this.#held.keys()) if (!exists(key)) this.#held.delete(key)
    if (gathered.empty && !gathered.lossy) return
    this.#held.set(id, gathered)
  }

  /** Takes what is held for `id` (then nothing is held for it). */
  take(id: string): GatheredRead | undefined {
    const held = this.#held.get(id)
    this.#held.delete(id)
    return held
  }
}

/** When a waiting call returns early (besides the task's end, a cancel, and `waitMs`). */
export interface WaitRule {
  /** Longest wait (ms); 0: one read, no wait. */
  waitMs: number
  /**
   * Return once a line of new output matches (`firstMatch` resolves with an index ≥ 0). It gets
   * every complete line once and the unfinished last line whenever it changed; a screen's rows.
   * Unset: return once output has arrived (see `echo`) and then `QUIET_MS` passed without more.
   */
  until?: (lines: string[]) => Promise<number>
  /**
   * bash_input: the text just typed. Output counts as arrived only once what came after the typing
   * is more than its echo (compared without whitespace and control characters; a control character
   * typed echoes as `^X`). Unset: any new output counts.
   */
  echo?: string
  /** Return when this many characters were gathered: more would not fit one result. */
  maxChars: number
  signal?: AbortSignal
}

/** The result of a wait: the gathered reads, and whether it ended because the caller cancelled. */
export interface Waited {
  gathered: GatheredRead
  aborted: boolean
}

/**
 * Reads task `id` until the rule says to return. `gathered` may already hold reads (an earlier
 * read, a carry); they count as arrived output. The executor's errors (unknown task) propagate.
 */
export async function waitForOutput(bash: BashExecutor, id: string, rule: WaitRule, gathered = new GatheredRead(bash.readOutput(id))): Promise<Waited> {
  const started = performance.now()
  let lastChange = started
  let arrived = rule.echo === undefined && !gathered.empty
  let afterTyping = ''
  const echo = rule.echo === undefined ? '' : bare(echoForm(rule.echo))
  const lines = new LineSplitter()
  let matched = false
  const take = async (read: BashTaskRead) => {
    const fresh = gathered.add(read)
    if (fresh.stdout === '' && fresh.stderr === '') return
    lastChange = performance.now()
    if (!arrived) {
      if (rule.echo === undefined || fresh.screen) arrived = true
      else {
        // Compared bare, so this stays no longer than the echo until output goes beyond it.
        afterTyping += bare(fresh.stdout + fresh.stderr)
        arrived = !echo.startsWith(afterTyping)
      }
    }
    if (rule.until && !matched) matched = (await rule.until(lines.feed(fresh))) >= 0
  }
  if (rule.until && !gathered.empty) {
    // What was gathered before this wait counts as new output too (bash_output's first read).
    const earlier = gathered.pieces.flatMap((piece) => lines.feed({ stdout: piece.text, stderr: '', screen: piece.screen }))
    earlier.push(...lines.feed({ stdout: '', stderr: gathered.stderr, screen: false }))
    matched = (await rule.until(earlier)) >= 0
  }
  if (rule.waitMs <= 0) return { gathered, aborted: rule.signal?.aborted === true }
  const wake = new AbortController()
  const onAbort = () => wake.abort()
  rule.signal?.addEventListener('abort', onAbort, { once: true })
  const ended = gathered.last.task.done.then(() => wake.abort())
  void ended
  try {
    for (;;) {
      const now = performance.now()
      if (gathered.last.task.status !== 'running' || rule.signal?.aborted || matched) break
      if (now - started >= rule.waitMs || gathered.size >= rule.maxChars) break
      if (arrived && !rule.until && now - lastChange >= QUIET_MS) break
      const pause = Math.max(1, Math.min(POLL_MS, rule.waitMs - (now - started)))
      await sleepUnless(pause, wake.signal)
      if (rule.signal?.aborted) break
      await take(bash.readOutput(id))
    }
    // The task may have ended between the last read and now: what it printed last belongs here.
    if (gathered.last.task.status !== 'running' && !rule.signal?.aborted) await take(bash.readOutput(id))
  } finally {
    rule.signal?.removeEventListener('abort', onAbort)
  }
  return { gathered, aborted: rule.signal?.aborted === true }
}

function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    signal.addEventListener('abort', done, { once: true })
  })
}

/** Without whitespace and control characters: how an echo is compared. */
function bare(text: string): string {
  return text.replace(/[\s\x00-\x1f\x7f]/g, '')
}

/** How a terminal echoes typed text: control characters as `^X` (`^C` for Ctrl-C, `^[` for ESC). */
function echoForm(typed: string): string {
  return typed.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => (c === '\x7f' ? '^?' : `^${String.fromCharCode(c.charCodeAt(0) + 64)}`))
}

/**
 * New output as lines for `until`: every complete line once, and the unfinished last line of a
 * stream whenever it grew (a prompt without a newline can match); a screen's rows.
 */
class LineSplitter {
  readonly #partial = { stdout: '', stderr: '' }

  feed(fresh: { stdout: string; stderr: string; screen: boolean }): string[] {
    const lines: string[] = []
    if (fresh.screen) {
      // A screen stands alone; the line stream starts again after it.
      this.#partial.stdout = ''
      lines.push(...fresh.stdout.split('\n').slice(1))
    } else {
      this.#split('stdout', fresh.stdout, lines)
    }
    this.#split('stderr', fresh.stderr, lines)
    return lines
  }

  #split(stream: 'stdout' | 'stderr', text: string, into: string[]): void {
    if (text === '') return
    const before = this.#partial[stream]
    const parts = (before + text).split('\n')
    // Lines are tested by their start (UNTIL_LINE_CHARS): an endless line is not kept whole.
    const rest = (parts.pop() ?? '').slice(0, UNTIL_LINE_CHARS)
    into.push(...parts)
    this.#partial[stream] = rest
    if (rest !== '' && (parts.length > 0 || rest !== before)) into.push(rest)
  }
}
