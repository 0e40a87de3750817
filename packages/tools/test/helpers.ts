import { Context } from 'cordis'
import { z } from 'zod'
import { ToolRegistry, type ToolDefinition } from '../src/index.js'

/** A root context with a real `ToolRegistry` loaded. */
export function createContext(): Context {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  return ctx
}

/** Loads a real plugin that needs `ctx.tools`; returns its fork (dispose it to unload the plugin). */
export function usePlugin(ctx: Context, name: string, apply: (ctx: Context) => void) {
  return ctx.plugin({ name, inject: ['tools'], apply })
}

export const bashLike = z.object({
  command: z.string(),
  description: z.string().optional(),
})

/** A tool that echoes its `command` argument. */
export function echoTool(name = 'echo', execute?: ToolDefinition<typeof bashLike>['execute']): ToolDefinition<typeof bashLike> {
  return {
    name,
    description: 'Echoes the command.',
    parameters: bashLike,
    execute: execute ?? ((args) => `ran ${args.command}`),
  }
}

export function text(result: { content: { text: string }[] }): string {
  return result.content.map((block) => block.text).join('')
}
