import { randomBytes } from 'node:crypto'
import { isAbsolute } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDirectory } from '@deepseek-ai/dsh-bash'
import type { Context } from 'cordis'
import type { Agent } from '@deepseek-ai/dsh-agent'
import { codeOf, serviceObject, type ApprovalDecision, type ApprovalRequest, type SecretInputAnswer, type SecretInputRequest, type ToolContent, type ToolRegistry, type ToolResult } from '@deepseek-ai/dsh-tools'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type ListToolsResult,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js'
import { FullOutputResources } from './resources.js'
import { approvalMessage, approvalSchema, decisionOf } from './elicit.js'
import { SERVER_CAPABILITIES } from './front.js'
import { mcpErrors } from './errors.js'
import type { LoopTurns } from './loop-turns.js'
import { askThroughUrlElicitation, type SecretInputOptions } from './secret-elicit.js'
import type { ReplyDesk } from './reply-desk.js'
import type { CallOrigin, CallRecorder } from './call-recorder.js'

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/** The key of the client's experimental capability that carries its session settings. */
export const SESSION_CAPABILITY = 'dsh-bash'

/** Options shared by every session of a host. */
export interface SessionOptions {
  /** Server name and version announced to clients. */
  name: string
  version: string
  /** Fixed workspace for every session (absolute). Unset: the client's first root, else `fallbackCwd`. */
  cwd?: string
  /** The workspace when neither `cwd` nor a usable root is there. */
  fallbackCwd: string
  /** Interval of progress notifications for calls that carry a progress token (ms). */
  progressIntervalMs: number
  /** How long to wait for the client's `roots/list` answer (ms). */
  rootsTimeoutMs: number
  /** The sandbox modes a client may choose for its session (see `McpHostOptions.sessionSandboxModes`). */
  sessionSandboxModes: readonly string[]
  /** Diagnostics (never stdout: stdio MCP uses it). */
  log(message: string): void
  /** The `instructions` of the initialize result (what a model reads before it loads the tools). */
  instructions?: string
  /** The one-time reply page of `bash_input {ask_user}` (see `McpHostOptions.secretInput`). */
  secretInput?: SecretInputOptions
  /** Where a question waits for `dsh-bash reply` when the client cannot put it to a person (reply-desk.ts). */
  replies?: ReplyDesk
  /**
   * The tool registry's object (behind cordis' proxy), resolved by the host once for the lifetime of
   * the plugin it is bound in; undefined before that and after its disposal (then the session looks
   * `tools` up on its context, as it would without this). Saves the proxy's per-access cost per call.
   */
  tools?: () => ToolRegistry | undefined
  /** The host's turn queue, shared by all its sessions (see loop-turns.ts). */
  turns: LoopTurns
  /** The audit log and traces of the host's calls, when it keeps any (call-recorder.ts). */
  recorder?: CallRecorder
}

/**
 * One MCP session = one agent session: an SDK `Server` bound to one transport, and the agent whose
 * `session.header.id` (a random owner token) stamps every task this client starts.
 */
export class McpSession {
  /** The low-level SDK server of this session; connect it to one transport. */
  readonly server: Server
  /** The owner token of this session's tasks (the agent's `session.header.id`). Never sent to the client. */
  readonly token = randomBytes(18).toString('base64url')
  /** A short label for logs. */
  readonly label: string
  private _agent: Agent | undefined
  private _agentPromise: Promise<Agent> | undefined
  private _unlisten: (() => void) | undefined
  private _closed = false
  private readonly _calls = new Map<string, Extra>()
  private _seq = 0
  /**
   * The context once known. Never awaited or returned from an async function: resolving a promise
   * with a cordis context reads its `then` through the context's proxy (an `Error` with a stack each time).
   */
  private _ctx: Context | undefined
  /** Called whenever a tool call ends (an idle timer may start). */
  onCallSettled?: () => void

  /**
   * @param context the app's context, or a promise of it while the app is still loading: `initialize`
   *   is answered at once, `tools/list` and `tools/call` wait for it.
   */
  constructor(
    private readonly context: Context | Promise<Context>,
    private readonly options: SessionOptions,
    label: string,
    private readonly onClose: (session: McpSession) => void,
  ) {
    this.label = label
    if (context instanceof Promise) void context.then((ctx) => void (this._ctx = ctx))
    else this._ctx = context
    this.server = new Server(
      { name: options.name, version: options.version },
      { capabilities: { ...SERVER_CAPABILITIES }, ...(options.instructions ? { instructions: options.instructions } : {}) },
    )
    this.server.setRequestHandler(ListToolsRequestSchema, () => this.listTools())
    this.server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
      this.callTool(request.params.name, request.params.arguments, extra),
    )
    // Complete outputs of this session's commands (resources.ts), fenced by its owner token.
    const resources = new FullOutputResources(async () => (this._ctx ?? (await this.context)).get('bash'), this.token)
    this.server.setRequestHandler(ListResourceTemplatesRequestSchema, () => resources.templates())
    this.server.setRequestHandler(ListResourcesRequestSchema, () => resources.list())
    this.server.setRequestHandler(ReadResourceRequestSchema, (request) => resources.read(request.params.uri))
    this.server.onclose = () => void this.close()
  }

  /** The session's agent, once the first tool call created it. */
  get agent(): Agent | undefined {
    return this._agent
  }

  get closed(): boolean {
    return this._closed
  }

  /** True while a tool call of this session is in progress (a foreground command may be running). */
  get busy(): boolean {
    return this._calls.size > 0
  }

  /** `tools/list`: exactly the registry's published schemas. */
  async listTools(): Promise<ListToolsResult> {
    const ctx = this._ctx ?? (await this.context)
    const tools = this.tools(ctx)?.schemas() ?? []
    type Tool = ListToolsResult['tools'][number]
    return {
      tools: tools.map((tool) => ({
        name: tool.name,
        ...(tool.annotations?.title ? { title: tool.annotations.title } : {}),
        description: tool.description,
        inputSchema: tool.parameters as Tool['inputSchema'],
        ...(tool.outputSchema ? { outputSchema: tool.outputSchema as Tool['outputSchema'] } : {}),
        ...(tool.annotations ? { annotations: { ...tool.annotations } } : {}),
      })),
    }
  }

  /** `tools/call`: through `ctx.tools.execute` with this session's agent; pending notices ride along. */
  async callTool(name: string, args: unknown, extra: Extra): Promise<CallToolResult> {
    if (this._closed) return errorResult('the MCP session is closed')
    const callId = `${this.label}-${++this._seq}`
    this._calls.set(callId, extra)
    const release = this.options.turns.hold()
    try {
      const result = await this.executeCall(callId, name, args, extra)
      // The result's render and write wait for their own turn when other calls are in progress.
      await this.options.turns.next(true)
      return result
    } finally {
      release()
      this._calls.delete(callId)
      this.onCallSettled?.()
    }
  }

  /** The registry object: the host's (resolved once), else looked up on the context. */
  private tools(ctx: Context): ToolRegistry | undefined {
    return this.options.tools?.() ?? serviceObject(ctx.get('tools'))
  }

  private async executeCall(callId: string, name: string, args: unknown, extra: Extra): Promise<CallToolResult> {
    const ctx = this._ctx ?? (await this.context)
    const tools = this.tools(ctx)
    if (!tools) return errorResult('the tools are not available (the server is shutting down)')
    const recorder = this.options.recorder
    let result: ToolResult
    if (recorder) {
      if (recorder.ready) await recorder.ready
      // With a required audit log that cannot be written, nothing runs.
      const refusal = await recorder.refusal()
      if (refusal !== undefined) return toCallResult(refusedResult(tools, name, mcpErrors.auditRefused(refusal)), [])
      const recording = recorder.begin({ callId, name, known: tools.get(name) !== undefined, requestId: extra.requestId, meta: extra._meta, origin: () => this.origin() })
      result = await this.runCall(tools, callId, name, args, extra)
      // The line is written before the result is sent: a server killed right after has it.
      const { failure, ran } = await recording.end(result)
      if (failure !== undefined && recorder.required) result = refusedResult(tools, name, mcpErrors.auditUnrecorded(failure, ran))
    } else {
      result = await this.runCall(tools, callId, name, args, extra)
    }
    // A cancelled request gets no response: keep the notices for the next result.
    return toCallResult(result, extra.signal.aborted ? [] : this.takeNotices())
  }

  /** Runs the call through the pipeline with this session's agent (a refusal of the session is a result too). */
  private async runCall(tools: ToolRegistry, callId: string, name: string, args: unknown, extra: Extra): Promise<ToolResult> {
    let agent: Agent
    try {
      agent = await this.ensureAgent(extra)
    } catch (error) {
      // A refusal of the session (its sandbox mode) is still a result of that tool: with its facts.
      return refusedResult(tools, name, error)
    }
    const progress = this.startProgress(extra)
    try {
      return await tools.execute({
        callId,
        name,
        arguments: args ?? {},
        agent,
        signal: extra.signal,
        onProgress: progress.update,
      })
    } finally {
      progress.stop()
    }
  }

  /** Who is calling, for audit lines and spans (never the owner token). */
  private origin(): CallOrigin {
    const sessionId = this.server.transport?.sessionId
    const info = this.server.getClientVersion()
    const header = this._agent?.session.header
    return {
      session: sessionId ?? 'stdio',
      client: info ? { name: clip(info.name), version: clip(info.version) } : null,
      transport: sessionId === undefined ? 'stdio' : 'http',
      cwd: header?.cwd,
      sandboxMode: header?.sandboxMode,
    }
  }

  /** The approval service of this session: a yes/no elicitation when the client supports forms. */
  async approve(request: ApprovalRequest): Promise<ApprovalDecision> {
    if (this._closed) return 'unavailable'
    const elicitation = this.server.getClientCapabilities()?.elicitation
    if (!elicitation?.form) return 'unavailable'
    // Shown whole or not asked at all: a cut message could hide what runs.
    const message = approvalMessage(request)
    if (message === undefined) return 'unavailable'
    const extra = this._calls.get(request.callId)
    try {
      const result = await this.server.elicitInput(
        { mode: 'form', message, requestedSchema: approvalSchema },
        { relatedRequestId: extra?.requestId, signal: request.signal ?? extra?.signal },
      )
      return decisionOf(result)
    } catch (error) {
      if (request.signal?.aborted || extra?.signal.aborted) return 'cancelled'
      this.options.log(`${this.label}: elicitation failed: ${error instanceof Error ? error.message : String(error)}`)
      return 'unavailable'
    }
  }

  /**
   * The secretInput service of this session: a URL elicitation of a one-time page, when the client
   * supports it. When it does not, or when it answered the elicitation itself (too fast for a
   * person, or with an error at once), the question waits at the reply desk for `dsh-bash reply`
   * (`pending`), as long as the desk is served; never reported as the person's answer.
   */
  async askSecret(request: SecretInputRequest): Promise<SecretInputAnswer> {
    if (this._closed || !this.options.secretInput) return { outcome: 'unavailable' }
    const extra = this._calls.get(request.callId)
    const wait = (unasked: Extract<SecretInputAnswer, { outcome: 'pending' }>['unasked']): SecretInputAnswer => {
      const desk = this.options.replies
      if (!desk?.open || !request.later || this._closed) return { outcome: 'unavailable' }
      if (request.signal?.aborted || extra?.signal.aborted) return { outcome: 'cancelled' }
      desk.add({ ...request, later: request.later })
      return { outcome: 'pending', waitMs: desk.waitMs, unasked }
    }
    if (!this.server.getClientCapabilities()?.elicitation?.url) return wait('no-elicitation')
    const answer = await askThroughUrlElicitation(this.server, request, { requestId: extra?.requestId, signal: extra?.signal }, this.options.secretInput, (m) =>
      this.options.log(`${this.label}: ${m}`),
    )
    return answer.outcome === 'unasked' ? wait({ action: answer.action, ms: answer.ms }) : answer
  }

  /** Creates the agent on first use; its cwd comes from the options, the client's first root, or the fallback. */
  ensureAgent(extra?: Extra): Promise<Agent> {
    this._agentPromise ??= this.createAgent(extra)
    return this._agentPromise
  }

  private async createAgent(extra?: Extra): Promise<Agent> {
    const sandboxMode = this.requestedSandboxMode(await this.context)
    const network = this.requestedNetwork(await this.context)
    const cwd = this.options.cwd ?? (await this.rootCwd(extra)) ?? this.options.fallbackCwd
    if (this._closed) throw mcpErrors.badState('the MCP session is closed')
    const agents = (await this.context).get('agents')
    if (!agents) throw mcpErrors.agentsUnavailable()
    // The agent id is a label for logs (unique even with several hosts in one app); the token is the owner.
    const session = { id: this.token, cwd, ...(sandboxMode === undefined ? {} : { sandboxMode }), ...(network === undefined ? {} : { network }) }
    const agent = agents.create({ id: `mcp-${this.label}-${randomBytes(3).toString('hex')}`, session })
    this._agent = agent
    this._unlisten = agent.onInject((entry) => {
      const text = entry.content.map((block) => block.text).join('\n')
      // At once, for clients that show log messages; the block on the next tool result is the durable copy.
      // The transport's session id: the key under which `logging/setLevel` stored this client's level.
      this.server.sendLoggingMessage({ level: 'notice', logger: 'dsh-bash', data: text }, this.server.transport?.sessionId).catch(() => {})
    })
    return agent
  }

  /**
   * The sandbox mode the client chose for this session in its `initialize` request
   * (`capabilities.experimental["dsh-bash"].sandboxMode`), checked against the modes this server
   * allows; undefined when it chose none. A refused choice fails every tool call of the session
   * with the reason (nothing runs under a mode the client did not ask for).
   */
  private requestedSandboxMode(ctx: Context): string | undefined {
    const experimental = this.server.getClientCapabilities()?.experimental as Record<string, unknown> | undefined
    const ours = experimental?.[SESSION_CAPABILITY]
    if (ours === undefined) return undefined
    const mode = ours !== null && typeof ours === 'object' ? (ours as { sandboxMode?: unknown }).sandboxMode : undefined
    if (mode === undefined) return undefined
    if (!ctx.get('bash')?.capabilities.sandboxModes.length) {
      throw mcpErrors.noSandbox(mode)
    }
    const allowed = this.options.sessionSandboxModes
    if (typeof mode !== 'string' || !allowed.includes(mode)) {
      const choices = allowed.length > 0 ? `allows ${allowed.map((m) => JSON.stringify(m)).join(', ')}` : 'allows none'
      throw mcpErrors.modeNotAllowed(mode, choices)
    }
    return mode
  }

  /**
   * The session's egress rules the client asked for in its `initialize` request
   * (`capabilities.experimental["dsh-bash"].network`: `{ allow?, deny? }`, host patterns). They can
   * only narrow the server's (the executor checks the patterns, and a host must pass both lists).
   * Malformed, or on a server without a sandbox, they fail every tool call of the session.
   */
  private requestedNetwork(ctx: Context): { allow?: string[]; deny?: string[] } | undefined {
    const experimental = this.server.getClientCapabilities()?.experimental as Record<string, unknown> | undefined
    const ours = experimental?.[SESSION_CAPABILITY]
    const network = ours !== null && typeof ours === 'object' ? (ours as { network?: unknown }).network : undefined
    if (network === undefined) return undefined
    const list = (value: unknown): value is string[] | undefined => value === undefined || (Array.isArray(value) && value.every((item) => typeof item === 'string'))
    const rules = network as { allow?: unknown; deny?: unknown }
    if (network === null || typeof network !== 'object' || !list(rules.allow) || !list(rules.deny)) throw mcpErrors.badNetwork(network)
    if (ctx.get('bash')?.sandboxMode === undefined) throw mcpErrors.noSandboxNetwork()
    return { ...(rules.allow ? { allow: rules.allow } : {}), ...(rules.deny ? { deny: rules.deny } : {}) }
  }

  private async rootCwd(extra?: Extra): Promise<string | undefined> {
    if (!this.server.getClientCapabilities()?.roots) return undefined
    try {
      const { roots } = await this.server.listRoots(undefined, {
        relatedRequestId: extra?.requestId,
        timeout: this.options.rootsTimeoutMs,
      })
      const first = roots[0]
      if (!first) return undefined
      if (!first.uri.startsWith('file:')) {
        this.options.log(`${this.label}: ignoring the client's first root ${first.uri}: not a file: URI`)
        return undefined
      }
      const dir = fileURLToPath(first.uri)
      if (!isAbsolute(dir) || !isDirectory(dir)) {
        this.options.log(`${this.label}: ignoring the client's first root ${first.uri}: not a directory here`)
        return undefined
      }
      return dir
    } catch (error) {
      this.options.log(`${this.label}: roots/list failed: ${error instanceof Error ? error.message : String(error)}`)
      return undefined
    }
  }

  private takeNotices(): ToolContent[] {
    const agent = this._agent
    if (!agent || agent.disposed) return []
    return agent.takeInjected().flatMap((entry) => entry.content)
  }

  /**
   * Progress for a call that carries a progress token: every `progressIntervalMs`, the elapsed time
   * and the newest output line the tool reported (`ToolExecution.onProgress`).
   */
  private startProgress(extra: Extra): { update?: (update: { message: string }) => void; stop: () => void } {
    const token = extra._meta?.progressToken
    if (token === undefined) return { stop: () => {} }
    const started = Date.now()
    let newest = ''
    const timer = setInterval(() => {
      const elapsed = Date.now() - started
      const seconds = `running for ${Math.round(elapsed / 1000)}s`
      extra
        .sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: elapsed, message: newest ? `${seconds}: ${newest}` : seconds },
        })
        .catch(() => {})
    }, this.options.progressIntervalMs)
    timer.unref()
    return {
      update: (update) => {
        newest = update.message
      },
      stop: () => clearInterval(timer),
    }
  }

  /**
   * Ends the session: its agent is disposed, its running tasks are killed (no other client could
   * reach them), the executor's per-owner state is released (`releaseOwner`, when it has one: a
   * container executor removes the session's container), and the SDK server is closed. Idempotent.
   */
  async close(): Promise<void> {
    if (this._closed) return
    this._closed = true
    this._unlisten?.()
    this._agent?.dispose()
    // Its questions go with it: nobody can reply to a task that is about to be killed.
    this.options.replies?.withdraw(this.token)
    this.onClose(this)
    // A session closed while the app is still loading has no tasks yet.
    const ctx = this.context instanceof Promise ? await Promise.race([this.context, Promise.resolve(undefined)]) : this.context
    const bash = ctx?.get('bash')
    if (ctx && bash) {
      await bash.killOwner(this.token).catch((error: unknown) => ctx.logger('dsh-mcp').error(`stopping the session's tasks failed: ${String(error)}`))
      // Whatever the executor holds for this session (its container, its pod) goes with it.
      await bash.releaseOwner?.(this.token).catch((error: unknown) => ctx.logger('dsh-mcp').error(`releasing the session's executor state failed: ${String(error)}`))
    }
    await this.server.close().catch(() => {})
  }
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true }
}

/** A call refused before the pipeline (or its result replaced): an error result of that tool, with its facts. */
function refusedResult(tools: ToolRegistry, name: string, error: unknown): ToolResult {
  const code = codeOf(error)
  const result: ToolResult = { content: [{ type: 'text', text: `Error: ${error instanceof Error ? error.message : String(error)}` }], isError: true, ...(code ? { meta: { code } } : {}) }
  const structured = tools.get(name)?.structureOf?.(result)
  return structured ? { ...result, structured } : result
}

/**
 * The MCP result: the pipeline's blocks and the notices after them; the facts as data
 * (`structuredContent`; the text stays as it is); machine-readable facts (an error's stable code)
 * under our own `_meta` key, never text for the model.
 */
function toCallResult(result: ToolResult, notices: ToolContent[]): CallToolResult {
  const meta = result.meta ? { _meta: { [SESSION_CAPABILITY]: { ...result.meta } } } : {}
  const structured = result.structured ? { structuredContent: { ...result.structured } } : {}
  return { content: [...result.content, ...notices].map(copyBlock), isError: result.isError, ...structured, ...meta }
}

/** Client-controlled text in audit lines: a name, not a novel. */
function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}

function copyBlock(block: ToolContent): { type: 'text'; text: string } {
  return { type: 'text', text: block.text }
}
