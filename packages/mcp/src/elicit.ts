import { type ApprovalDecision, type ApprovalRequest, approvalText, MAX_APPROVAL_TEXT, textLength } from '@deepseek-ai/dsh-tools'
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

/**
 * What the person reads: `Allow this call? ` and `approvalText` — the tool, the whole command (or
 * the arguments), the description, the other arguments and every reason, model-controlled text
 * escaped. Never cut: undefined when it does not fit `MAX_APPROVAL_TEXT` (the pipeline refuses such
 * calls before they reach the approval service; the session then answers `unavailable`).
 */
export function approvalMessage(request: ApprovalRequest): string | undefined {
  const text = approvalText(request)
  return textLength(text) > MAX_APPROVAL_TEXT ? undefined : `Allow this call? ${text}`
}

/** Accept with `allow: true` → allowed once; accept with false or decline → rejected; cancel → cancelled. */
export function decisionOf(result: ElicitResult): ApprovalDecision {
  if (result.action === 'accept') return result.content?.allow === true ? 'allowed-once' : 'rejected'
  if (result.action === 'decline') return 'rejected'
  return 'cancelled'
}
