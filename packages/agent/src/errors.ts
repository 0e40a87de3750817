import { CALLER_ERROR, codedError, hasCode } from '@deepseek-ai/dsh-tools/errors'

/**
 * Every error the agent package raises on purpose: a stable `code` to match on, the message for
 * people and models. Messages stay as the README gives them.
 */
export const AGENT_ERROR = {
  /** The agent was disposed; `inject`, `run` and a running turn fail with it. */
  disposed: CALLER_ERROR.disposed,
  /** `run` while a turn is in progress. */
  busy: 'DSH_AGENT_BUSY',
  /** The turn's signal was aborted. */
  aborted: 'DSH_AGENT_ABORTED',
  /** The turn made `maxSteps` model requests without a final answer. */
  maxSteps: 'DSH_AGENT_MAX_STEPS',
  /** The model asked for tools but no tool registry is loaded. */
  noTools: 'DSH_AGENT_NO_TOOLS',
  /** Invalid options, content or source given to the agent package (a programming error of the caller). */
  invalid: 'DSH_AGENT_INVALID',
  /** An agent id that is already live. */
  duplicate: 'DSH_AGENT_DUPLICATE',
  /** A model adapter failed or returned something unusable. */
  model: 'DSH_MODEL_ERROR',
} as const

export const agentErrors = {
  disposed: (id: string) => codedError(AGENT_ERROR.disposed, `agent "${id}" is disposed`),
  busy: (id: string) => codedError(AGENT_ERROR.busy, `agent "${id}" is busy: one turn at a time`),
  aborted: (id: string, cause: unknown) => codedError(AGENT_ERROR.aborted, `agent "${id}": the turn was aborted`, { cause }),
  maxSteps: (id: string, maxSteps: number) =>
    codedError(AGENT_ERROR.maxSteps, `agent "${id}" stopped after ${maxSteps} model requests (maxSteps) without a final answer`),
  noTools: (id: string, tool: string) =>
    codedError(
      AGENT_ERROR.noTools,
      `agent "${id}" cannot run tool "${tool}": no tool registry (ctx.tools) is loaded; load the ToolRegistry plugin of @deepseek-ai/dsh-tools`,
    ),
  invalid: (message: string) => codedError(AGENT_ERROR.invalid, message),
  duplicate: (id: string) => codedError(AGENT_ERROR.duplicate, `agent "${id}" already exists`),
  model: (message: string, cause?: unknown, facts: ModelFailureFacts = {}): Error & ModelFailureFacts =>
    Object.assign(
      codedError(AGENT_ERROR.model, message, cause === undefined ? undefined : { cause }),
      Object.fromEntries(Object.entries(facts).filter(([, value]) => value !== undefined)),
    ),
}

/**
 * What a model failure (`DSH_MODEL_ERROR`) may carry besides its message, so a front end can
 * re-word it without reading the text.
 */
export interface ModelFailureFacts {
  /** The failure without the adapter's own prefix (`HTTP 500 Internal Server Error: …`, `request timed out after 5ms`); absent when the message is all there is. */
  detail?: string
  /** The endpoint, present only when the message already names it. */
  url?: string
}

/** The facts a thrown model failure carries (empty for anything else). */
export function modelFailureFacts(error: unknown): ModelFailureFacts {
  if (!hasCode(error, AGENT_ERROR.model)) return {}
  const { detail, url } = error as ModelFailureFacts
  return { ...(typeof detail === 'string' ? { detail } : {}), ...(typeof url === 'string' ? { url } : {}) }
}
