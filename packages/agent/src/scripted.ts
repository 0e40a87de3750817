import { type ModelAdapter, type ModelReply, type ModelRequest, normalizeReply } from './adapter.js'
import { agentErrors } from './errors.js'

/** One step of a script: a reply (missing fields default to `''` and `[]`), or a function computing it from the request. */
export type ScriptStep =
  | Partial<ModelReply>
  | ((request: ModelRequest) => Partial<ModelReply> | Promise<Partial<ModelReply>>)

/**
 * A model adapter that plays a fixed script, one step per request, for tests and demos.
 * Records every request it receives, including one that finds the script exhausted.
 */
export class ScriptedAdapter implements ModelAdapter {
  /** Every request received, in order. Messages are the agent's frozen history messages; nothing is copied. */
  readonly requests: ModelRequest[] = []
  readonly #steps: readonly ScriptStep[]

  constructor(steps: ScriptStep[]) {
    if (!Array.isArray(steps)) throw agentErrors.invalid('ScriptedAdapter expects an array of steps')
    this.#steps = [...steps]
  }

  /** Steps not yet played. */
  get remaining(): number {
    return Math.max(0, this.#steps.length - this.requests.length)
  }

  async next(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    this.requests.push(request)
    signal?.throwIfAborted()
    const index = this.requests.length - 1
    if (index >= this.#steps.length) {
      throw agentErrors.model(`scripted adapter: the script has ${this.#steps.length} step(s), but request #${index + 1} arrived`)
    }
    const step = this.#steps[index]
    return normalizeReply(typeof step === 'function' ? await step(request) : step)
  }
}
