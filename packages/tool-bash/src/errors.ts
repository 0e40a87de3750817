import { codedError } from '@deepseek-ai/dsh-tools/errors'

/**
 * Every error the bash tools raise on purpose: a stable `code` (passed on as `result.meta.code` by
 * the pipeline) and the model-facing message, byte for byte as the contract gives it. Errors of the
 * executor (`DSH_UNKNOWN_TASK`, …) pass through with their own codes.
 */
export const TOOL_BASH_ERROR = {
  /** `bash_output` / `bash_kill` of a task owned by another session. */
  foreignTask: 'DSH_FOREIGN_TASK',
  /** Arguments that pass the schema but not the contract's checks (blank command, bad timeout, …). */
  invalidArguments: 'DSH_INVALID_ARGUMENTS',
  /** A sandbox escalation that is malformed, not wider, or not approved. */
  escalationDenied: 'DSH_ESCALATION_DENIED',
  /** tool-bash's own config failed validation. */
  invalidConfig: 'DSH_INVALID_CONFIG',
  /** A waiting `bash_output` / `bash_input` was cancelled by its caller; what it read is kept for the next read. */
  waitCancelled: 'DSH_WAIT_CANCELLED',
} as const

/** The refusal's text (also checked against docs/tools.md); here, not in render.ts, which imports budget.ts → errors.ts. */
export const foreignTaskMessage = (id: string) => `task ${id} belongs to another session`

export const toolBashErrors = {
  foreignTask: (id: string) => codedError(TOOL_BASH_ERROR.foreignTask, foreignTaskMessage(id)),
  invalidArguments: (message: string) => codedError(TOOL_BASH_ERROR.invalidArguments, message),
  escalationDenied: (message: string) => codedError(TOOL_BASH_ERROR.escalationDenied, message),
  invalidConfig: (message: string) => codedError(TOOL_BASH_ERROR.invalidConfig, message),
  waitCancelled: (id: string) =>
    codedError(TOOL_BASH_ERROR.waitCancelled, `the wait for task ${id} was cancelled; what it read comes with the next bash_output of that task`),
}
