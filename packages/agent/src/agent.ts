import { isAbsolute } from 'node:path'
import type { Logger } from 'cordis'
import type { ToolCaller, ToolContent, ToolRegistry } from '@deepseek-ai/dsh-tools'
import type { ChatMessage, ModelAdapter } from './adapter.js'
import { createInjection, type InjectedContext, type InjectOptions, injectionMessage } from './inject.js'
import { runLoop } from './loop.js'
import { agentErrors } from './errors.js'

/** The default of `AgentOptions.maxSteps`. */
export const DEFAULT_MAX_STEPS = 32

/** Options of `ctx.agents.create`. */
export interface AgentOptions {
  /** Identity of the agent object, unique among live agents. Default: generated, `agent-1`, `agent-2`, … Never an owner token. */
  id?: string
  /** The session the agent works in. */
  session: {
    /** The session id: the owner token of tasks this agent starts (tool-bash stamps it on background tasks). */
    id: string
    /** The session's workspace: an absolute directory path (not checked for existence). */
    cwd: string
    /**
     * The session's sandbox mode, overriding the executor's default for every command of this
     * session (a non-empty string; the executor validates it). Omitted: the executor's default.
     * Escalations are measured against it.
     */
    sandboxMode?: string
    /**
     * The session's egress rules (host patterns): they narrow the executor's for every command of
     * this session, never widen them (`BashExecRequest.network`). Omitted: the executor's alone.
     */
    network?: { allow?: string[]; deny?: string[] }
  }
  /** Asks the model for the next step. Without one, `run` fails; `inject`/`takeInjected` still work. */
  adapter?: ModelAdapter
  /** The system prompt, sent first in every request. Default: none. */
  system?: string
  /** The most model requests one `run` may make. Default 32. */
  maxSteps?: number
}

/** Options of `agent.run`. */
export interface RunOptions {
  /** Aborts the turn: the model request and running tool calls get the signal; `run` rejects. */
  signal?: AbortSignal
}

/** The session header: who the agent works for and where. Frozen. */
export interface SessionHeader {
  /** The session id: the owner token of whatever this session starts. Not the agent id. */
  readonly id: string
  /** The workspace directory (absolute). */
  readonly cwd: string
  /** The session's sandbox mode (see `AgentOptions.session.sandboxMode`); absent: the executor's default. */
  readonly sandboxMode?: string
  /** The session's egress rules (see `AgentOptions.session.network`); absent: none. Frozen. */
  readonly network?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] }
}

/** What an agent needs from its owner (the `Agents` service). Not for direct use. */
export interface AgentHost {
  /** `ctx.tools` of the context that created the agent, resolved at each use; undefined if not loaded. */
  tools(): ToolRegistry | undefined
  /** Called once, when the agent is disposed. */
  disposed(agent: Agent): void
  /** Where the agent reports failures that have no caller (a throwing inject listener): the creating plugin's logger. */
  logger: Logger
}

/**
 * An agent: a session, a history, a queue of injected context and a minimal loop. Create it with
 * `ctx.agents.create(options)`; it is disposed with the plugin that created it.
 */
export class Agent implements ToolCaller {
  /** Identity of this agent object, unique among live agents. Never an owner token: use `session.header.id`. */
  readonly id: string
  /** The session; `header` is frozen. */
  readonly session: { readonly header: SessionHeader }
  /** The system prompt, if any. */
  readonly system?: string
  /** The most model requests one `run` may make. */
  readonly maxSteps: number
  /** The model adapter, if any. */
  readonly adapter?: ModelAdapter

  #disposed = false
  #turns = 0
  #turn: AbortController | undefined
  readonly #history: ChatMessage[] = []
  readonly #pending: InjectedContext[] = []
  readonly #listeners = new Set<(entry: InjectedContext) => void>()
  readonly #host: AgentHost

  /** Use `ctx.agents.create`; this constructor only validates and stores. */
  constructor(id: string, options: AgentOptions, host: AgentHost) {
    const session = options?.session
    if (!session || typeof session !== 'object') throw agentErrors.invalid('agent options need a session: {id, cwd}')
    if (typeof session.id !== 'string' || !session.id) throw agentErrors.invalid('session.id must be a non-empty string')
    if (typeof session.cwd !== 'string' || !isAbsolute(session.cwd)) {
      throw agentErrors.invalid(`session.cwd must be an absolute path, got ${JSON.stringify(session.cwd)}`)
    }
    if (session.sandboxMode !== undefined && (typeof session.sandboxMode !== 'string' || session.sandboxMode === '')) {
      throw agentErrors.invalid(`session.sandboxMode must be a non-empty string, got ${JSON.stringify(session.sandboxMode)}`)
    }
    const network = session.network
    if (network !== undefined) {
      const list = (value: unknown) => value === undefined || (Array.isArray(value) && value.every((item) => typeof item === 'string'))
      if (network === null || typeof network !== 'object' || !list(network.allow) || !list(network.deny)) {
        throw agentErrors.invalid(`session.network must be { allow?: string[], deny?: string[] }, got ${JSON.stringify(network)}`)
      }
    }
    const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS
    if (!Number.isInteger(maxSteps) || maxSteps < 1) {
      throw agentErrors.invalid(`maxSteps must be a positive integer, got ${JSON.stringify(options.maxSteps)}`)
    }
    if (options.system !== undefined && typeof options.system !== 'string') throw agentErrors.invalid('system must be a string')
    if (options.adapter !== undefined && typeof options.adapter?.next !== 'function') {
      throw agentErrors.invalid('adapter must have a next(request, signal) method')
    }
    this.id = id
    const header: SessionHeader = {
      id: session.id,
      cwd: session.cwd,
      ...(session.sandboxMode === undefined ? {} : { sandboxMode: session.sandboxMode }),
      ...(network === undefined
        ? {}
        : {
            network: Object.freeze({
              ...(network.allow ? { allow: Object.freeze([...network.allow]) } : {}),
              ...(network.deny ? { deny: Object.freeze([...network.deny]) } : {}),
            }),
          }),
    }
    this.session = Object.freeze({ header: Object.freeze(header) })
    this.system = options.system
    this.maxSteps = maxSteps
    this.adapter = options.adapter
    this.#host = host
  }

  /** True once disposed; a disposed agent never runs or accepts injections again. */
  get disposed(): boolean {
    return this.#disposed
  }

  /** True while a turn (`run`) is in progress. */
  get busy(): boolean {
    return this.#turn !== undefined
  }

  /** How many turns have been started (including failed ones). Injections never start a turn. */
  get turns(): number {
    return this.#turns
  }

  /**
   * The conversation so far (frozen messages, a fresh frozen array): user messages, admitted
   * injections, assistant replies and tool results. The system prompt is not part of it.
   */
  get history(): readonly ChatMessage[] {
    return Object.freeze([...this.#history])
  }

  /** How many injections are queued and not yet admitted into a request or taken. */
  get pendingInjections(): number {
    return this.#pending.length
  }

  /**
   * Adds durable context: it is admitted into the next model request, exactly once, as a user
   * message (and then stays in the history). It never starts a turn. Listeners of `onInject` are
   * called synchronously. Throws `agent "<id>" is disposed` on a disposed agent, and an Error on
   * invalid content or source.
   */
  inject(content: ToolContent[], options: InjectOptions): void {
    if (this.#disposed) throw this.#disposedError()
    const entry = createInjection(content, options)
    this.#pending.push(entry)
    for (const listener of [...this.#listeners]) {
      try {
        listener(entry)
      } catch (error) {
        this.#host.logger.error(`inject listener of agent "${this.id}" failed: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
  }

  /**
   * Calls `listener` synchronously on every later `inject` (front ends forward notices at once).
   * Returns a function that removes it. A throwing listener is logged and ignored. Listening does
   * not consume: the injection stays queued for the next request or `takeInjected`.
   */
  onInject(listener: (entry: InjectedContext) => void): () => void {
    if (typeof listener !== 'function') throw agentErrors.invalid('onInject expects a function')
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /**
   * Drains the queue of injections not yet admitted into a request, oldest first. For front ends
   * without a loop (they deliver them themselves); what is taken here never reaches a model request.
   */
  takeInjected(): InjectedContext[] {
    return this.#pending.splice(0)
  }

  /**
   * Runs one turn: appends the user message (after any injections already queued), then asks the
   * model and runs its tool calls through `ctx.tools` until it answers without tool calls; resolves
   * with that answer. Rejects when busy, disposed, aborted, without an adapter, on adapter errors,
   * or after `maxSteps` requests.
   */
  async run(userText: string, options: RunOptions = {}): Promise<string> {
    if (this.#disposed) throw this.#disposedError()
    if (this.#turn) throw agentErrors.busy(this.id)
    if (typeof userText !== 'string') throw agentErrors.invalid('run expects the user message as a string')
    const adapter = this.adapter
    if (!adapter) throw agentErrors.invalid(`agent "${this.id}" has no model adapter`)
    const turn = new AbortController()
    this.#turn = turn
    this.#turns++
    const signal = options.signal ? AbortSignal.any([options.signal, turn.signal]) : turn.signal
    try {
      this.#admitInjected()
      this.#history.push(Object.freeze({ role: 'user' as const, content: userText }))
      return await runLoop(
        {
          caller: this,
          adapter,
          maxSteps: this.maxSteps,
          admitInjected: () => this.#admitInjected(),
          requestMessages: () => this.#requestMessages(),
          append: (message) => void this.#history.push(message),
          tools: () => this.#host.tools(),
          assertAlive: () => {
            if (this.#disposed) throw this.#disposedError()
          },
        },
        signal,
      )
    } finally {
      if (this.#turn === turn) this.#turn = undefined
    }
  }

  /** Disposes the agent: aborts a running turn, drops queued injections and listeners, leaves `ctx.agents.list()`. Idempotent. */
  dispose(): void {
    if (this.#disposed) return
    this.#disposed = true
    this.#turn?.abort(this.#disposedError())
    this.#pending.length = 0
    this.#listeners.clear()
    this.#host.disposed(this)
  }

  #admitInjected(): void {
    for (const entry of this.#pending.splice(0)) this.#history.push(injectionMessage(entry))
  }

  #requestMessages(): ChatMessage[] {
    const system: ChatMessage[] = this.system ? [Object.freeze({ role: 'system' as const, content: this.system })] : []
    return [...system, ...this.#history]
  }

  #disposedError(): Error {
    return agentErrors.disposed(this.id)
  }
}
