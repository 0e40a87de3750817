import type { Writable } from 'node:stream'
import { type ApprovalDecision, type ApprovalRequest, approvalText, MAX_APPROVAL_TEXT, textLength } from '@deepseek-ai/dsh-tools'

/**
 * Put before the prompt on a terminal: normal attributes (earlier output — a command's, in the REPL
 * — can leave text concealed or drawn in the background colour) and the ASCII character set (a
 * line-drawing set turns letters into box pieces). It moves nothing and erases nothing.
 */
export const TERMINAL_RESET = '\x1b[0m\x1b(B\x0f'

/**
 * The y/N approval prompt shared by the REPL and `dsh-bash agent`: prints the whole call and every
 * reason (`approvalText`: model-controlled text escaped, never cut), then reads one line with `next`
 * (null: the input ended). Only "y"/"yes" allow, once; an aborted call or the end of the input
 * cancels. A call too long to show whole is not asked about (`unavailable`; the pipeline refuses
 * such calls before they get here).
 */
export async function askApproval(request: ApprovalRequest, next: () => Promise<string | null>, out: Writable): Promise<ApprovalDecision> {
  const text = approvalText(request)
  if (textLength(text) > MAX_APPROVAL_TEXT) return 'unavailable'
  const reset = (out as { isTTY?: boolean }).isTTY ? TERMINAL_RESET : ''
  out.write(`${reset}approval needed for ${text}\n`)
  out.write('allow once? [y/N] ')
  const answer = await Promise.race([
    next(),
    new Promise<'aborted'>((resolve) => request.signal?.addEventListener('abort', () => resolve('aborted'), { once: true })),
  ])
  if (answer === null || answer === 'aborted') {
    out.write('\n')
    return 'cancelled'
  }
  return /^\s*y(es)?\s*$/i.test(answer) ? 'allowed-once' : 'rejected'
}
