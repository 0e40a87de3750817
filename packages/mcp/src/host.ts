import { isAbsolute, resolve } from 'node:path'
import type { Context } from 'cordis'
import type {} from '@deepseek-ai/dsh-agent'
import { modesUpTo } from '@deepseek-ai/dsh-bash'
import { serviceObject, type ApprovalDecision, type ApprovalRequest, type ApprovalService, type SecretInputAnswer, type SecretInputRequest, type SecretInputService, type ToolRegistry } from '@deepseek-ai/dsh-tools'
import { DEFAULT_SECRET_INPUT, type SecretInputOptions } from './secret-elicit.js'
import { DEFAULT_SERVER_INFO } from './front.js'
import { McpSession, type SessionOptions } from './session.js'
import { LoopTurns } from './loop-turns.js'
import { ReplyDesk } from './reply-desk.js'
import { mcpErrors } from './errors.js'
import { AuditFile } from './audit-log.js'
import { CallRecorder } from './call-recorder.js'
import type { CallTracing } from './tracing.js'

/** The audit log of a host (`McpHostOptions.audit`). */
export interface AuditOptions {
  /** The file: opened (created mode 0600) when the host is built; see `AuditFile` for what is refused. */
  file: string
  /**
   * Fail closed: a call whose line cannot be written gets an error result instead of its own (it
   * ran; the error says so), and every later call is refused before it runs until a line can be
   * written again. Lines are also synced to disk (fdatasync) before the result is sent. Default
   * false: a failure is reported on stderr (once until writing works again), calls go on
   * unrecorded, and the next line written is preceded by an `audit-gap` line counting the lost ones.
   */
  required?: boolean
  /** The executor's name in the lines (the CLI passes its `--executor`). Default: the executor's class name. */
  executor?: string
}

export interface McpHostOptions {
  /** Server name announced to clients. Default `dsh-bash`. */
  name?: string
  /** Server version announced to clients. Default `0.1.0`. */
  version?: string
  /**
   * The workspace of every session. Unset: the client's first root (when it supports roots and the
   * root is a directory here), else `process.cwd()`.
   */
  cwd?: string
  /** Progress notification interval for calls with a progress token (ms). Default 1000. */
  progressIntervalMs?: number
  /** How long to wait for the client's answer to `roots/list` (ms). Default 5000. */
  rootsTimeoutMs?: number
  /**
   * The sandbox modes a client may choose for its session, in its `initialize` request:
   * `capabilities: { experimental: { "dsh-bash": { sandboxMode: "read-only" } } }`. Its commands
   * then run under that mode, and escalations are measured against it. Default: none (a client
   * that asks is refused with the reason on every tool call). Offer only modes no wider than the
   * executor's default unless every client may be trusted with the wider ones: `narrowingModes`
   * derives exactly those from the executor's capabilities. A function is asked once, when the
   * host is bound to its context (the executor is known only then).
   */
  sessionSandboxModes?: readonly string[] | ((ctx: Context) => readonly string[])
  /** Register the routing approval service as `ctx.approval`. Default true. */
  approval?: boolean
  /**
   * Register the routing `ctx.secretInput` service (`bash_input {ask_user}`): a URL-mode elicitation
   * of a one-time page on its own HTTP server where the person types the reply. `false`: not
   * registered (the tool answers that no front end can ask). Default `{host: '127.0.0.1',
   * timeoutMs: 300000}`: the page is reachable only from this machine; set `host` (e.g. `0.0.0.0`)
   * only where the person's browser runs elsewhere and the network is trusted (the page is plain HTTP).
   */
  secretInput?: boolean | Partial<SecretInputOptions>
  /** Where diagnostics go. Default: stderr. */
  log?: (message: string) => void
  /**
   * The `instructions` of the initialize result: a few sentences a model reads before it loads the
   * tools (clients that defer tools behind a tool search show only names). The CLI passes
   * tool-bash's `bashPromptSection()` with an opening sentence. Default: none.
   */
  instructions?: string
  /** An audit log: one JSON line per tool call, one more when a background task it started ends (README, "Audit log"). */
  audit?: AuditOptions
  /**
   * A tracer of the calls (`CallTracing`; OpenTelemetry's is `@deepseek-ai/dsh-mcp/otel`). A
   * promise while it loads: calls wait for it. Default: none (no tracing code is loaded).
   */
  tracing?: CallTracing | Promise<CallTracing | undefined>
}

/**
 * The sandbox modes a session may choose when sessions may only narrow: the executor's modes
 * (`capabilities.sandboxModes`, narrowest first) up to its default, the default included; none
 * for an executor that does not confine (or when none is loaded).
 */
export function narrowingModes(ctx: Context): string[] {
  const bash = ctx.get('bash')
  return bash ? modesUpTo(bash.sandboxMode, bash.capabilities.sandboxModes) : []
}

/**
 * Serves `ctx.tools` to MCP clients: creates one `McpSession` (SDK server + agent) per client
 * connection, and routes the pipeline's `ask`s to the session of the call as elicitations.
 *
 * `ctx` must provide `tools` and `agents` (and `bash` for the tools to exist); build the host inside a
 * plugin that injects them, so its agents and approval service are undone with that plugin.
 */
export class McpHost {
  private readonly _sessions = new Set<McpSession>()
  private readonly _options: SessionOptions
  private _seq = 0
  private _closed = false
  private _ctx: Context | undefined
  private readonly _context: Promise<Context>
  private _bindContext!: (ctx: Context) => void

  /**
   * @param ctx the context providing `tools` and `agents`. Omitted: call `bind(ctx)` later; sessions
   *   created before that answer `initialize` at once and wait for it before listing or calling tools
   *   (a fast start: the tools load while the client initializes).
   */
  constructor(ctx?: Context, options: McpHostOptions = {}) {
    const log = options.log ?? ((message: string) => process.stderr.write(`dsh-mcp: ${message}\n`))
    if (options.cwd !== undefined && !isAbsolute(options.cwd)) throw mcpErrors.invalidOptions(`cwd must be an absolute path, got ${JSON.stringify(options.cwd)}`)
    const interval = options.progressIntervalMs ?? 1000
    if (!(Number.isFinite(interval) && interval > 0)) throw mcpErrors.invalidOptions(`progressIntervalMs must be a positive number, got ${JSON.stringify(interval)}`)
    this._options = {
      name: options.name ?? DEFAULT_SERVER_INFO.name,
      version: options.version ?? DEFAULT_SERVER_INFO.version,
      cwd: options.cwd,
      fallbackCwd: resolve(process.cwd()),
      progressIntervalMs: interval,
      rootsTimeoutMs: options.rootsTimeoutMs ?? 5000,
      sessionSandboxModes: typeof options.sessionSandboxModes === 'function' ? [] : [...(options.sessionSandboxModes ?? [])],
      log,
      tools: () => this._tools,
      turns: new LoopTurns(),
      ...(options.instructions ? { instructions: options.instructions } : {}),
    }
    this._approval = options.approval !== false
    if (options.secretInput !== false) {
      const chosen = typeof options.secretInput === 'object' ? options.secretInput : {}
      const page = { ...DEFAULT_SECRET_INPUT, ...Object.fromEntries(Object.entries(chosen).filter(([, v]) => v !== undefined)) }
      if (typeof page.host !== 'string' || page.host === '') throw mcpErrors.invalidOptions(`secretInput.host must be a non-empty string, got ${JSON.stringify(page.host)}`)
      if (!(Number.isFinite(page.timeoutMs) && page.timeoutMs > 0)) throw mcpErrors.invalidOptions(`secretInput.timeoutMs must be a positive number, got ${JSON.stringify(page.timeoutMs)}`)
      this._options.secretInput = page
      // A question the client cannot put to a person waits here as long as the page would.
      this._options.replies = new ReplyDesk(page.timeoutMs, (taskId) => this._ctx?.get('bash')?.get(taskId)?.status === 'running', log)
    }
    this._modesOf = typeof options.sessionSandboxModes === 'function' ? options.sessionSandboxModes : undefined
    if (options.audit !== undefined || options.tracing !== undefined) {
      const audit = options.audit
      if (audit !== undefined && (typeof audit.file !== 'string' || !isAbsolute(audit.file))) {
        throw mcpErrors.invalidOptions(`audit.file must be an absolute path, got ${JSON.stringify(audit.file)}`)
      }
      const file = audit ? new AuditFile(audit.file, { sync: audit.required === true }) : undefined
      this._options.recorder = new CallRecorder({
        audit: file,
        required: audit?.required === true,
        tracing: options.tracing,
        executor: audit?.executor ?? '',
        bash: () => this._bash,
        log,
      })
      this._executorName = audit?.executor
    }
    this._context = new Promise<Context>((resolve) => (this._bindContext = resolve))
    if (ctx) this.bind(ctx)
  }

  private readonly _approval: boolean
  private _tools: ToolRegistry | undefined
  private readonly _modesOf: ((ctx: Context) => readonly string[]) | undefined
  private _executorName: string | undefined
  private _bash: Context['bash'] | undefined

  /**
   * Gives the host its context (once). Call it inside a plugin that injects `tools` and `agents`:
   * the approval service it registers is undone with that plugin.
   */
  bind(ctx: Context): void {
    if (this._ctx) throw mcpErrors.badState('the MCP host is already bound to a context')
    this._ctx = ctx
    // Sessions read the modes only after the context is bound, so setting them here reaches all.
    if (this._modesOf) this._options.sessionSandboxModes = [...this._modesOf(ctx)]
    if (this._approval) {
      // `via`: audit lines say through which front end a person was asked (dsh-tools' CallFacts).
      const service: ApprovalService = { request: (request) => this.approve(request), via: 'mcp-elicitation' }
      ctx.set('approval', service)
    }
    if (this._options.secretInput) {
      const service: SecretInputService = {
        ask: (request) => this.askSecret(request),
        withdraw: ({ sessionId, taskId }) => this._options.replies?.withdraw(sessionId, taskId),
      }
      ctx.set('secretInput', service)
    }
    // The registry's object for sessions' calls, for exactly this plugin's lifetime (see SessionOptions.tools).
    ctx.effect(() => {
      this._tools = serviceObject(ctx.get('tools'))
      return () => {
        this._tools = undefined
      }
    })
    const recorder = this._options.recorder
    if (recorder) {
      // The pipeline's facts of each call, and the ends of the tasks calls started.
      ctx.get('tools')!.onResult(recorder.observe)
      const bash = ctx.get('bash')
      if (bash) {
        bash.onTaskDone(recorder.taskDone)
        ctx.effect(() => {
          this._bash = serviceObject(bash)
          recorder.executor ||= this._executorName ?? this._bash.constructor.name
          return () => {
            this._bash = undefined
          }
        })
      }
    }
    this._bindContext(ctx)
  }

  /** The live sessions. */
  get sessions(): McpSession[] {
    return [...this._sessions]
  }

  /** The turn queue shared by this host's sessions and its HTTP front (see loop-turns.ts). */
  get turns(): LoopTurns {
    return this._options.turns
  }

  /** A new session; connect `session.server` to a transport. */
  createSession(): McpSession {
    if (this._closed) throw mcpErrors.badState('the MCP host is closed')
    const session = new McpSession(this._ctx ?? this._context, this._options, `s${++this._seq}`, (s) => this._sessions.delete(s))
    this._sessions.add(session)
    return session
  }

  /**
   * The questions waiting for `dsh-bash reply` (undefined with `secretInput: false`). Serve it with
   * `serveReplyDesk` (this machine) or `serveHttp` (which mounts it): until something serves it, a
   * client that cannot ask gets `unavailable` as before.
   */
  get replies(): ReplyDesk | undefined {
    return this._options.replies
  }

  /** Routes an approval to the session whose agent made the call; no such session → `unavailable`. */
  async approve(request: ApprovalRequest): Promise<ApprovalDecision> {
    const owner = request.agent?.session?.header?.id
    const session = owner === undefined ? undefined : [...this._sessions].find((s) => s.token === owner)
    if (!session) return 'unavailable'
    return session.approve(request)
  }

  /** Routes a secret-input question to the session that owns the task; no such session → `unavailable`. */
  async askSecret(request: SecretInputRequest): Promise<SecretInputAnswer> {
    const session = [...this._sessions].find((s) => s.token === request.sessionId)
    if (!session) return { outcome: 'unavailable' }
    return session.askSecret(request)
  }

  /** Closes every session (their tasks are killed), then the audit log and the tracer (pending spans are exported). Idempotent. */
  async close(): Promise<void> {
    this._closed = true
    this._options.replies?.close()
    await Promise.all([...this._sessions].map((session) => session.close()))
    await this._options.recorder?.close()
  }
}
