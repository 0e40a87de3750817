import type { ToolCaller, ToolRegistry, ToolResult } from '@deepseek-ai/dsh-tools'
import { type ChatMessage, type ModelAdapter, type ModelToolCall, normalizeReply } from './adapter.js'
import { agentErrors } from './errors.js'

/** What the loop needs of an agent. Implemented by `Agent`; not part of the public API. */
export interface LoopHost {
  /** The caller handed to `ctx.tools.execute` (the agent itself). */
  readonly caller: ToolCaller
  readonly adapter: ModelAdapter
  readonly maxSteps: number
  /** Moves the pending injections into the history (each becomes one user message). */
  admitInjected(): void
  /** The messages of the next request: system prompt, then the history. */
  requestMessages(): ChatMessage[]
  /** Appends to the history. */
  append(message: ChatMessage): void
  /** `ctx.tools`, resolved now; undefined when no registry is loaded. */
  tools(): ToolRegistry | undefined
  /** Throws the "disposed" error once the agent is disposed. */
  assertAlive(): void
}

/**
 * Runs one turn after the user message has been appended: ask the model, run its tool calls through
 * `ctx.tools`, feed the results back, until the model answers without tool calls (its text is
 * returned) or `maxSteps` model requests have been made (Error).
 */
export async function runLoop(host: LoopHost, signal: AbortSignal): Promise<string> {
  const id = host.caller.id
  for (let step = 1; step <= host.maxSteps; step++) {
    checkpoint(host, signal)
    host.admitInjected()
    const registry = host.tools()
    const request = { messages: host.requestMessages(), tools: registry ? registry.schemas() : [] }
    let reply
    try {
      reply = normalizeReply(await host.adapter.next(request, signal))
    } catch (error) {
      checkpoint(host, signal, error)
      throw error
    }
    checkpoint(host, signal)
    host.append(
      Object.freeze(
        reply.toolCalls.length
          ? { role: 'assistant' as const, content: reply.text, toolCalls: reply.toolCalls }
          : { role: 'assistant' as const, content: reply.text },
      ),
    )
    if (reply.toolCalls.length === 0) return reply.text

    // Every call gets its tool message, even when the turn is being aborted (the pipeline then
    // answers at once), so that the history stays a valid conversation for the next turn.
    let missing: Error | undefined
    for (const call of reply.toolCalls) {
      let content: string
      const current = host.tools()
      if (!current) {
        missing ??= agentErrors.noTools(id, call.name)
        content = `Error: ${missing.message}`
      } else {
        content = await runToolCall(current, host.caller, call, signal)
      }
      host.assertAlive()
      host.append(Object.freeze({ role: 'tool' as const, content, toolCallId: call.id }))
    }
    if (missing) throw missing
  }
  throw agentErrors.maxSteps(id, host.maxSteps)
}

async function runToolCall(
  registry: ToolRegistry,
  agent: ToolCaller,
  call: ModelToolCall,
  signal: AbortSignal,
): Promise<string> {
  let args: unknown
  const raw = call.arguments.trim()
  if (raw === '') {
    args = {}
  } else {
    try {
      args = JSON.parse(raw)
    } catch (error) {
      return `Error: invalid arguments: not valid JSON (${error instanceof Error ? error.message : String(error)})`
    }
  }
  const result = await registry.execute({ callId: call.id, name: call.name, arguments: args, agent, signal })
  return resultText(result)
}

/** The text a tool result becomes in a tool message: its text blocks joined by newlines. */
export function resultText(result: ToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('\n')
}

function checkpoint(host: LoopHost, signal: AbortSignal, cause?: unknown): void {
  host.assertAlive()
  if (signal.aborted) {
    throw agentErrors.aborted(host.caller.id, cause ?? signal.reason)
  }
}
