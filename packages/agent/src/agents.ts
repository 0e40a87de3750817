import { type Context, Service } from 'cordis'
import { serviceObject, type ToolRegistry } from '@deepseek-ai/dsh-tools'
import { Agent, type AgentOptions } from './agent.js'
import { agentErrors } from './errors.js'

declare module 'cordis' {
  interface Context {
    agents: Agents
  }
}

/**
 * `ctx.agents`: creates agents and lists the live ones.
 *
 * An agent is an effect of the plugin that creates it: it is disposed when that plugin unloads.
 */
export class Agents extends Service {
  // Not `#private` fields: cordis hands callers a proxy of the service (so that `this.ctx` is the
  // caller's context), and ECMAScript private members cannot be read through a proxy.
  private readonly _live: Agent[] = []
  private readonly _counter = { next: 1 }

  constructor(ctx: Context) {
    super(ctx, 'agents', true)
  }

  /**
   * Creates an agent owned by the calling plugin. Throws on invalid options (a relative `cwd`, a
   * duplicate `id`, …). The agent resolves `ctx.tools` lazily from the calling plugin's context.
   */
  create(options: AgentOptions): Agent {
    const ctx = this.ctx
    const live = this._live
    const id = options?.id ?? this._nextId()
    if (typeof id !== 'string' || !id) throw agentErrors.invalid('agent id must be a non-empty string')
    if (live.some((agent) => agent.id === id)) throw agentErrors.duplicate(id)
    let release: (() => void) | undefined
    const agent = new Agent(id, options, {
      // The registry's object, not cordis' proxy of it (service-object.ts in dsh-tools says why).
      tools: () => serviceObject(ctx.get('tools')) as ToolRegistry | undefined,
      logger: ctx.logger('dsh-agent'),
      disposed: (agent) => {
        const index = live.indexOf(agent)
        if (index >= 0) live.splice(index, 1)
        release?.()
      },
    })
    release = ctx.effect(() => {
      live.push(agent)
      return () => agent.dispose()
    })
    return agent
  }

  /** The live agents, in creation order (a fresh array). */
  list(): Agent[] {
    return [...this._live]
  }

  /** The live agent with that id, if any. */
  get(id: string): Agent | undefined {
    return this._live.find((agent) => agent.id === id)
  }

  protected override stop(): void {
    for (const agent of [...this._live]) agent.dispose()
  }

  private _nextId(): string {
    let id: string
    do id = `agent-${this._counter.next++}`
    while (this._live.some((agent) => agent.id === id))
    return id
  }
}
