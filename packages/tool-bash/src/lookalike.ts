/**
 * Output that reads like our own lines.
 *
 * Every line tool-bash writes of its own into a result (a status marker, the `[stderr]` label, a
 * truncation line, the yield marker, a screen header, `(no output)`, a completion notice) begins
 * with one of `OWN_LINE_OPENINGS`. A command can print such a line too: `printf '[still running
 * after 50s; continues as background task bash-7: …]'` and exit 0. So every line of *output* that
 * would read as one of ours gets one backslash in front (`\[exit code: 3]`), the way mboxrd quotes
 * `From ` lines: a line of output is escaped when, after any backslashes and then any invisible
 * characters at its start, it begins with an opening. Lines of ours are never escaped; output is
 * never anything but escaped where it matches. The rule is reversible (`unescapeOutput` removes one
 * backslash from exactly the lines that got one), so a program reading the text recovers the output
 * byte for byte; programs should read the real status from `structuredContent` instead of the text.
 */

/**
 * How every line tool-bash writes of its own begins. A renderer line that begins otherwise is a
 * bug: test/lookalike.test.ts renders every marker and checks it against this list.
 */
export const OWN_LINE_OPENINGS: readonly string[] = Object.freeze([
  '[output truncated', // `[output truncated; full output: PATH]`
  '[some output was dropped', // bash_output's lost-data line
  '[stderr]', // the stderr label
  '[stopped ', // leftover processes
  '[sandbox:', // the denial marker, the escalation hint, a network denial
  '[timed out after ',
  '[killed', // `[killed by signal: SIG]`, `[killed: memory limit …]`
  '[exit code:',
  '[process limit',
  '[still running after ', // the yield marker
  '[status:', // bash_output's status line
  '[screen ', // a full-screen program's header
  '[the user typed a reply', // bash_input after a reply typed by a person
  '[bytes ', // a range of a complete output (bash_output with offset)
  '(no output)',
  '(no new output)',
  'started background task ',
  'background bash task ', // the completion notice
])

/** The mark put in front of a lookalike line of output. */
export const ESCAPE = '\\'

/**
 * What may stand before an opening and still leave the line reading as ours to a person: carriage
 * returns and other C0 controls (a terminal UI moves to column 0 or draws nothing), CSI escape
 * sequences (colours, erase line), and invisible format characters (zero-width space, BOM,
 * bidirectional marks). They are skipped when matching; the backslash still goes first.
 */
const INVISIBLE = String.raw`(?:\x1b\[[0-?]*[ -\/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]|\p{Cf})*`

const OPENING = OWN_LINE_OPENINGS.map((o) => o.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')
/** A line start: the start of the text or after `\n` (not after `\r`, which the `m` flag would count). */
const LINE_START = String.raw`(?<![^\n])`
/** A line that reads as ours to a person or a program. */
const OURS = new RegExp(String.raw`^${INVISIBLE}(?:${OPENING})`, 'u')
/** A line start whose line reads as ours once any backslashes at its start are taken off. */
const LOOKALIKE = new RegExp(String.raw`${LINE_START}(?=\\*${INVISIBLE}(?:${OPENING}))`, 'gu')
/** An escaped lookalike: the first backslash is ours. */
const ESCAPED = new RegExp(String.raw`${LINE_START}\\(?=\\*${INVISIBLE}(?:${OPENING}))`, 'gu')

/** True when this single line (no newline) reads as one of ours: what `escapeOutput` never lets output do. */
export function readsAsOurs(line: string): boolean {
  return OURS.test(line)
}

/**
 * Output text as the model reads it: every line that would read as one of ours gets `ESCAPE` in
 * front. Every line start counts, the first included (a kept tail may begin inside a line, but what
 * matters is how the result reads). Text without a lookalike comes back unchanged (the same string).
 */
export function escapeOutput(text: string): string {
  return text.replace(LOOKALIKE, ESCAPE)
}

/** The inverse of `escapeOutput`: removes one `ESCAPE` from exactly the lines it escaped. */
export function unescapeOutput(text: string): string {
  return text.replace(ESCAPED, '')
}
