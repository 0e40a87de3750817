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
