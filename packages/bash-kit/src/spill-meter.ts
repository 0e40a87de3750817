/**
 * When a launch's two streams together must spill, although memory could keep each whole.
 *
 * Why: a front end that cuts results to a budget (the MCP server: 10,000 bytes, 1,900 lines) cuts
 * a result over the budget even when no stream overflowed the executor's memory bound: many short
 * lines (`seq 1 2000`: 8,893 bytes, 2,000 lines), or stdout and stderr each under the bound but
 * over it together. Without a file such a cut says `full output: (unavailable)`. With a threshold
 * below the budget (minus the room its markers take), every stream of a launch whose output
 * crosses it keeps a spill file, so every cut result names a file holding all of it.
 */

/** The threshold over both streams of one launch. An unset field never triggers. */
export interface SpillThreshold {
  /**
   * UTF-8 bytes of the text the streams decode to (invalid bytes and NUL count as U+FFFD, 3 bytes,
   * as the model reads them), stdout and stderr together. Never raw bytes of one stream.
   */
  bytes?: number
  /** Lines of stdout plus lines of stderr (a last line without newline counts). */
  lines?: number
}

/**
 * A character still incomplete in the decoder counts 0 here but becomes U+FFFD (3 bytes) if the
 * stream ends inside it: while a stream may end inside one, it counts this much more.
 */
const PENDING_SLACK = 3

/**
 * Measures the output of one launch (stdout and stderr together) as the model would read it, until
 * it exceeds the threshold; then calls `onOver` once and stops measuring (no cost after that).
 * Not crossing the threshold costs one streaming decode of at most the threshold's bytes per stream.
 */
export class SpillMeter {
  readonly #threshold: SpillThreshold
  readonly #onOver: () => void
  readonly #decoders = { stdout: new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }), stderr: new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }) }
  /** Per stream: the decoded text so far ends in a line without its newline. */
  readonly #openLine = { stdout: false, stderr: false }
  /** Per stream: its last (up to 4) bytes, to tell whether it stops inside a character. */
  readonly #tail = { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }
  #bytes = 0
  #newlines = 0
  #over = false

  constructor(threshold: SpillThreshold, onOver: () => void) {
    this.#threshold = threshold
    this.#onOver = onOver
  }

  /** True once the threshold was exceeded. */
  get over(): boolean {
    return this.#over
  }

  /** Counts a chunk of one stream. */
  add(stream: 'stdout' | 'stderr', chunk: Uint8Array): void {
    if (this.#over || chunk.length === 0) return
    const text = this.#decoders[stream].decode(chunk, { stream: true })
    if (text !== '') {
      // A NUL reaches the model as U+FFFD: 3 bytes instead of 1.
      this.#bytes += Buffer.byteLength(text, 'utf8') + 2 * count(text, '\0')
      this.#newlines += count(text, '\n')
      this.#openLine[stream] = !text.endsWith('\n')
    }
    this.#tail[stream] = Buffer.concat([this.#tail[stream], chunk.subarray(-4)]).subarray(-4)
    const inside = { stdout: endsInsideCharacter(this.#tail.stdout), stderr: endsInsideCharacter(this.#tail.stderr) }
    // A stream stopping inside a character may still add a U+FFFD, and with it an unfinished line.
    const pendingBytes = PENDING_SLACK * (Number(inside.stdout) + Number(inside.stderr))
    const lines = this.#newlines + Number(this.#openLine.stdout || inside.stdout) + Number(this.#openLine.stderr || inside.stderr)
    const { bytes, lines: maxLines } = this.#threshold
    if ((bytes !== undefined && this.#bytes + pendingBytes > bytes) || (maxLines !== undefined && lines > maxLines)) {
      this.#over = true
      this.#onOver()
    }
  }
}

/**
 * True when the bytes may stop inside a UTF-8 character: a lead byte followed by fewer continuation
 * bytes than it announces, or only continuation bytes (their lead is further back: assumed so).
 */
export function endsInsideCharacter(tail: Uint8Array): boolean {
  let i = tail.length - 1
  let continuations = 0
  while (i >= 0 && (tail[i] & 0xc0) === 0x80) {
    i--
    continuations++
  }
  if (i < 0) return continuations > 0
  const lead = tail[i]
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1
  return continuations + 1 < length
}

function count(text: string, char: string): number {
  let n = 0
  for (let i = text.indexOf(char); i !== -1; i = text.indexOf(char, i + 1)) n++
  return n
}
