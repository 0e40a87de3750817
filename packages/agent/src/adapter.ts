import type { ToolSchema } from '@deepseek-ai/dsh-tools'
import { agentErrors } from './errors.js'

/** A tool call the model asked for. */
export interface ModelToolCall {
  /** The model's id for this call; the matching tool message carries it as `toolCallId`. */
  id: string
  /** The tool name, as published by `ctx.tools.schemas()`. Never checked here: unknown names fail in the pipeline. */
  name: string
  /** The arguments exactly as the model wrote them: a JSON text, possibly malformed. Never a parsed object. */
  arguments: string
}

/** Who speaks in a chat message, as in OpenAI's chat-completions API. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool'

/**
 * Who injected context (`agent.inject`, inject.ts), as carried on the message it became; defined here
 * with the messages so that inject.ts depends on adapter.ts and not back. `{kind: 'plugin', plugin}`
 * for plugins (tool-bash uses `{kind: 'plugin', plugin: 'tool-bash'}`); other kinds may carry any
 * extra fields.
 */
export type InjectSource = { kind: 'plugin'; plugin: string } | { kind: string; [key: string]: unknown }

/** One message of a conversation (OpenAI-chat-like). Messages in an agent's history are frozen. */
export interface ChatMessage {
  role: ChatRole
  /** The text. For an assistant message that only calls tools it may be empty; never null. */
  content: string
  /** Assistant messages only: the tool calls it made. Absent (never an empty array) when there were none. */
  toolCalls?: ModelToolCall[]
  /** Tool messages only: the `id` of the call this message answers. */
  toolCallId?: string
  /**
   * User messages admitted from `agent.inject` only: who injected them. Absent on messages a person
   * typed. Bookkeeping for front ends and tests; adapters do not send it to the model.
   */
  source?: InjectSource
}

/** What the agent loop asks a model adapter. */
export interface ModelRequest {
  /** The system prompt (if any) first, then the whole history, including injections admitted for this request. */
  messages: ChatMessage[]
  /** The tools the model may call: `ctx.tools.schemas()` at the time of the request; empty without a registry. */
  tools: ToolSchema[]
}

/** The model's next step. */
export interface ModelReply {
  /** The text the model wrote; empty (never null) when it only called tools. */
  text: string
  /** The tools it wants run, in order. Empty means the turn is over and `text` is the answer. */
  toolCalls: ModelToolCall[]
}

/** Turns a request into the model's next step. Implementations: `ScriptedAdapter`, `OpenAIChatAdapter`. */
export interface ModelAdapter {
  /**
   * Asks the model. Rejects on transport or protocol failures (the turn then fails with that error).
   * `signal` aborts the request when the turn is aborted or the agent disposed.
   */
  next(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply>
}

/** Checks an adapter's reply and returns a frozen, well-formed copy. Throws a clear Error otherwise. */
export function normalizeReply(reply: unknown): ModelReply {
  if (!reply || typeof reply !== 'object') throw agentErrors.model(`the model adapter returned an invalid reply: ${typeof reply}`)
  const { text, toolCalls } = reply as Partial<ModelReply>
  if (text !== undefined && text !== null && typeof text !== 'string') {
    throw agentErrors.model('the model adapter returned an invalid reply: "text" is not a string')
  }
  if (toolCalls !== undefined && toolCalls !== null && !Array.isArray(toolCalls)) {
    throw agentErrors.model('the model adapter returned an invalid reply: "toolCalls" is not an array')
  }
  const calls = (toolCalls ?? []).map((call, index) => {
    if (!call || typeof call !== 'object' || typeof call.name !== 'string') {
      throw agentErrors.model(`the model adapter returned an invalid reply: tool call #${index + 1} has no name`)
    }
    const args = call.arguments
    return Object.freeze({
      id: typeof call.id === 'string' && call.id ? call.id : `call_${index + 1}`,
      name: call.name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    })
  })
  return Object.freeze({ text: text ?? '', toolCalls: Object.freeze(calls) as ModelToolCall[] })
}
