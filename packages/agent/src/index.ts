/**
 * @deepseek-ai/dsh-agent — `ctx.agents`: agents with a session, context injection and a minimal loop.
 *
 * Flow at a glance: `ctx.agents.create({session, adapter})` (agents.ts) makes an `Agent` (agent.ts)
 * bound to the creating plugin → `agent.run(text)` runs the loop (loop.ts): the history and any
 * admitted injections go to the model adapter (adapter.ts: the message types; openai.ts for
 * chat-completions servers, scripted.ts for tests), each tool call it returns goes to
 * `ctx.tools.execute` as this agent, results back into the history, until the model answers
 * without a call. `agent.inject(content, {source})` (inject.ts) queues context (a finished task's
 * notice) for the next request. Coded errors: errors.ts.
 */
export { Agents } from './agents.js'
export { Agent, DEFAULT_MAX_STEPS, type AgentHost, type AgentOptions, type RunOptions, type SessionHeader } from './agent.js'
export {
  normalizeReply,
  type ChatMessage,
  type ChatRole,
  type ModelAdapter,
  type ModelReply,
  type ModelRequest,
  type ModelToolCall,
  type InjectSource,
} from './adapter.js'
export type { InjectedContext, InjectOptions } from './inject.js'
export { resultText } from './loop.js'
export { ScriptedAdapter, type ScriptStep } from './scripted.js'
export {
  DEFAULT_BASE_URL,
  DEFAULT_MODEL_TIMEOUT_MS,
  OpenAIChatAdapter,
  openAIOptionsFromEnv,
  type OpenAIChatOptions,
} from './openai.js'
export { AGENT_ERROR, modelFailureFacts, type ModelFailureFacts } from './errors.js'
