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
 * stream ends inside it: while a stream's last byte is not ASCII, it counts this much more.
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
  /** Per stream: bytes that may still become a U+FFFD (see PENDING_SLACK). */
  readonly #pending = { stdout: 0, stderr: 0 }
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
    this.#pending[stream] = chunk[chunk.length - 1] >= 0x80 ? PENDING_SLACK : 0
    const lines = this.#newlines + Number(this.#openLine.stdout) + Number(this.#openLine.stderr)
    const { bytes, lines: maxLines } = this.#threshold
    if ((bytes !== undefined && this.#bytes + this.#pending.stdout + this.#pending.stderr > bytes) || (maxLines !== undefined && lines > maxLines)) {
      this.#over = true
      this.#onOver()
    }
  }
}

function count(text: string, char: string): number {
  let n = 0
  for (let i = text.indexOf(char); i !== -1; i = text.indexOf(char, i + 1)) n++
  return n
}
