import type { z } from 'zod'

/** A block of tool output. Only text is produced by the tools of this project. */
export interface TextContent {
  type: 'text'
  text: string
}

export type ToolContent = TextContent

/** What a tool call returns to the model. */
export interface ToolResult {
  /** The blocks shown to the model, in order. */
  content: ToolContent[]
  /**
   * True only for failures of the tool itself (invalid arguments, infrastructure errors,
   * permission denials). Never true merely because a command failed: the model decides about that.
   */
  isError: boolean
  /**
   * Machine-readable facts about the result for hosts and UIs (an error's `code`, marks added by
   * `tools/post-execute` listeners). Plain JSON data. Never shown to the model: front ends that
   * forward `content` do not forward `meta` as text.
   */
  meta?: Record<string, unknown>
  /**
   * The result's facts as data, for programs (MCP `structuredContent`): for a tool with an
   * `outputSchema`, always present once the pipeline returns and valid against it (the pipeline
   * fills it with the tool's `structureOf` when the tool did not, and checks it). Plain JSON.
   * Never shown to the model as text: `content` stays what it is.
   */
  structured?: Record<string, unknown>
}

/**
 * Hints about a tool for clients (MCP tool annotations), deciding what to ask the user about.
 * Hints, not guarantees: a client must not rely on them for safety. Set them truthfully.
 */
export interface ToolAnnotations {
  /** A human-readable title. */
  title?: string
  /** True: the tool does not modify its environment. */
  readOnlyHint?: boolean
  /** True: it may destroy or overwrite things (meaningful when not read-only). */
  destructiveHint?: boolean
  /** True: calling it again with the same arguments has no further effect. */
  idempotentHint?: boolean
  /** True: it may reach entities outside a closed world (the network, other machines). */
  openWorldHint?: boolean
}

/**
 * The minimal view of an agent that tools and the pipeline need. `@deepseek-ai/dsh-agent`'s
 * agents satisfy it; tests may pass any object of this shape.
 */
export interface ToolCaller {
  /** Identity of this agent object; never used as an owner token. */
  id: string
  session: {
    header: {
      /** The session id: the owner token of whatever this session starts. */
      id: string
      /** The session's workspace directory (absolute). */
      cwd: string
      /** The session's sandbox mode, overriding the executor's default; absent: the default. */
      sandboxMode?: string
      /** The session's egress rules, narrowing the executor's; absent: none. */
      network?: { readonly allow?: readonly string[]; readonly deny?: readonly string[] }
    }
  }
}

/** A request to run a tool, as given to `ctx.tools.execute`. */
export interface ToolExecution {
  /** Caller-chosen id of this call, echoed to listeners and observers. */
  callId: string
  /** Name of the tool to run. */
  name: string
  /** The raw arguments: must be a JSON object that survives a lossless round trip. */
  arguments: unknown
  /** The agent making the call, if any. Absent for calls made by programs or people directly. */
  agent?: ToolCaller
  /** Cancels the call. An abort after the result is ready has no effect. */
  signal?: AbortSignal
  /**
   * Receives progress while the tool runs (a long command's newest output line). Front ends throttle
   * and forward it (MCP progress notifications); a throw is ignored. Tools may never call it.
   */
  onProgress?: (update: ToolProgress) => void
}

/** A progress update from a running tool. */
export interface ToolProgress {
  /** A short human-readable line, e.g. the newest output line of a command. */
  message: string
}

/** What a tool's `execute` and the pipeline stages see of a call. */
export interface ToolCall<A = Record<string, unknown>> {
  callId: string
  name: string
  /** The validated, frozen arguments (unknown keys are stripped by the schema). */
  args: Readonly<A>
  /** The frozen JSON snapshot of the arguments exactly as sent, before schema parsing. */
  rawArguments: Readonly<Record<string, unknown>>
  agent?: ToolCaller
  signal?: AbortSignal
  /** Progress sink of the caller, when it wants progress (see `ToolExecution.onProgress`). */
  onProgress?: (update: ToolProgress) => void
}

/** How a UI should present a call or a result. Pure data; never contains functions. */
export type Presentation =
  | {
      kind: 'terminal'
      /** The command line. */
      title: string
      /** What the model said the command does. */
      description?: string
      /** Where it runs. */
      cwd?: string
      /** The output to show under the command (result presentations only). */
      output?: string
      /**
       * The exit code read back from the result (results only): 0 for a clean exit, `null` when the
       * command died from a signal. Absent on call presentations and while the command still runs
       * (a yielded call). Never a guess: a result whose status cannot be read has no card of this kind.
       */
      exitCode?: number | null
      /** The signal that killed the command (`SIGTERM`, …), or `null`; results only. */
      signal?: string | null
      /** True when the command's timeout fired, however it ended; results only. */
      timedOut?: boolean
    }
  | {
      kind: 'generic'
      title: string
      /** Optional short body text. */
      body?: string
    }

/** A tool definition. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** Unique name, as the model calls it. */
  name: string
  /** What the model reads about the tool. */
  description: string
  /** The zod schema of the arguments; published to models as JSON Schema. */
  parameters: S
  /**
   * Runs the call. Return a string (a plain, successful text result) or a full result.
   * A throw becomes `Error: <message>` with `isError: true`.
   */
  execute(args: z.output<S>, call: ToolCall<z.output<S>>): Promise<string | ToolResult> | string | ToolResult
  /**
   * The zod schema (an object) of `ToolResult.structured`, published as the tool's `outputSchema`.
   * With it, `structureOf` is required.
   */
  outputSchema?: z.ZodType
  /**
   * The structured facts of a result the tool did not build itself: an error of the pipeline
   * (invalid arguments, a denial), an error the tool threw, a middleware's veto. Must validate
   * against `outputSchema`; pure; must never throw.
   */
  structureOf?(result: ToolResult): Record<string, unknown>
  /** Hints for clients (MCP annotations). */
  annotations?: ToolAnnotations
  /** How to show a call to people; must be pure and must never throw, whatever the arguments. */
  presentCall?(args: unknown): Presentation
  /** How to show a result to people; must be pure and must never throw. */
  presentResult?(args: unknown, result: ToolResult): Presentation
}

/** The published form of a tool: plain data. */
export interface ToolSchema {
  name: string
  description: string
  /** JSON Schema (draft 2020-12) of the arguments object. */
  parameters: Record<string, unknown>
  /** JSON Schema (draft 2020-12) of `ToolResult.structured`, for tools that declare one. */
  outputSchema?: Record<string, unknown>
  /** Hints for clients, for tools that declare them. */
  annotations?: ToolAnnotations
}

/** A `tools/pre-execute` answer. `undefined` passes to the next listener. */
export type PreExecuteDecision =
  | { kind: 'allow'; rule?: string }
  | { kind: 'deny'; reason?: string; rule?: string }
  | {
      kind: 'ask'
      reason?: string
      /**
       * The rule that decided, as the listener names it (bash-policy: the pattern, `git push *`),
       * for audit logs and traces (`CallFacts.decision`). Never shown to the model by the pipeline;
       * absent when no single rule decided (a default, a parse the policy could not be sure of).
       */
      rule?: string
      /**
       * Every reason the call needs approval, when there are several (a command line with two
       * commands that each need it): passed on as `ApprovalRequest.reasons`. `reason` stays the one
       * the result's error text names; listeners that give only `reason` need not set it.
       */
      reasons?: readonly string[]
    }

export type PreExecuteListener = (
  call: ToolCall,
) => PreExecuteDecision | undefined | void | Promise<PreExecuteDecision | undefined | void>

/**
 * What a `tools/execute` middleware may change for the rest of the chain when it calls `next(changes)`.
 * Fields left out stay as they were.
 */
export interface CallChanges {
  /**
   * Replaces the call's abort signal for the inner middleware and the tool (a deadline middleware
   * passes `AbortSignal.any([call.signal, AbortSignal.timeout(ms)])`). Never merged with the old one
   * by the pipeline: pass a combined signal if both must count.
   */
  signal?: AbortSignal
  /**
   * Replaces the arguments. They go through the snapshot, the schema and `tools/pre-execute` again,
   * so a middleware can never run something the permission stage has not seen; a failure rejects
   * `next()` with the stage's usual error.
   */
  args?: Record<string, unknown>
}

/**
 * A `tools/execute` around-middleware. Call `next()` to run the rest (optionally with changes to the
 * call); return another result to veto.
 */
export type ExecuteMiddleware = (call: ToolCall, next: (changes?: CallChanges) => Promise<ToolResult>) => Promise<ToolResult>

/**
 * What a `tools/post-execute` listener does with a finished result. `undefined` leaves it as it is.
 * - `replace`: the result becomes this one (a string is a successful text result); to block a result,
 *   replace it with an error result.
 * - `append`: adds a text block after the result's blocks: context for the model. The original blocks
 *   stay byte for byte.
 * - `mark`: merges these keys into `result.meta` (never shown to the model).
 */
export type PostExecuteAction =
  | { kind: 'replace'; result: ToolResult | string }
  | { kind: 'append'; text: string }
  | { kind: 'mark'; meta: Record<string, unknown> }

/**
 * A `tools/post-execute` listener: sees each call that passed the schema check, with its result so
 * far (listeners run in `order`, each seeing what the earlier ones made of it).
 */
export type PostExecuteListener = (
  call: ToolCall,
  result: Readonly<ToolResult>,
) => PostExecuteAction | undefined | void | Promise<PostExecuteAction | undefined | void>

/**
 * Sees every finished call (for logs and UIs), with what the pipeline learned on the way (`facts`).
 * Called before `execute` resolves, so a synchronous observer has run before the caller sends the
 * result anywhere. Throws are logged and ignored.
 */
export type ResultObserver = (call: ToolExecution, result: ToolResult, facts: CallFacts) => void

/**
 * What the pipeline learned about one call on its way, for audit logs and traces: the arguments
 * that ran, the permission decision with its rule, and every approval asked. Plain frozen data,
 * built by the registry (observers' third argument). It knows no policy and no tool: a listener
 * names its rule in its decision (`PreExecuteDecision.rule`), an approval service names its front
 * end (`ApprovalService.via`), a tool that asks on its own goes through `requestApproval`.
 * Never holds what a tool printed, nor anything a person typed (only the approval's answer).
 */
export interface CallFacts {
  /**
   * The validated arguments the permission stage saw last: after a middleware's `next({args})`,
   * the changed ones (what the tool ran with, when it ran). Absent when the call never got past the
   * schema (an unknown tool, invalid arguments).
   */
  args?: Readonly<Record<string, unknown>>
  /** True once the tool's `execute` was called (not: that it succeeded). */
  ran: boolean
  /**
   * The `tools/pre-execute` decision for `args`. Absent when no listener decided (allowed by
   * default) or the call never reached the permission stage.
   */
  decision?: DecisionFact
  /** Every approval asked during the call, in order: the pipeline's for an `ask`, a tool's own. */
  approvals: readonly ApprovalFact[]
}

/** A permission decision as recorded in `CallFacts`. */
export interface DecisionFact {
  kind: 'allow' | 'deny' | 'ask'
  /** The listener's `reason` (for a command policy: quotes the command). */
  reason?: string
  /** Every reason of an `ask`, when the listener gave several. */
  reasons?: readonly string[]
  /** The rule that decided, when the listener named one. */
  rule?: string
}

/** One approval as recorded in `CallFacts`: a service was asked and answered. */
export interface ApprovalFact {
  /** Why it was asked (the request's `reason`). */
  reason?: string
  /**
   * The answer. `unavailable` means nobody could be asked (no front end able to ask, a failing
   * service); `cancelled` that the question went away unanswered (the call was aborted, the person
   * dismissed it); `allowed-once` and `rejected` are a person's answers.
   */
  answer: ApprovalDecision
  /** The service's `via`: the front end that asked (`mcp-elicitation`, `terminal`), when it names one. */
  via?: string
}

/** What the approval service answers for an `ask`. */
export type ApprovalDecision = 'allowed-once' | 'rejected' | 'cancelled' | 'unavailable'

export interface ApprovalRequest {
  callId: string
  /** The tool name. */
  tool: string
  /** The frozen arguments of the call. */
  arguments: Readonly<Record<string, unknown>>
  /** Why the call needs approval (from the listener that asked): the first of `reasons`. */
  reason?: string
  /**
   * Every reason the call needs approval, in the listener's order (for a command line: one per simple
   * command that needs it, in reading order), `reason` among them. Optional: absent when the listener
   * gave one reason. A person must see all of them (`approvalText` lists them); never only the first.
   * Model-controlled text inside (a quoted command, a justification) is raw: escape it for display.
   */
  reasons?: readonly string[]
  agent?: ToolCaller
  signal?: AbortSignal
}

/**
 * The optional `approval` service (`ctx.approval`): a person (REPL prompt, MCP elicitation) decides.
 * Register it with `ctx.set('approval', service)` or as a cordis Service named `approval`.
 *
 * Show the person `approvalText(request)` whole: it holds the whole command, every reason, and only
 * visible characters. The pipeline (and tool-bash's escalation) never asks about a call whose text
 * is longer than `MAX_APPROVAL_TEXT`; a service that gets one anyway answers `unavailable`, never cuts.
 */
export interface ApprovalService {
  request(request: ApprovalRequest): Promise<ApprovalDecision>
  /**
   * Names the front end through which this service asks a person (`mcp-elicitation`, `terminal`),
   * for audit logs (`ApprovalFact.via`). Optional; a plain label, never shown to the model.
   */
  readonly via?: string
}
