import xterm from '@xterm/headless'
import type { IBuffer, IMarker, Terminal as XTerminal } from '@xterm/headless'
import { TERMINAL_COLS, TERMINAL_ROWS } from '@deepseek-ai/dsh-bash'

const { Terminal } = xterm

/** Options of a `TerminalView`. */
export interface TerminalViewOptions {
  /** Columns; default `TERMINAL_COLS` (120). */
  cols?: number
  /** Rows; default `TERMINAL_ROWS` (40). */
  rows?: number
  /**
   * Lines kept above the screen (xterm's scrollback). Bounds the view's memory: about
   * (scrollback + rows) x cols cells. Lines that scroll out before a read are lost to the view (the
   * read says so with `lossy`); the spill file keeps the raw stream. Default 2000.
   */
  scrollback?: number
}

/** One read of a `TerminalView`. */
export interface TerminalRead {
  /** Readable text, never escape sequences; '' when nothing changed since the previous read. */
  text: string
  /** True when lines left the view's memory (scrollback) before they were read, or the screen was erased with them. */
  lossy: boolean
  /**
   * True when `text` is the whole current screen under its `[screen <cols>x<rows>]` header (the
   * alternate buffer was active at this read); false in line mode, whatever the lines say.
   */
  screen: boolean
}

/**
 * What a person would see of an interactive task, for a model to read: the raw terminal stream is
 * fed in (every chunk, as it arrives, so the view is right even when the collector keeps only the
 * tail of a huge stream) and `read` returns text.
 *
 * Two modes, chosen at each read by the terminal's active buffer:
 *
 * - **Line mode** (the normal buffer: shells, REPLs, prompts): the read returns the logical lines
 *   (wrapped rows joined) from the first one not yet fully read up to the cursor's line, that is
 *   the finished lines then the current unfinished one (a prompt `Name? ` that waits without a
 *   newline is shown, trailing spaces up to the cursor kept). Reads are a stream: concatenated,
 *   they give the transcript. A line that was read while unfinished is not repeated: the next read
 *   continues with what was added to it (`Ada` after `Name? `), or nothing when it did not change.
 *   When it changed otherwise (a progress line rewritten with `\r`), the next read starts a new line
 *   with its whole current text. Finished lines lose their trailing blanks.
 * - **Screen mode** (the alternate buffer: `less`, `top`, `vim`, `htop`): the read returns the whole
 *   current screen under a header line `[screen <cols>x<rows>]`, each row without trailing blanks,
 *   trailing blank rows dropped; '' when the screen is the same as at the previous read. Lines the
 *   program wrote to the normal buffer stay there and are read in line mode once it leaves.
 *
 * Memory is bounded by the scrollback; the parser runs synchronously on each chunk (`writeSync`),
 * so a read always sees everything fed so far and a fast producer is slowed by the parsing (the
 * pty's own buffer fills) instead of queueing unparsed data in memory.
 */
export class TerminalView {
  readonly cols: number
  readonly rows: number
  readonly #term: XTerminal
  /** Feeds bytes to the parser synchronously (xterm's core `writeSync`). */
  readonly #feed: (data: Uint8Array) => void
  /** First row (normal buffer) of the first logical line not fully read; undefined before the first read. */
  #marker?: IMarker
  /** The text of that line already returned ('' when none). */
  #partial = ''
  /** The last screen returned in screen mode ('' when none or after leaving it). */
  #lastScreen = ''
  #disposed = false

  constructor(options: TerminalViewOptions = {}) {
    this.cols = options.cols ?? TERMINAL_COLS
    this.rows = options.rows ?? TERMINAL_ROWS
    this.#term = new Terminal({
      cols: this.cols,
      rows: this.rows,
      scrollback: options.scrollback ?? 2000,
      allowProposedApi: true,
      // `writeSync` logs a warning once otherwise.
      logLevel: 'off',
      // Programs' requests for answers (cursor position, device attributes) are not answered: the
      // view is for reading, and nothing it says goes back to the program.
    })
    const core = (this.#term as unknown as { _core?: { writeSync?: (data: Uint8Array) => void } })._core
    if (typeof core?.writeSync !== 'function') {
      // Pinned @xterm/headless has it; a version without it must fail here, not read stale screens.
      throw new Error('@xterm/headless has no core writeSync: the pinned version 6.0.0 is required')
    }
    this.#feed = (data) => core.writeSync!(data)
    // Row 0 is the first line not read yet: if it scrolls out before the first read, the read says so.
    this.#marker = this.#term.registerMarker(0)
  }

  /** Feeds raw terminal output (any chunking; UTF-8 split across chunks is fine). Ignored after `dispose`. */
  write(data: Uint8Array | string): void {
    if (this.#disposed) return
    this.#feed(typeof data === 'string' ? Buffer.from(data) : data)
  }

  /** Changes the emulated size (a backend that resizes its pty calls this too). */
  resize(cols: number, rows: number): void {
    if (this.#disposed) return
    this.#term.resize(cols, rows)
    ;(this as { cols: number }).cols = cols
    ;(this as { rows: number }).rows = rows
  }

  /** True while a full-screen program holds the alternate buffer. */
  get fullScreen(): boolean {
    return this.#term.buffer.active.type === 'alternate'
  }

  /** What is new since the previous read (see the class comment). */
  read(): TerminalRead {
    if (this.#disposed) return { text: '', lossy: false, screen: false }
    if (this.fullScreen) {
      const screen = this.screen()
      if (screen === this.#lastScreen) return { text: '', lossy: false, screen: false }
      this.#lastScreen = screen
      return { text: screen, lossy: false, screen: true }
    }
    this.#lastScreen = ''
    return this.#readLines()
  }

  /** The current screen with its header, whichever buffer is active (for tests and displays). */
  screen(): string {
    const buffer = this.#term.buffer.active
    const lines: string[] = []
    for (let y = 0; y < this.rows; y++) lines.push(buffer.getLine(buffer.viewportY + y)?.translateToString(true) ?? '')
    while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
    return [`[screen ${this.cols}x${this.rows}]`, ...lines].join('\n')
  }

  /** Frees the emulator. Later writes and reads do nothing. */
  dispose(): void {
    if (this.#disposed) return
    this.#disposed = true
    this.#marker?.dispose()
    this.#term.dispose()
  }

  #readLines(): TerminalRead {
    const buffer = this.#term.buffer.normal
    const cursorRow = buffer.baseY + buffer.cursorY
    const cursorStart = logicalStart(buffer, cursorRow)
    let lossy = false
    let start: number
    let partial = this.#partial
    if (this.#marker === undefined) {
      start = 0
    } else if (this.#marker.isDisposed || this.#marker.line < 0) {
      // The line scrolled out of the scrollback (or the screen and scrollback were erased).
      start = 0
      partial = ''
      lossy = true
    } else {
      start = this.#marker.line
    }
    if (cursorStart < start) {
      // The cursor went back above what was read (a program redrawing earlier lines): read again from there.
      start = cursorStart
      partial = ''
    }
    const pieces: string[] = []
    let row = start
    let first = true
    let current = ''
    while (row <= cursorRow) {
      let end = row
      while (end + 1 <= cursorRow && buffer.getLine(end + 1)?.isWrapped) end++
      const isCurrent = end === cursorRow
      const text = isCurrent ? currentLineText(buffer, row, end) : logicalText(buffer, row, end)
      if (first && partial !== '') {
        const padded = text.length < partial.length ? text + ' '.repeat(partial.length - text.length) : text
        pieces.push(padded.startsWith(partial) ? text.slice(partial.length) : `\n${text}`)
      } else {
        pieces.push(text)
      }
      if (isCurrent) current = text
      first = false
      row = end + 1
    }
    // Finished lines end with a newline; the current line has none.
    const text = pieces.join('\n')
    this.#marker?.dispose()
    this.#marker = this.#term.buffer.active.type === 'normal' ? this.#term.registerMarker(cursorStart - cursorRow) : undefined
    this.#partial = current
    return { text, lossy, screen: false }
  }
}

/** The first row of the logical line that `row` belongs to (wrapped rows continue the previous one). */
function logicalStart(buffer: IBuffer, row: number): number {
  let start = row
  while (start > 0 && buffer.getLine(start)?.isWrapped) start--
  return start
}

/** A finished logical line: its rows joined, trailing blanks removed. */
function logicalText(buffer: IBuffer, from: number, to: number): string {
  let text = ''
  for (let y = from; y <= to; y++) text += buffer.getLine(y)?.translateToString(y === to) ?? ''
  return text.trimEnd()
}

/** The cursor's logical line: trailing blanks are kept up to the cursor (`Name? `), dropped after it. */
function currentLineText(buffer: IBuffer, from: number, to: number): string {
  let text = ''
  for (let y = from; y < to; y++) text += buffer.getLine(y)?.translateToString(false) ?? ''
  const last = buffer.getLine(to)
  const trimmed = last?.translateToString(true) ?? ''
  const upTo = Math.max(trimmed.length, buffer.cursorX)
  return text + (last?.translateToString(false, 0, upTo) ?? '')
}
