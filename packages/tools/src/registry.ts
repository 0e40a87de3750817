import { type Context, Service } from 'cordis'
import { z } from 'zod'
import { codeOf, toolErrors } from './errors.js'
import { snapshotArguments } from './snapshot.js'
import { approvalTooLong } from './approval-text.js'
import type {
  ApprovalDecision,
  ApprovalFact,
  ApprovalRequest,
  ApprovalService,
  CallChanges,
  CallFacts,
  DecisionFact,
  ExecuteMiddleware,
  PostExecuteAction,
  PostExecuteListener,
  PreExecuteDecision,
  PreExecuteListener,
  ResultObserver,
  ToolCall,
  ToolDefinition,
  ToolExecution,
  ToolResult,
  ToolSchema,
} from './types.js'
import { formatIssues } from './validate.js'
import type { SecretInputService } from './secret-input.js'

declare module 'cordis' {
  interface Context {
    tools: ToolRegistry
    approval?: ApprovalService
    /** A person types a reply that goes to a task's terminal unseen by the model (see secret-input.ts). */
    secretInput?: SecretInputService
  }
}

export interface HookOptions {
  /** Lower runs first; equal orders run in registration order. Default 0. */
  order?: number
}

interface Ordered<T> {
  fn: T
  order: number
  seq: number
}

/** Builds a text result. */
export function textResult(text: string, isError = false): ToolResult {
  return { content: [{ type: 'text', text }], isError }
}

/**
 * Builds the `Error: <message>` result the pipeline uses for every failure. An error that carries a
 * string `code` (our packages' stable codes, Node's `ENOENT`, …) passes it on as `meta.code`, so
 * hosts classify failures by code, never by message text.
 */
export function errorResult(error: unknown): ToolResult {
  const result = textResult(`Error: ${messageOf(error)}`, true)
  const code = codeOf(error)
  if (code !== undefined) result.meta = { code }
  return result
}

/** The message a thrown value reads as in an `Error: <message>` result. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  // Libraries and listeners do throw plain objects ({message, code}); `String()` would make them
  // read `[object Object]`, which tells the model nothing.
  if (error !== null && typeof error === 'object') {
    const message = (error as { message?: unknown }).message
    return typeof message === 'string' ? message : UNKNOWN_ERROR
  }
  if (error === undefined || error === null) return UNKNOWN_ERROR
  return String(error)
}

/** What a thrown value without any message reads as (`throw {}`, `throw null`). */
export const UNKNOWN_ERROR = 'unknown error (a value without a message was thrown)'

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * `ctx.tools`: the tool registry and its execution pipeline.
 *
 * Registrations and hooks are effects of the calling plugin: they vanish when it unloads.
 * `execute` never throws.
 */
export class ToolRegistry extends Service {
  // Not `#private` fields: cordis hands callers a proxy of the service (so that `this.ctx` is the
  // caller's context), and ECMAScript private members cannot be read through a proxy.
  private readonly _tools = new Map<string, ToolDefinition>()
  private readonly _pre: Ordered<PreExecuteListener>[] = []
  private readonly _middleware: Ordered<ExecuteMiddleware>[] = []
  private readonly _post: Ordered<PostExecuteListener>[] = []
  private readonly _observers: ResultObserver[] = []
  private readonly _own: Context
  private readonly _counter = { seq: 0 }
  /** Each call object (the original and any a middleware handed on) → its call's facts being gathered. */
  private readonly _facts = new WeakMap<ToolCall, GatheredFacts>()

  constructor(ctx: Context) {
    super(ctx, 'tools', true)
    this._own = ctx
  }

  /** Registers a tool; returns its disposer. A duplicate name is an error. */
  register<S extends z.ZodType>(tool: ToolDefinition<S>): () => void {
    if (!tool || typeof tool.name !== 'string' || !TOOL_NAME.test(tool.name)) {
      throw toolErrors.invalidTool(`invalid tool name ${JSON.stringify(tool?.name)}: expected 1-64 letters, digits, "_" or "-"`)
    }
    if (typeof tool.execute !== 'function') throw toolErrors.invalidTool(`tool "${tool.name}" has no execute function`)
    if (tool.outputSchema !== undefined && typeof tool.structureOf !== 'function') {
      throw toolErrors.invalidTool(`tool "${tool.name}" has an outputSchema but no structureOf function`)
    }
    if (this._tools.has(tool.name)) throw toolErrors.duplicateTool(tool.name)
    const def = tool as unknown as ToolDefinition
    return this.ctx.effect(() => {
      if (this._tools.has(def.name)) throw toolErrors.duplicateTool(def.name)
      this._tools.set(def.name, def)
      return () => {
        if (this._tools.get(def.name) === def) this._tools.delete(def.name)
      }
    })
  }

  /** The registered tool of that name, if any. */
  get(name: string): ToolDefinition | undefined {
    return this._tools.get(name)
  }

  /** Names of the registered tools, in registration order. */
  names(): string[] {
    return [...this._tools.keys()]
  }

  /** Plain copies of the published schemas. */
  schemas(): ToolSchema[] {
    return [...this._tools.values()].map((tool) => {
      const schema: ToolSchema = {
        name: tool.name,
        description: tool.description,
        parameters: z.toJSONSchema(tool.parameters, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
      }
      if (tool.outputSchema) schema.outputSchema = z.toJSONSchema(tool.outputSchema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>
      if (tool.annotations) schema.annotations = { ...tool.annotations }
      return schema
    })
  }

  /** Adds a `tools/pre-execute` listener (allow / deny / ask / pass). */
  onPreExecute(listener: PreExecuteListener, options: HookOptions = {}): () => void {
    return this._addOrdered(this._pre, listener, options)
  }

  /** Adds a `tools/execute` around-middleware. */
  useMiddleware(middleware: ExecuteMiddleware, options: HookOptions = {}): () => void {
    return this._addOrdered(this._middleware, middleware, options)
  }

  /** Adds a `tools/post-execute` listener (replace / append / mark a finished result). */
  onPostExecute(listener: PostExecuteListener, options: HookOptions = {}): () => void {
    return this._addOrdered(this._post, listener, options)
  }

  /** Adds an observer of finished calls. */
  onResult(observer: ResultObserver): () => void {
    return this.ctx.effect(() => {
      this._observers.push(observer)
      return () => remove(this._observers, observer)
    })
  }

  /** Runs a call through the whole pipeline. Never throws. */
  async execute(execution: ToolExecution): Promise<ToolResult> {
    let result: ToolResult
    const gathered: GatheredFacts = { ran: false, approvals: [] }
    try {
      result = await this._run(execution, gathered)
    } catch (error) {
      result = errorResult(error)
    }
    result = this._structure(typeof execution?.name === 'string' ? this._tools.get(execution.name) : undefined, result)
    if (this._observers.length === 0) return result
    const facts = freezeFacts(gathered)
    for (const observer of [...this._observers]) {
      try {
        const returned: unknown = observer(execution, result, facts)
        // An async observer's rejection must not become an unhandled rejection.
        if (returned instanceof Promise) returned.catch((error) => this._warn(`result observer failed: ${messageOf(error)}`))
      } catch (error) {
        this._warn(`result observer failed: ${messageOf(error)}`)
      }
    }
    return result
  }

  /**
   * Asks the approval service about a call, as the pipeline does for an `ask`, and records the
   * answer in that call's facts (`CallFacts.approvals`, seen by observers). For tools that ask on
   * their own (tool-bash's sandbox escalation); `call` is the call object the tool was given.
   * `unavailable` when no service is loaded, or when it throws (logged). Checks nothing else: a
   * caller refuses a request too long to show (`approvalTooLong`) before asking.
   */
  async requestApproval(call: ToolCall, request: ApprovalRequest): Promise<ApprovalDecision> {
    const approval = this._own.get('approval') as ApprovalService | undefined
    if (!approval || typeof approval.request !== 'function') return 'unavailable'
    let answer: ApprovalDecision
    try {
      answer = await approval.request(request)
    } catch (error) {
      this._warn(`approval service failed: ${messageOf(error)}`)
      answer = 'unavailable'
    }
    const fact: ApprovalFact = { answer }
    if (request.reason !== undefined) fact.reason = request.reason
    if (typeof approval.via === 'string') fact.via = approval.via
    this._facts.get(call)?.approvals.push(fact)
    return answer
  }

  private async _run(execution: ToolExecution, gathered: GatheredFacts): Promise<ToolResult> {
    const name = execution?.name
    const tool = typeof name === 'string' ? this._tools.get(name) : undefined
    if (!tool) throw toolErrors.unknownTool(name)
    if (execution.signal?.aborted) throw toolErrors.abortedBeforeStart()

    // Stages 1 and 2: a frozen, lossless JSON snapshot, then the schema.
    const call = parseCall(tool, execution.arguments, {
      callId: String(execution.callId ?? ''),
      name: tool.name,
      agent: execution.agent,
      signal: execution.signal,
      onProgress: safeProgress(execution.onProgress),
    })
    this._facts.set(call, gathered)
    gathered.args = call.args
    let result: ToolResult
    try {
      // Stage 3: permissions.
      await this._authorize(call)
      // Approval can take a person minutes: a call cancelled meanwhile must not run after all.
      if (call.signal?.aborted) throw toolErrors.abortedBeforeStart()
      // Stages 4 and 5: around-middleware, then the tool.
      result = await this._dispatch(tool, call)
    } catch (error) {
      result = errorResult(error)
    }
    // Stage 6: post-execute listeners see every call that has a validated call object.
    return this._postExecute(call, result)
  }

  private _dispatch(tool: ToolDefinition, first: ToolCall): Promise<ToolResult> {
    const chain = [...this._middleware]
    const dispatch = async (index: number, call: ToolCall): Promise<ToolResult> => {
      try {
        if (index === chain.length) {
          const gathered = this._facts.get(call)
          if (gathered) gathered.ran = true
          return normalize(await tool.execute(call.args, call))
        }
        let called = false
        const next = async (changes?: CallChanges) => {
          // Running the tool twice for one call would repeat its side effects.
          if (called) throw toolErrors.contract('a tools/execute middleware called next() more than once')
          called = true
          return dispatch(index + 1, await this._change(tool, call, changes))
        }
        return normalize(await chain[index].fn(call, next))
      } catch (error) {
        return errorResult(error)
      }
    }
    return dispatch(0, first)
  }

  /** The call a middleware hands on with `next(changes)`: checked as strictly as the original. */
  private async _change(tool: ToolDefinition, call: ToolCall, changes: CallChanges | undefined): Promise<ToolCall> {
    if (changes === undefined) return call
    if (changes === null || typeof changes !== 'object') throw toolErrors.contract('a tools/execute middleware passed invalid changes to next(): expected an object')
    const { signal, args } = changes
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw toolErrors.contract('a tools/execute middleware passed an invalid signal to next(): expected an AbortSignal')
    }
    let changed: ToolCall = Object.freeze({ ...call, signal: signal ?? call.signal })
    const gathered = this._facts.get(call)
    if (args !== undefined) {
      changed = parseCall(tool, args, changed)
      if (gathered) {
        this._facts.set(changed, gathered)
        gathered.args = changed.args
      }
      // New arguments are a new request: the permission stage must see exactly what will run.
      await this._authorize(changed)
    } else if (gathered) {
      this._facts.set(changed, gathered)
    }
    return changed
  }

  private async _postExecute(call: ToolCall, result: ToolResult): Promise<ToolResult> {
    for (const { fn } of [...this._post]) {
      try {
        const action = await fn(call, result)
        if (action) result = applyPostAction(result, action)
      } catch (error) {
        // Fail closed: a listener that redacts or blocks and then fails must not let the original through.
        result = errorResult(error)
      }
    }
    return result
  }

  /**
   * A tool with an `outputSchema` gets structured facts on every result: the tool's own, else its
   * `structureOf` (errors, vetoes); checked against the schema. Facts that do not fit are the
   * tool's bug: the result becomes that error (with `structureOf`'s facts), never invalid data.
   */
  private _structure(tool: ToolDefinition | undefined, result: ToolResult): ToolResult {
    if (!tool?.outputSchema || !tool.structureOf) return result
    try {
      return this._structureChecked(tool.name, tool.outputSchema, tool.structureOf.bind(tool), result)
    } catch (error) {
      // `execute` never throws: a structureOf that broke its promise leaves the result without facts.
      this._warn(`tool "${tool.name}": structureOf failed: ${messageOf(error)}`)
      return result
    }
  }

  private _structureChecked(name: string, schema: z.ZodType, structureOf: (result: ToolResult) => Record<string, unknown>, result: ToolResult): ToolResult {
    let structured = result.structured ?? structureOf(result)
    let checked = schema.safeParse(structured)
    if (checked.success) return { ...result, structured: checked.data as Record<string, unknown> }
    const detail = formatIssues(checked.error.issues, structured)
    this._warn(`tool "${name}" returned structured content that does not fit its outputSchema: ${detail}`)
    const error = errorResult(toolErrors.contract(`the tool "${name}" returned structured content that does not fit its outputSchema: ${detail}`))
    structured = structureOf(error)
    checked = schema.safeParse(structured)
    return checked.success ? { ...error, structured: checked.data as Record<string, unknown> } : error
  }

  private async _authorize(call: ToolCall): Promise<void> {
    let decision: PreExecuteDecision | undefined
    for (const { fn } of [...this._pre]) {
      const answer = await fn(call)
      if (answer) {
        decision = answer
        break
      }
    }
    const gathered = this._facts.get(call)
    if (gathered) {
      // A changed call is decided again: the decision recorded is the one for what runs.
      gathered.decision = undefined
      if (decision) gathered.decision = decisionFact(decision)
    }
    if (!decision || decision.kind === 'allow') return
    if (decision.kind === 'deny') throw toolErrors.denied(decision.reason || `tool "${call.name}" was denied`)
    if (decision.kind !== 'ask') throw toolErrors.contract(`invalid pre-execute decision ${JSON.stringify((decision as { kind: unknown }).kind)}`)
    const why = decision.reason ? `: ${decision.reason}` : ''
    const approval = this._own.get('approval') as ApprovalService | undefined
    if (!approval || typeof approval.request !== 'function') {
      throw toolErrors.denied(`denied: approval required but no approval service is available${why}`)
    }
    const request: ApprovalRequest = {
      callId: call.callId,
      tool: call.name,
      // What the person approves is exactly what will run: the validated arguments.
      arguments: call.args,
      reason: decision.reason,
      agent: call.agent,
      signal: call.signal,
    }
    if (Array.isArray(decision.reasons) && decision.reasons.length > 0) request.reasons = Object.freeze([...decision.reasons])
    // Shown whole or not at all: a cut text could hide the part that runs.
    const tooLong = approvalTooLong(request)
    if (tooLong) throw toolErrors.approvalTooLong(tooLong, why)
    const answer = await this.requestApproval(call, request)
    switch (answer) {
      case 'allowed-once':
        return
      case 'rejected':
        throw toolErrors.rejected(why)
      case 'cancelled':
        throw toolErrors.approvalCancelled(why)
      default:
        throw toolErrors.denied(`denied: approval unavailable${why}`)
    }
  }

  private _addOrdered<T>(list: Ordered<T>[], fn: T, options: HookOptions): () => void {
    if (typeof fn !== 'function') throw toolErrors.contract('expected a function')
    const entry: Ordered<T> = { fn, order: options.order ?? 0, seq: this._counter.seq++ }
    return this.ctx.effect(() => {
      list.push(entry)
      list.sort((a, b) => a.order - b.order || a.seq - b.seq)
      return () => remove(list, entry)
    })
  }

  private _warn(message: string): void {
    this._own.logger('dsh-tools').error(message)
  }
}

/** `CallFacts` while the call is under way (frozen for observers by `freezeFacts`). */
interface GatheredFacts {
  args?: Readonly<Record<string, unknown>>
  ran: boolean
  decision?: DecisionFact
  approvals: ApprovalFact[]
}

/** A listener's decision as plain data: only the documented fields, whatever else it carried. */
function decisionFact(decision: PreExecuteDecision): DecisionFact | undefined {
  const { kind } = decision
  if (kind !== 'allow' && kind !== 'deny' && kind !== 'ask') return undefined
  const fact: DecisionFact = { kind }
  const { reason, reasons, rule } = decision as { reason?: unknown; reasons?: unknown; rule?: unknown }
  if (typeof reason === 'string') fact.reason = reason
  if (Array.isArray(reasons) && reasons.every((r) => typeof r === 'string')) fact.reasons = Object.freeze([...reasons])
  if (typeof rule === 'string') fact.rule = rule
  return Object.freeze(fact)
}

function freezeFacts(gathered: GatheredFacts): CallFacts {
  const facts: CallFacts = { ran: gathered.ran, approvals: Object.freeze(gathered.approvals.map((a) => Object.freeze({ ...a }))) }
  if (gathered.args !== undefined) facts.args = gathered.args
  if (gathered.decision !== undefined) facts.decision = gathered.decision
  return Object.freeze(facts)
}

/** Snapshot (stage 1) and schema (stage 2) of `args`, as a frozen call built on `base`. */
function parseCall(tool: ToolDefinition, args: unknown, base: Omit<ToolCall, 'args' | 'rawArguments'>): ToolCall {
  const raw = snapshotArguments(args)
  const parsed = tool.parameters.safeParse(raw)
  if (!parsed.success) throw toolErrors.invalidArguments(formatIssues(parsed.error.issues, raw))
  return Object.freeze({
    callId: base.callId,
    name: base.name,
    args: deepFreeze(parsed.data as Record<string, unknown>),
    rawArguments: raw,
    agent: base.agent,
    signal: base.signal,
    onProgress: base.onProgress,
  })
}

function applyPostAction(result: ToolResult, action: PostExecuteAction): ToolResult {
  switch (action.kind) {
    case 'replace': {
      const replaced = normalize(action.result)
      // New text for the same run (a redaction) keeps the run's facts; an error gets the tool's.
      if (replaced.structured === undefined && !replaced.isError && result.structured !== undefined) replaced.structured = result.structured
      return replaced
    }
    case 'append':
      if (typeof action.text !== 'string') throw toolErrors.contract('a tools/post-execute listener appended a non-string')
      return { ...result, content: [...result.content, { type: 'text', text: action.text }] }
    case 'mark':
      if (!isPlainObject(action.meta)) throw toolErrors.contract('a tools/post-execute listener marked a result with a non-object')
      return { ...result, meta: { ...result.meta, ...action.meta } }
    default:
      throw toolErrors.contract(`invalid post-execute action ${JSON.stringify(String((action as { kind: unknown }).kind))}`)
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

/** Wraps a caller's progress sink so that a failing front end never fails the tool. */
function safeProgress(sink: ToolExecution['onProgress']): ToolCall['onProgress'] {
  if (typeof sink !== 'function') return undefined
  return (update) => {
    try {
      sink(update)
    } catch {
      // Progress is best effort.
    }
  }
}

function normalize(result: ToolResult | string): ToolResult {
  if (typeof result === 'string') return textResult(result)
  if (!result || !Array.isArray(result.content)) throw toolErrors.contract('the tool returned an invalid result')
  const normal: ToolResult = { content: result.content, isError: result.isError === true }
  if (isPlainObject(result.meta)) normal.meta = result.meta
  if (isPlainObject(result.structured)) normal.structured = result.structured
  return normal
}

function remove<T>(list: T[], item: T): void {
  const index = list.indexOf(item)
  if (index >= 0) list.splice(index, 1)
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
