import type { ChatMessage, ModelAdapter, ModelReply, ModelRequest } from './adapter.js'
import { normalizeReply } from './adapter.js'
import { agentErrors } from './errors.js'

/** The default of `OpenAIChatOptions.timeoutMs`. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000
/** The base URL `fromEnv` uses when none is configured. */
export const DEFAULT_BASE_URL = 'https://api.openai.com/v1'

/** Options of `OpenAIChatAdapter`. */
export interface OpenAIChatOptions {
  /** The API root, e.g. `https://api.deepseek.com/v1`; `/chat/completions` is appended. Trailing slashes are ignored. */
  baseUrl: string
  /** The model name sent in every request. */
  model: string
  /** Sent as `Authorization: Bearer <apiKey>`; no Authorization header when absent. Never logged or put in errors. */
  apiKey?: string
  /** Extra request headers (they may override `content-type`, and `authorization` when no apiKey is set). */
  headers?: Record<string, string>
  /** Per-request timeout in milliseconds; default 120000. `0` disables it. */
  timeoutMs?: number
}

type Env = Record<string, string | undefined>

/**
 * Reads adapter options from the environment. Each setting takes the first non-empty variable:
 * base URL `DSH_MODEL_BASE_URL`, `OPENAI_BASE_URL` (default `https://api.openai.com/v1`);
 * model `DSH_MODEL`, `OPENAI_MODEL` (required: Error when absent); key `DSH_MODEL_API_KEY`, `OPENAI_API_KEY`.
 * `overrides` (e.g. from command-line flags) win over the environment.
 */
export function openAIOptionsFromEnv(env: Env = process.env, overrides: Partial<OpenAIChatOptions> = {}): OpenAIChatOptions {
  const pick = (...names: string[]) => names.map((name) => env[name]).find((value) => typeof value === 'string' && value.trim() !== '')?.trim()
  const model = overrides.model ?? pick('DSH_MODEL', 'OPENAI_MODEL')
  if (!model) throw agentErrors.invalid('no model configured: set DSH_MODEL or OPENAI_MODEL (or pass a model)')
  const options: OpenAIChatOptions = {
    ...overrides,
    baseUrl: overrides.baseUrl ?? pick('DSH_MODEL_BASE_URL', 'OPENAI_BASE_URL') ?? DEFAULT_BASE_URL,
    model,
  }
  const apiKey = overrides.apiKey ?? pick('DSH_MODEL_API_KEY', 'OPENAI_API_KEY')
  if (apiKey) options.apiKey = apiKey
  return options
}

/** A model adapter for OpenAI-compatible chat-completions endpoints (OpenAI, DeepSeek, vLLM, Ollama, …), using global `fetch`. */
export class OpenAIChatAdapter implements ModelAdapter {
  /** `${baseUrl}/chat/completions`. */
  readonly url: string
  readonly model: string
  readonly timeoutMs: number
  readonly #apiKey?: string
  readonly #headers: Record<string, string>

  constructor(options: OpenAIChatOptions) {
    if (!options || typeof options.baseUrl !== 'string') throw agentErrors.invalid('OpenAIChatAdapter needs a baseUrl')
    let base: URL
    try {
      base = new URL(options.baseUrl)
    } catch {
      throw agentErrors.invalid(`invalid model base URL ${JSON.stringify(options.baseUrl)}`)
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw agentErrors.invalid(`invalid model base URL ${JSON.stringify(options.baseUrl)}: expected http or https`)
    }
    if (typeof options.model !== 'string' || !options.model) throw agentErrors.invalid('OpenAIChatAdapter needs a model name')
    const timeoutMs = options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw agentErrors.invalid(`invalid timeoutMs ${JSON.stringify(options.timeoutMs)}`)
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`
    this.model = options.model
    this.timeoutMs = timeoutMs
    this.#apiKey = options.apiKey || undefined
    this.#headers = { ...options.headers }
  }

  /** An adapter configured from the environment; see `openAIOptionsFromEnv`. */
  static fromEnv(env: Env = process.env, overrides: Partial<OpenAIChatOptions> = {}): OpenAIChatAdapter {
    return new OpenAIChatAdapter(openAIOptionsFromEnv(env, overrides))
  }

  /** The JSON body sent for a request (exposed for logging and tests). */
  body(request: ModelRequest): Record<string, unknown> {
    const body: Record<string, unknown> = { model: this.model, messages: request.messages.map(toWireMessage) }
    if (request.tools.length > 0) {
      body.tools = request.tools.map((tool) => {
        const { $schema: _ignored, ...parameters } = tool.parameters
        return { type: 'function', function: { name: tool.name, description: tool.description, parameters } }
      })
    }
    return body
  }

  async next(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', ...this.#headers }
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`
    const timeout = this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined
    const signals = [signal, timeout].filter((s): s is AbortSignal => s !== undefined)
    const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0]

    let status: number
    let statusText: string
    let text: string
    try {
      const response = await fetch(this.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(this.body(request)),
        signal: combined,
      })
      status = response.status
      statusText = response.statusText
      text = await response.text()
    } catch (error) {
      if (timeout?.aborted && !signal?.aborted) throw agentErrors.model(`model request timed out after ${this.timeoutMs}ms`, error, { detail: `request timed out after ${this.timeoutMs}ms` })
      if (signal?.aborted) throw agentErrors.model('model request was aborted', error, { detail: 'request was aborted' })
      throw agentErrors.model(`model request to ${this.url} failed: ${describe(error)}`, error, { url: this.url })
    }
    if (status < 200 || status > 299) {
      const detail = `HTTP ${status}${statusText ? ` ${statusText}` : ''}: ${excerpt(text)}`
      throw agentErrors.model(`model request failed: ${detail}`, undefined, { detail })
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw agentErrors.model(`model reply is not JSON: ${excerpt(text)}`, undefined, { detail: `reply is not JSON: ${excerpt(text)}` })
    }
    const message = (json as { choices?: { message?: unknown }[] } | null)?.choices?.[0]?.message
    if (!message || typeof message !== 'object') throw agentErrors.model(`model reply has no choices[0].message: ${excerpt(text)}`, undefined, { detail: `reply has no choices[0].message: ${excerpt(text)}` })
    return fromWireMessage(message as WireAssistantMessage)
  }
}

interface WireAssistantMessage {
  content?: unknown
  tool_calls?: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[]
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant':
      if (message.toolCalls?.length) {
        return {
          role: 'assistant',
          content: message.content || null,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      }
      return { role: 'assistant', content: message.content }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content }
    default:
      return { role: message.role, content: message.content }
  }
}

function fromWireMessage(message: WireAssistantMessage): ModelReply {
  const content = message.content
  let text = ''
  if (typeof content === 'string') text = content
  else if (Array.isArray(content)) {
    text = content.map((part) => (part && typeof part.text === 'string' ? part.text : '')).join('')
  }
  // normalizeReply supplies the missing id (`call_N`) and stringifies non-string arguments.
  const toolCalls = (Array.isArray(message.tool_calls) ? message.tool_calls : []).map((call) => ({
    id: call?.id,
    name: typeof call?.function?.name === 'string' ? call.function.name : '',
    arguments: call?.function?.arguments,
  }))
  return normalizeReply({ text, toolCalls })
}

function excerpt(text: string, max = 500): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  if (!flat) return '(empty body)'
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message
}
