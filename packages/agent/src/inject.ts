import type { ToolContent } from '@deepseek-ai/dsh-tools'
import type { ChatMessage, InjectSource } from './adapter.js'
import { agentErrors } from './errors.js'

export interface InjectOptions {
  /** Who injects; required. */
  source: InjectSource
}

/** One injection, as queued and as passed to `onInject` listeners. Frozen. */
export interface InjectedContext {
  /** The text blocks, in order (copies of what was given). */
  content: ToolContent[]
  /** Who injected it (a copy). */
  source: InjectSource
  /** When it was injected (`Date.now()`); not when, or whether, a model saw it. */
  at: number
}

/** Validates and copies an injection. Throws an Error naming what is wrong. */
export function createInjection(content: unknown, options: unknown): InjectedContext {
  if (!Array.isArray(content) || content.length === 0) {
    throw agentErrors.invalid('invalid injected content: expected a non-empty array of {type: "text", text} blocks')
  }
  const blocks = content.map((block, index) => {
    if (!block || typeof block !== 'object' || block.type !== 'text' || typeof block.text !== 'string') {
      throw agentErrors.invalid(`invalid injected content: block #${index + 1} is not a {type: "text", text: string} block`)
    }
    return Object.freeze({ type: 'text' as const, text: block.text as string })
  })
  const source = (options as Partial<InjectOptions> | undefined)?.source
  if (!source || typeof source !== 'object' || typeof source.kind !== 'string' || !source.kind) {
    throw agentErrors.invalid('invalid inject source: expected {kind: string, ...}')
  }
  if (source.kind === 'plugin' && (typeof source.plugin !== 'string' || !source.plugin)) {
    throw agentErrors.invalid('invalid inject source: {kind: "plugin"} needs a plugin name')
  }
  return Object.freeze({
    content: Object.freeze(blocks) as ToolContent[],
    source: Object.freeze({ ...source }) as InjectSource,
    at: Date.now(),
  })
}

/** The user-role history message an injection becomes when it is admitted into a request. */
export function injectionMessage(entry: InjectedContext): ChatMessage {
  return Object.freeze({
    role: 'user' as const,
    content: entry.content.map((block) => block.text).join('\n'),
    source: entry.source,
  })
}
