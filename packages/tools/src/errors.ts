/**
 * Every error the tool pipeline raises on purpose, in one place: a stable `code` for programs (hosts
 * match on it, and `errorResult` passes it on as `result.meta.code`) and the message for the model,
 * which stays byte for byte as the README gives it. Nothing classifies an error by its text.
 */

/** An `Error` that carries a stable machine-readable `code`. */
export interface CodedError extends Error {
  code: string
}

/** Makes an `Error` with a stable `code` (the way Node's own errors carry `ENOENT`). */
export function codedError(code: string, message: string, options?: { cause?: unknown }): CodedError {
  return Object.assign(new Error(message, options), { code })
}

/** The string `code` a thrown value carries, if any. */
export function codeOf(error: unknown): string | undefined {
  if (error === null || typeof error !== 'object') return undefined
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && code.length > 0 ? code : undefined
}

/** True when `error` carries exactly this code. */
export function hasCode(error: unknown, code: string): boolean {
  return codeOf(error) === code
}

/** The codes of the pipeline's own errors. */
export const TOOL_ERROR = {
  /** No tool of that name is registered. */
  unknownTool: 'DSH_UNKNOWN_TOOL',
  /** The arguments failed the snapshot or the schema. */
  invalidArguments: 'DSH_INVALID_ARGUMENTS',
  /** The call was aborted before the tool ran. */
  abortedBeforeStart: 'DSH_ABORTED_BEFORE_START',
  /** A `tools/pre-execute` listener denied the call, or an `ask` could not be approved. */
  denied: 'DSH_DENIED',
  /** A person rejected the call when asked. */
  rejected: 'DSH_REJECTED',
  /** The approval request was cancelled. */
  approvalCancelled: 'DSH_APPROVAL_CANCELLED',
  /** The call's approval text is longer than `MAX_APPROVAL_TEXT`: nobody was asked, nothing ran. */
  approvalTooLong: 'DSH_APPROVAL_TOO_LONG',
  /** `register` got a tool with an invalid name or no execute function. */
  invalidTool: 'DSH_INVALID_TOOL',
  /** `register` got a name that is already registered. */
  duplicateTool: 'DSH_DUPLICATE_TOOL',
  /** A listener, middleware or tool broke the pipeline's contract (invalid decision, result, action, next()). */
  contract: 'DSH_PIPELINE_CONTRACT',
} as const

export const toolErrors = {
  unknownTool: (name: unknown) => codedError(TOOL_ERROR.unknownTool, `unknown tool ${JSON.stringify(String(name))}`),
  invalidArguments: (detail: string) => codedError(TOOL_ERROR.invalidArguments, `invalid arguments: ${detail}`),
  abortedBeforeStart: () => codedError(TOOL_ERROR.abortedBeforeStart, 'the call was aborted before it started'),
  denied: (message: string) => codedError(TOOL_ERROR.denied, message),
  rejected: (why: string) => codedError(TOOL_ERROR.rejected, `rejected by the user${why}`),
  approvalCancelled: (why: string) => codedError(TOOL_ERROR.approvalCancelled, `approval was cancelled${why}`),
  approvalTooLong: (tooLong: string, why: string) => codedError(TOOL_ERROR.approvalTooLong, `denied: ${tooLong}${why}`),
  contract: (message: string) => codedError(TOOL_ERROR.contract, message),
  invalidTool: (message: string) => codedError(TOOL_ERROR.invalidTool, message),
  duplicateTool: (name: string) => codedError(TOOL_ERROR.duplicateTool, `tool "${name}" is already registered`),
}

/**
 * Codes of the `ToolCaller` contract that other packages match on: an agent's `inject()` throws an
 * error with `DSH_AGENT_DISPOSED` once the agent is disposed (tool-bash then drops the notice quietly).
 */
export const CALLER_ERROR = {
  disposed: 'DSH_AGENT_DISPOSED',
} as const
