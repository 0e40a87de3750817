import type { ApprovalRequest } from './types.js'

/**
 * The longest approval text (in characters, as `approvalText` renders it) a person is asked about. A
 * longer call is refused before anyone is asked, never shown cut: the part left out could be what runs.
 */
export const MAX_APPROVAL_TEXT = 8000

/**
 * Characters that can hide, reorder or fake what a person reads: controls (C0, DEL, C1: a line
 * break starts a fake `Reason:` line, ESC drives the terminal, CR overwrites), format characters
 * (bidi overrides and isolates, zero-width characters, tag characters, the soft hyphen, the BOM),
 * line and paragraph separators, surrogates, private-use and unassigned code points, other
 * default-ignorable ones (Hangul fillers, variation selectors), and every blank but the ASCII space
 * (bash splits words at ASCII blanks only). The control pictures U+2400–U+243F are escaped too, so
 * that a ␊ on the page always stands for a real line feed.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}\p{Default_Ignorable_Code_Point}\u2400-\u243f]/gu

/**
 * Model-controlled text made safe to show a person: every character of the classes above is replaced
 * by a visible escape, so the text stays on one line and reads as it is. C0 controls and DEL become
 * their control pictures (line feed `␊`, carriage return `␍`, tab `␉`, ESC `␛`, DEL `␡`); anything
 * else becomes `\u{XXXX}` (U+202E → `\u{202E}`). Everything else, backslashes included, is unchanged.
 */
export function visibleText(text: string): string {
  return text.replace(HIDDEN, (ch) => {
    if (ch === ' ') return ch
    const code = ch.codePointAt(0)!
    if (code < 0x20) return String.fromCodePoint(0x2400 + code)
    if (code === 0x7f) return '\u2421'
    return `\\u{${code.toString(16).toUpperCase().padStart(4, '0')}}`
  })
}

/** Every reason of a request, `reason` first, without repeats. */
export function approvalReasons(request: Pick<ApprovalRequest, 'reason' | 'reasons'>): string[] {
  const all = [request.reason, ...(Array.isArray(request.reasons) ? request.reasons : [])]
  return [...new Set(all.filter((reason): reason is string => typeof reason === 'string' && reason !== ''))]
}

/**
 * What a person reads before approving a call, the same in every front end: the tool and the whole
 * command (or the arguments), how many lines the command has, the description, the other arguments,
 * and every reason. Each model-controlled part goes through `visibleText`, so the text has exactly the
 * line breaks this function puts in. Never cut: a caller measures it against `MAX_APPROVAL_TEXT` and
 * refuses a call that does not fit (`approvalTooLong`).
 */
export function approvalText(request: Pick<ApprovalRequest, 'tool' | 'arguments' | 'reason' | 'reasons'>): string {
  const { command, description, ...others } = request.arguments ?? {}
  const rest: Record<string, unknown> = others
  if (description !== undefined && typeof description !== 'string') rest.description = description
  const tool = visibleText(String(request.tool))
  const lines: string[] = []
  if (typeof command === 'string') {
    lines.push(`${tool}: ${visibleText(command)}`)
    const count = command.split('\n').length
    if (count > 1) lines.push(`(${count} lines: each ␊ is a line break)`)
    if (typeof description === 'string' && description.trim() !== '') lines.push(`Description: ${visibleText(description.trim())}`)
    if (Object.keys(rest).length > 0) lines.push(`Arguments: ${visibleText(JSON.stringify(rest))}`)
  } else {
    lines.push(`${tool} ${visibleText(JSON.stringify(request.arguments ?? {}))}`)
  }
  const reasons = approvalReasons(request)
  if (reasons.length === 1) lines.push(`Reason: ${visibleText(reasons[0])}`)
  if (reasons.length > 1) lines.push(`Reasons (${reasons.length}):`, ...reasons.map((reason) => `- ${visibleText(reason)}`))
  return lines.join('\n')
}

/** The length of an approval text in characters (code points), as limits and messages count it. */
export function textLength(text: string): number {
  let count = 0
  for (const _ of text) count++
  return count
}

/**
 * Undefined when the request's approval text fits `MAX_APPROVAL_TEXT`; else the stable reason it
 * cannot be asked about: `the call is too long to show for approval (<n> characters, at most 8000): split it into shorter calls`.
 */
export function approvalTooLong(request: Pick<ApprovalRequest, 'tool' | 'arguments' | 'reason' | 'reasons'>): string | undefined {
  const length = textLength(approvalText(request))
  if (length <= MAX_APPROVAL_TEXT) return undefined
  return `the call is too long to show for approval (${length} characters, at most ${MAX_APPROVAL_TEXT}): split it into shorter calls`
}
