import type { Writable } from 'node:stream'
import type { ApprovalDecision, ApprovalRequest } from '@deepseek-ai/dsh-tools'

/**
 * The y/N approval prompt shared by the REPL and `dsh-bash agent`: prints what would run and why,
 * then reads one line with `next` (null: the input ended). Only "y"/"yes" allow, once; an aborted
 * call or the end of the input cancels.
 */
export async function askApproval(request: ApprovalRequest, next: () => Promise<string | null>, out: Writable): Promise<ApprovalDecision> {
  const args = request.arguments ?? {}
  const what = typeof args.command === 'string' ? `${request.tool}: ${args.command}` : `${request.tool} ${JSON.stringify(args)}`
  out.write(`approval needed for ${what}${request.reason ? `\nreason: ${request.reason}` : ''}\n`)
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
