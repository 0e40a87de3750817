import type { ApprovalDecision, ApprovalRequest } from '@deepseek-ai/dsh-tools'
import type { ElicitResult } from '@modelcontextprotocol/sdk/types.js'

/** The yes/no form of an approval elicitation. */
export const approvalSchema = {
  type: 'object' as const,
  properties: {
    allow: {
      type: 'boolean' as const,
      title: 'Allow this call once',
      description: 'Yes runs this one call; no refuses it.',
      default: false,
    },
  },
  required: ['allow'],
}

const MAX_SHOWN = 2000

/** What the person reads: the tool, the command (or the arguments), and why it needs approval. */
export function approvalMessage(request: ApprovalRequest): string {
  const args = request.arguments ?? {}
  const command = typeof args.command === 'string' ? args.command : undefined
  let shown = command !== undefined ? `${request.tool}: ${command}` : `${request.tool} ${JSON.stringify(args)}`
  if (shown.length > MAX_SHOWN) shown = `${shown.slice(0, MAX_SHOWN)}…`
  const lines = [`Allow this call? ${shown}`]
  if (typeof args.description === 'string' && args.description.trim()) lines.push(`(${args.description.trim()})`)
  if (request.reason) lines.push(`Reason: ${request.reason}`)
  return lines.join('\n')
}

/** Accept with `allow: true` → allowed once; accept with false or decline → rejected; cancel → cancelled. */
export function decisionOf(result: ElicitResult): ApprovalDecision {
  if (result.action === 'accept') return result.content?.allow === true ? 'allowed-once' : 'rejected'
  if (result.action === 'decline') return 'rejected'
  return 'cancelled'
}
