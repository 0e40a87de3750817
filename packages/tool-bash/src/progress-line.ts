import type { BashExecRequest } from '@deepseek-ai/dsh-bash'
import type { ToolCall } from '@deepseek-ai/dsh-tools'

/** The longest unfinished line kept per stream (characters): enough for any line a display shows. */
const PARTIAL_KEEP = 4096
/** The longest message reported (characters, then `…`). */
const MESSAGE_MAX = 200

/**
 * Turns live output into progress updates carrying the newest complete, non-blank line (both
 * streams), reported only when it changes; front ends throttle further.
 *
 * Cost: each piece is looked at from its end, back to the newest line that is not blank, never
 * split into lines: `seq 1 1000000` arrives in ~100 pieces of 64 KiB holding ~10,000 lines each,
 * and splitting every one of them (as this did first) cost more CPU than the rest of the call
 * together (bench/README.md, "Line-heavy output"). Only a piece of blank lines is read whole.
 */
export function newestLineReporter(report: NonNullable<ToolCall['onProgress']>): NonNullable<BashExecRequest['onOutput']> {
  const partial = { stdout: '', stderr: '' }
  let last = ''
  return (stream, text) => {
    const end = text.lastIndexOf('\n')
    if (end === -1) {
      partial[stream] = keepTail(partial[stream] + text)
      return
    }
    let line = ''
    // Lines end at `stop` (a newline); the first one of the piece continues the stream's partial line.
    for (let stop = end; ; ) {
      // lastIndexOf clamps a negative start to 0: at the first character there is no earlier newline.
      const start = stop > 0 ? text.lastIndexOf('\n', stop - 1) : -1
      const piece = start === -1 ? partial[stream] + text.slice(0, stop) : text.slice(start + 1, stop)
      line = piece.trim()
      if (line !== '' || start === -1) break
      stop = start
    }
    partial[stream] = keepTail(text.slice(end + 1))
    if (line === '' || line === last) return
    last = line
    report({ message: line.length > MESSAGE_MAX ? `${line.slice(0, MESSAGE_MAX)}…` : line })
  }
}

function keepTail(text: string): string {
  return text.length > PARTIAL_KEEP ? text.slice(-PARTIAL_KEEP) : text
}
