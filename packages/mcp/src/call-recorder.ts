import { resolve } from 'node:path'
import { type BashExecutor, type BashTask, taskEndStatus } from '@deepseek-ai/dsh-bash'
import type { ApprovalFact, CallFacts, ToolExecution, ToolResult } from '@deepseek-ai/dsh-tools'
import type { AuditFile } from './audit-log.js'
import type { CallTracing, TracedCall } from './tracing.js'

/**
 * Records what a host's sessions run: one audit line per `tools/call` and one more when a
 * background task it started ends (`AuditFile`), and the call's spans (`CallTracing`). Built from
 * facts only — the pipeline's `CallFacts` (the arguments that ran, the decision and its rule, the
 * approvals) and the tools' structured facts (status, exit code, task id, …) — never from result
 * text, so no output, no reply typed through `ask_user` and no environment value is ever recorded.
 */

/** Who is calling: the session's facts, as the session knows them at the call. */
export interface CallOrigin {
  /** The MCP session id (Streamable HTTP), or `stdio`. Never the session's owner token. */
  session: string
  /** `name` and `version` from the client's `initialize`, when it sent them (client-controlled text). */
  client: { name: string; version: string } | null
  transport: 'stdio' | 'http'
  /** The session's workspace, once its agent exists (to say where a refused command would have run). */
  cwd: string | undefined
  /** The session's own sandbox mode, when it chose one. */
  sandboxMode: string | undefined
}

export interface CallStart {
  callId: string
  /** The tool name the client sent. */
  name: string
  /** True when the server serves a tool of that name. */
  known: boolean
  /** The JSON-RPC request id. */
  requestId: string | number
  /** The request's `params._meta`, for the trace context. */
  meta: Record<string, unknown> | undefined
  /** The session's facts; read at the start and again at the end (the agent, hence the cwd, may be new). */
  origin: () => CallOrigin
}

export interface CallRecorderOptions {
  audit?: AuditFile
  /**
   * With `audit`: a line that cannot be written fails its call (it ran; its result becomes an error
   * saying so) and refuses every later call before it runs, until a line can be written again.
   * Otherwise a failure is reported on stderr and calls go on unrecorded.
   */
  required?: boolean
  /** The tracer; a promise while it loads (`ready` waits for it). */
  tracing?: CallTracing | Promise<CallTracing | undefined>
  /** The executor's name in audit lines (the CLI's `--executor`); the host fills it in at bind when empty. */
  executor: string
  /** The executor, for a task's facts when it ends. */
  bash: () => BashExecutor | undefined
  log(message: string): void
}

/** A call being recorded. */
export interface RecordedCall {
  /**
   * The result is ready: writes its line (awaited: the line is written before the result is sent)
   * and ends its span. Resolves with `failure` when the line could not be written, and whether the
   * tool ran (the pipeline's facts).
   */
  end(result: ToolResult): Promise<{ failure?: string; ran: boolean }>
}

/** What a task's end line repeats of the call that started it. */
interface StartedTask {
  line: Record<string, unknown>
  owner: string | undefined
  span: TracedCall | undefined
}

export class CallRecorder {
  /** Facts of calls in flight, by call id (filled by the registry's observer, taken by `end`). */
  private readonly _facts = new Map<string, CallFacts | undefined>()
  /** Background tasks started by recorded calls, until they end. */
  private readonly _tasks = new Map<string, StartedTask>()
  /** Tasks that ended before the call that started them was recorded (a quick `true &`). */
  private readonly _endedEarly = new Map<string, BashTask>()
  /** Lines lost since the last one written, and why. */
  private _lost = 0
  private _failure: string | undefined
  private _closed = false
  private _tracing: CallTracing | undefined
  /** While the tracer loads: calls wait for it (`ready`), so none goes untraced. */
  ready: Promise<void> | undefined

  constructor(private readonly options: CallRecorderOptions) {
    const tracing = options.tracing
    if (tracing instanceof Promise) {
      this.ready = tracing.then(
        (loaded) => void (this._tracing = loaded),
        (error: unknown) => options.log(`tracing: could not start, calls are not traced: ${error instanceof Error ? error.message : String(error)}`),
      ).finally(() => (this.ready = undefined))
    } else {
      this._tracing = tracing
    }
  }

  /** The executor's name in audit lines. */
  get executor(): string {
    return this.options.executor
  }

  set executor(name: string) {
    this.options.executor = name
  }

  /** True when `required` is set: a line that cannot be written fails its call. */
  get required(): boolean {
    return this.options.required === true && this.options.audit !== undefined
  }

  /** The registry's result observer (`ctx.tools.onResult`): keeps the facts of this host's calls. */
  readonly observe = (execution: ToolExecution, _result: ToolResult, facts: CallFacts): void => {
    if (this._facts.has(execution.callId)) this._facts.set(execution.callId, facts)
  }

  /** Why calls are refused now (`required` and the audit log cannot be written), else undefined. */
  async refusal(): Promise<string | undefined> {
    if (!this.options.required || this._failure === undefined) return undefined
    // Try again: the lost lines are noted, and the call goes ahead if that works.
    return this._write(undefined)
  }

  begin(start: CallStart): RecordedCall {
    const startTime = Date.now()
    this._facts.set(start.callId, undefined)
    const origin = start.origin()
    const span = this._tracing?.startCall({
      tool: start.known ? start.name : undefined,
      requestId: String(start.requestId),
      sessionId: origin.transport === 'http' ? origin.session : undefined,
      transport: origin.transport,
      traceparent: stringAt(start.meta, 'traceparent'),
      tracestate: stringAt(start.meta, 'tracestate'),
      startTime,
    })
    return {
      end: async (result) => {
        const endTime = Date.now()
        const facts = this._facts.get(start.callId) ?? { ran: false, approvals: [] }
        this._facts.delete(start.callId)
        const structured = result.structured ?? {}
        const line = this.callLine(start, start.origin(), facts, result, startTime)
        const taskId = typeof structured.taskId === 'string' ? structured.taskId : undefined
        // A task seen running for the first time was started by this call (a start, or a yield).
        const startsTask = taskId !== undefined && facts.ran && (structured.status === 'running' || structured.status === 'yielded') && !this._tasks.has(taskId)
        if (span) {
          const durationMs = typeof structured.durationMs === 'number' ? structured.durationMs : undefined
          if (facts.ran && durationMs !== undefined && !startsTask) {
            span.command({ kind: 'run', startTime: endTime - durationMs, endTime, status: String(structured.status), exitCode: numberOrNull(structured.exitCode), signal: stringOrNull(structured.signal), taskId: null })
          }
          const code = result.meta?.code
          span.end({ endTime, isError: result.isError, ...(typeof code === 'string' ? { errorCode: code } : {}) })
        }
        if (startsTask) this._tasks.set(taskId, { line, owner: this.options.bash()?.ownerOf(taskId), span })
        const written = this._write(line)
        const early = startsTask ? this._endedEarly.get(taskId) : undefined
        if (early) {
          this._endedEarly.delete(taskId!)
          this.taskDone(early)
        }
        // No call in flight can claim a task that ended early any more.
        if (this._facts.size === 0) this._endedEarly.clear()
        const failure = await written
        return failure === undefined ? { ran: facts.ran } : { failure, ran: facts.ran }
      },
    }
  }

  /** An executor's task ended (`ctx.bash.onTaskDone`): its second line and span, if a recorded call started it. */
  readonly taskDone = (task: BashTask): void => {
    const started = this._tasks.get(task.id)
    if (!started) {
      // Its call may not be recorded yet: keep it for `end` (only tasks of calls in flight can be that).
      if (this._facts.size > 0 && !this._closed) this._endedEarly.set(task.id, task)
      return
    }
    this._tasks.delete(task.id)
    const endedAt = task.endedAt ?? Date.now()
    const status = taskEndStatus(task)
    started.span?.command({ kind: 'task', startTime: task.startedAt, endTime: endedAt, status, exitCode: task.exitCode, signal: task.signal, taskId: task.id })
    const { line } = started
    void this._write({
      time: new Date(endedAt).toISOString(),
      event: 'task-end',
      session: line.session,
      client: line.client,
      callId: line.callId,
      taskId: task.id,
      command: task.command,
      workdir: task.workdir,
      executor: line.executor,
      sandboxMode: task.sandbox?.mode ?? line.sandboxMode,
      status,
      exitCode: task.exitCode,
      signal: task.signal,
      reason: task.reason ?? null,
      durationMs: Math.max(0, endedAt - task.startedAt),
      ...measured(task),
      outputBytes: this.outputBytes(task.id, started.owner),
    })
  }

  /** Waits for the lines in flight and closes the file and the tracer. Idempotent. */
  async close(): Promise<void> {
    if (this._closed) return
    this._closed = true
    // Tasks whose end no listener will report (the executor is being disposed): say what is known.
    for (const [id, started] of this._tasks) {
      const task = this.options.bash()?.get(id)
      if (task && task.status !== 'running') {
        this.taskDone(task)
        continue
      }
      const { session, client, callId, executor, sandboxMode } = started.line
      void this._write({ time: new Date().toISOString(), event: 'task-end', session, client, callId, taskId: id, command: task?.command ?? null, workdir: task?.workdir ?? null, executor, sandboxMode, status: 'killed', reason: 'the server stopped (stopping kills its tasks)' })
    }
    this._tasks.clear()
    this._endedEarly.clear()
    await this.options.audit?.close()
    await this.ready
    await this._tracing?.shutdown().catch((error: unknown) => this.options.log(`tracing: shutting down failed: ${String(error)}`))
  }

  /** The line of one call. */
  private callLine(start: CallStart, origin: CallOrigin, facts: CallFacts, result: ToolResult, startTime: number): Record<string, unknown> {
    const structured = result.structured ?? {}
    const args = facts.args ?? {}
    const { command, ...rest } = args as { command?: unknown }
    const code = result.meta?.code
    return {
      time: new Date(startTime).toISOString(),
      event: 'call',
      session: origin.session,
      client: origin.client,
      callId: start.callId,
      requestId: start.requestId,
      tool: start.name,
      ...(typeof command === 'string' ? { command } : {}),
      arguments: rest,
      workdir: typeof structured.workdir === 'string' ? structured.workdir : requestedWorkdir(origin.cwd, args),
      executor: this.options.executor,
      sandboxMode: typeof structured.sandboxMode === 'string' || structured.sandboxMode === null ? structured.sandboxMode : (origin.sandboxMode ?? this.options.bash()?.sandboxMode ?? null),
      ran: facts.ran,
      policy: facts.decision ? { decision: facts.decision.kind, rule: facts.decision.rule ?? null, reasons: facts.decision.reasons ?? (facts.decision.reason === undefined ? [] : [facts.decision.reason]) } : null,
      approvals: facts.approvals.map(approvalOf),
      taskId: stringOrNull(structured.taskId),
      status: typeof structured.status === 'string' ? structured.status : result.isError ? 'error' : 'completed',
      exitCode: numberOrNull(structured.exitCode),
      signal: stringOrNull(structured.signal),
      durationMs: numberOrNull(structured.durationMs),
      ...measured(structured),
      outputBytes: structured.outputBytes ?? null,
      isError: result.isError,
      code: typeof code === 'string' ? code : null,
    }
  }

  /** A task's output size per stream, where the executor keeps its complete output (else null): read as an empty range. */
  private outputBytes(id: string, owner: string | undefined): { stdout: number | null; stderr: number | null } {
    const bash = this.options.bash()
    const size = (stream: 'stdout' | 'stderr') => {
      try {
        return bash?.readFullOutput({ id, stream }, { offset: 0, length: 0 }, owner).size ?? null
      } catch {
        return null
      }
    }
    return { stdout: size('stdout'), stderr: size('stderr') }
  }

  /**
   * Appends `line` (undefined: only the note of lost lines, to try the file again). Resolves with
   * the failure, else undefined. Lines lost meanwhile are noted first (`audit-gap`), so a reader
   * knows the record has a hole; a failure is reported once until writing works again.
   */
  private async _write(line: Record<string, unknown> | undefined): Promise<string | undefined> {
    const audit = this.options.audit
    if (!audit) return undefined
    const lost = this._lost
    this._lost = 0
    const writes: Promise<void>[] = []
    if (lost > 0 || (line === undefined && this._failure !== undefined)) {
      writes.push(audit.append({ time: new Date().toISOString(), event: 'audit-gap', lost, reason: this._failure ?? null }))
    }
    if (line) writes.push(audit.append(line))
    const settled = await Promise.allSettled(writes)
    const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (!rejected) {
      if (this._failure !== undefined) this.options.log(`audit log: writing to ${audit.path} again; ${lost} line(s) were lost (an "audit-gap" line says so)`)
      this._failure = undefined
      return undefined
    }
    this._lost = lost + (line ? 1 : 0)
    const message = rejected.reason instanceof Error ? rejected.reason.message : String(rejected.reason)
    if (this._failure === undefined) {
      this.options.log(`audit log: ${message}; ${this.options.required ? 'no call runs until it can be written (--audit-required)' : 'calls go on unrecorded'}`)
    }
    this._failure = message
    return message
  }
}

/** How an approval reads in a line: asked or not, the outcome in plain words, the front end. */
function approvalOf(fact: ApprovalFact): Record<string, unknown> {
  const outcome = { 'allowed-once': 'approved', rejected: 'declined', cancelled: 'cancelled', unavailable: 'unavailable' }[fact.answer] ?? fact.answer
  return { asked: fact.answer !== 'unavailable', outcome, via: fact.via ?? null, reason: fact.reason ?? null }
}

/** Where a command that never ran would have run: the session's workspace joined with its `workdir`. */
function requestedWorkdir(cwd: string | undefined, args: Record<string, unknown>): string | null {
  if (cwd === undefined || typeof args.command !== 'string') return null
  return typeof args.workdir === 'string' && args.workdir !== '' ? resolve(cwd, args.workdir) : cwd
}

/** CPU time and peak memory, where the executor measures them (else null). */
function measured(facts: object): { cpuMs: number | null; peakMemoryBytes: number | null } {
  const { cpuMs, peakMemoryBytes } = facts as { cpuMs?: unknown; peakMemoryBytes?: unknown }
  return { cpuMs: numberOrNull(cpuMs), peakMemoryBytes: numberOrNull(peakMemoryBytes) }
}

function stringAt(meta: Record<string, unknown> | undefined, key: string): string | undefined {
  const value = meta?.[key]
  return typeof value === 'string' ? value : undefined
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null
}
