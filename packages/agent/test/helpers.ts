import { Context } from 'cordis'
import { z } from 'zod'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { Agents, type AgentOptions } from '../src/index.js'

/** A root context with the real ToolRegistry and Agents services. */
export function createContext(options: { tools?: boolean } = {}): Context {
  const ctx = new Context()
  if (options.tools !== false) ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  return ctx
}

export const session = { id: 'session-1', cwd: '/tmp/workspace' }

export function agentOptions(extra: Partial<AgentOptions> = {}): AgentOptions {
  return { session, ...extra }
}

/** Loads a real plugin that uses `ctx.agents` (and `ctx.tools` when asked). */
export function usePlugin(ctx: Context, name: string, apply: (ctx: Context) => void, inject: string[] = ['agents']) {
  return ctx.plugin({ name, inject, apply })
}

/** Registers a small real tool: `add` adds two numbers and records who called it. */
export function registerAdd(ctx: Context) {
  const calls: { a: number; b: number; agentId?: string; owner?: string }[] = []
  ctx.tools.register({
    name: 'add',
    description: 'Adds two numbers.',
    parameters: z.object({ a: z.number(), b: z.number() }),
    execute: (args, call) => {
      calls.push({ ...args, agentId: call.agent?.id, owner: call.agent?.session.header.id })
      return `${args.a + args.b}`
    },
  })
  return calls
}
