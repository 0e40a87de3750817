import { toolBashErrors } from './errors.js'
import { escapeOutput } from './lookalike.js'
/**
 * The per-result budget: a result text that must survive a host that cuts it again (MCP clients).
 *
 * Without a budget the contract's layout holds (spec §4: the kept tail, then the truncation marker).
 * With one, a result that was cut (by the executor's memory bound or by the budget) is laid out so
 * that whatever a host keeps, the model keeps the way to the rest:
 *
 *     [output truncated; full output: PATH]      ← first: survives head-keeping cuts
 *     …the newest output, cut at a line start…   ← last: survives tail-keeping cuts
 *     [exit code: 2]                             ← status markers stay last
 *
 * and the whole text stays within `bytes` and `lines`, below the smallest inline limit of the
 * clients it is tuned for, so in practice no client cuts it at all (README: "Results and MCP clients").
 */

/** A result's size limits. Both must be positive integers. */
export interface ResultBudget {
  /** UTF-8 bytes of the whole result text. */
  bytes: number
  /** Lines of the whole result text (a final newline does not start a new line). */
  lines: number
}

/**
 * The most room a result's own lines take besides the output: the `[stderr]` label and the status
 * markers of `bash` (leftover, sandbox denial and escalation hint, timeout, exit code or signal; or
 * the yield marker), of `bash_output` (the dropped-output line, the status line with its reason, the
 * sandbox markers), and the `bash_input` first line after a typed reply. The longest of each that
 * the renderer writes is measured against it in test/budget.test.ts.
 */
export const MARKER_RESERVE: Readonly<ResultBudget> = Object.freeze({ bytes: 1024, lines: 16 })

/**
 * The executor's spill threshold for a budget (kit config `spillAboveBytes` / `spillAboveLines`):
 * output of both streams together within it always fits the budget uncut, with every marker.
 *
 * The invariant this buys: with the executor spilling each stream of a launch whose output exceeds
 * the threshold, a result the budget cuts names a file holding the complete stream(s), or says
 * `(unavailable)` only where the contract does (no intact file: over `maxSpillBytes`, spill files
 * disabled, a failed write). 0 for a budget smaller than the reserve: then any output spills.
 */
export function spillThreshold(budget: ResultBudget): ResultBudget {
  return { bytes: Math.max(0, budget.bytes - MARKER_RESERVE.bytes), lines: Math.max(0, budget.lines - MARKER_RESERVE.lines) }
}

/** Checks a budget, naming the bad field. */
export function checkBudget(budget: ResultBudget, name = 'resultBudget'): ResultBudget {
  for (const key of ['bytes', 'lines'] as const) {
    const value = budget?.[key]
    if (!(Number.isInteger(value) && value > 0)) throw toolBashErrors.invalidConfig(`${name}.${key} must be a positive integer, got ${JSON.stringify(value ?? null)}`)
  }
  return budget
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}

/** Lines of a text: newlines, plus one for a last line without a newline. 0 for ''. */
export function lineCount(text: string): number {
  if (text === '') return 0
  let count = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++
  return text.endsWith('\n') ? count : count + 1
}

export function fits(text: string, budget: ResultBudget): boolean {
  return byteLength(text) <= budget.bytes && lineCount(text) <= budget.lines
}

/**
 * The tail of `text` within `maxBytes` and `maxLines`: it starts at a line start unless a single
 * line is longer than the byte limit (then at a character boundary). Returns `text` itself when it fits.
 */
export function tailWithin(text: string, maxBytes: number, maxLines: number): string {
  maxBytes = Math.max(0, Math.floor(maxBytes))
  maxLines = Math.max(0, Math.floor(maxLines))
  if (byteLength(text) <= maxBytes && lineCount(text) <= maxLines) return text
  if (maxBytes === 0 || maxLines === 0) return ''
  // Lines: the start of the maxLines-th line from the end (a final newline ends the last line).
  let start = text.length
  let seen = 0
  let i = text.endsWith('\n') ? text.length - 1 : text.length
  while (seen < maxLines) {
    const nl = text.lastIndexOf('\n', i - 1)
    seen++
    if (nl === -1) {
      start = 0
      break
    }
    start = nl + 1
    i = nl
  }
  let tail = text.slice(start)
  const bytes = Buffer.from(tail, 'utf8')
  if (bytes.length <= maxBytes) return tail
  let from = bytes.length - maxBytes
  // Never start inside a character.
  while (from < bytes.length && (bytes[from] & 0xc0) === 0x80) from++
  if (bytes[from - 1] !== 0x0a) {
    const nl = bytes.indexOf(0x0a, from)
    // A line start within the kept part, unless the newline is the last byte (one giant line).
    if (nl !== -1 && nl < bytes.length - 1) from = nl + 1
  }
  tail = bytes.subarray(from).toString('utf8')
  return tail
}

/** One output stream to fit: its text, and the marker line saying where all of it is. */
export interface BudgetStream {
  /** The output as the model reads it (lookalike lines already escaped, lookalike.ts). */
  text: string
  /** Already cut before the budget (the executor kept only a tail). */
  truncated: boolean
  /** The marker line for this stream when it is cut (e.g. `[output truncated; full output: PATH]`). */
  marker: string
  /** Prepended to the stream's text in the body (`[stderr]\n`), or ''. */
  label: string
}

/** A layout within the budget: the text, and for each stream given (in order) whether its text is cut. */
export interface BudgetLayout {
  text: string
  cut: boolean[]
}

/**
 * Lays out streams and status markers within the budget: markers of cut streams first, then each
 * stream's newest part (stdout before stderr, as in the contract), then the status markers.
 * Returns undefined when nothing was cut and the plain layout fits: the caller then uses it.
 */
export function layoutWithinBudget(
  streams: BudgetStream[],
  plain: string,
  statusMarkers: readonly string[],
  budget: ResultBudget,
): BudgetLayout | undefined {
  if (!streams.some((s) => s.truncated) && fits(plain, budget)) return undefined
  const present = streams.filter((s) => s.text !== '' || s.truncated)
  // Reserve room for every marker line that may be needed, and for the labels and joins.
  const reserved = [...present.map((s) => s.marker), ...present.map((s) => s.label), ...statusMarkers].join('\n')
  // Per stream also one byte for the escape a cut inside a line may need (below).
  const overhead = { bytes: byteLength(reserved) + 2 * present.length + 2, lines: lineCount(reserved) + present.length + 1 }
  const avail = { bytes: budget.bytes - overhead.bytes, lines: budget.lines - overhead.lines }
  const sizes = present.map((s) => ({ bytes: byteLength(s.text), lines: lineCount(s.text) }))
  const kept = present.map((s, i) => {
    // A fair share: each stream gets what it needs up to half, more when the other needs less.
    const others = sizes.filter((_, j) => j !== i)
    const share = (key: 'bytes' | 'lines') => {
      const otherNeed = others.reduce((sum, o) => sum + o[key], 0)
      const half = Math.floor(avail[key] / present.length)
      return Math.max(half, avail[key] - otherNeed)
    }
    return escapeCutStart(s.text, tailWithin(s.text, share('bytes'), share('lines')))
  })
  const header: string[] = []
  const cut = streams.map(() => false)
  let body = ''
  present.forEach((s, i) => {
    if (s.truncated || kept[i] !== s.text) {
      header.push(s.marker)
      cut[streams.indexOf(s)] = true
    }
    if (body !== '' && !body.endsWith('\n')) body += '\n'
    body += s.label + kept[i]
  })
  if (body === '') body = '(no output)'
  const head = header.length > 0 ? `${header.join('\n')}\n` : ''
  const markers = statusMarkers.length > 0 ? `${body.endsWith('\n') ? '' : '\n'}${statusMarkers.join('\n')}` : ''
  return { text: head + body + markers, cut }
}

/**
 * A tail cut inside a line starts a line of the result with what was the middle of one: it may now
 * read as one of our lines, so that first line is escaped like any output line (lookalike.ts).
 */
function escapeCutStart(text: string, tail: string): string {
  if (tail === text || tail === '' || text[text.length - tail.length - 1] === '\n') return tail
  const nl = tail.indexOf('\n')
  const first = nl === -1 ? tail : tail.slice(0, nl)
  return escapeOutput(first) + tail.slice(first.length)
}
