import { isAbsolute, resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import { type BashExecRequest, type BashTask, widerModes } from '@deepseek-ai/dsh-bash'
import type { ApprovalRequest, ApprovalService, ToolCall, ToolCaller, ToolContent, ToolResult } from '@deepseek-ai/dsh-tools'
import { approvalTooLong, CALLER_ERROR, hasCode, messageOf, type SecretInputService, serviceObject } from '@deepseek-ai/dsh-tools'
import { byteLength, checkBudget, lineCount, type ResultBudget } from './budget.js'
import { BASH_INPUT_DESCRIPTION, BASH_KILL_DESCRIPTION, BASH_OUTPUT_DESCRIPTION, bashDescription } from './descriptions.js'
import { Carry, GatheredRead, waitForOutput, type WaitRule } from './wait.js'
import { UntilMatcher } from './until.js'
import { ReplyMask } from './reply-mask.js'
import { presentBashCall, presentBashResult, presentTaskCall, presentTaskResult } from './present.js'
import {
  alreadyFinishedText,
  killedText,
  renderNotice,
  renderReadCut,
  renderRun,
  type RenderableRead,
  startedText,
} from './render.js'
import { BASH_ANNOTATIONS, bashOutputSchema, errorStructure, launchFacts, runStructure, taskStructure } from './structured.js'
import { rangeLimits, rangeRef, renderRange } from './range.js'
import {
  type BashArgs,
  bashParametersFor,
  checkBashArgs,
  checkInputArgs,
  checkOutputArgs,
  checkTaskArgs,
  DEFAULT_INPUT_WAIT_MS,
  type InputArgs,
  inputParameters,
  type OutputArgs,
  outputParameters,
  type TaskArgs,
  taskParameters,
} from './schema.js'
import { toolBashErrors } from './errors.js'
import { newestLineReporter } from './progress-line.js'
import { ASK_USER_SENTENCE, sendUserReply, TYPED_TEXT } from './secret-input.js'

/** The source every completion notice carries. */
export const NOTICE_SOURCE = Object.freeze({ kind: 'plugin', plugin: 'tool-bash' } as const)

/** What tool-bash needs of an agent to deliver a notice (`@deepseek-ai/dsh-agent`'s agents fit). */
export interface NoticeTarget extends ToolCaller {
  inject(content: ToolContent[], options: { source: { kind: string; plugin?: string } }): void
}

interface AgentDirectory {
  list(): NoticeTarget[]
}

/** The owner token of a call: the calling agent's session id (never the agent object's identity). */
function ownerToken(call: ToolCall): string | undefined {
  return call.agent?.session?.header?.id
}

/** Settings of the tools. Library defaults keep the contract's behaviour; the MCP server tunes them. */
export interface ToolBashConfig {
  /**
   * Yield time of foreground calls in ms: a command still running this long returns what it
   * printed so far, ending with the `[still running after Ns; …]` marker, and continues as a
   * background task of the caller's session. Unset or 0: never (calls wait for the command).
   */
  yieldAfterMs?: number
  /**
   * Fit every result text of `bash` and `bash_output` within this many bytes and lines, truncation
   * markers first (see budget.ts). Unset: the contract's layout, sized only by the executor.
   */
  resultBudget?: ResultBudget
}

function checkConfig(config: ToolBashConfig | undefined): ToolBashConfig {
  const checked: ToolBashConfig = {}
  const yieldAfterMs = config?.yieldAfterMs
  if (yieldAfterMs !== undefined && yieldAfterMs !== 0) {
    if (!(typeof yieldAfterMs === 'number' && Number.isFinite(yieldAfterMs) && yieldAfterMs > 0)) {
      throw toolBashErrors.invalidConfig(`tool-bash: yieldAfterMs must be a positive number of ms or 0 (off), got ${JSON.stringify(yieldAfterMs)}`)
    }
    checked.yieldAfterMs = yieldAfterMs
  }
  if (config?.resultBudget !== undefined) checked.resultBudget = { ...checkBudget(config.resultBudget, 'tool-bash: resultBudget') }
  return checked
}

/**
 * Registers `bash`, `bash_output`, `bash_kill` and `bash_input` over `ctx.bash`, and delivers completion notices.
 * Pending until both `ctx.tools` and an executor (`ctx.bash`) are loaded; unloading removes it all.
 */
export const ToolBash = {
  name: 'tool-bash',
  inject: ['tools', 'bash'],
  apply(ctx: Context, rawConfig?: ToolBashConfig) {
    const config = checkConfig(rawConfig)
    // The executor's object, resolved once for this plugin's lifetime (it is applied again when
    // `ctx.bash` changes): every access through cordis' proxy builds a shadow context and a method
    // proxy per call (profiled under the load bench). Its per-call methods use no caller context;
    // `onTaskDone`, which must be undone with this plugin, stays on the proxy below.
    const bash = serviceObject(ctx.bash)
    // What the executor can do decides the tools' schemas and checks (never a guess per executor kind).
    const capabilities = bash.capabilities
    const confines = capabilities.sandboxModes.length > 0
    const budget = config.resultBudget
    // Replies typed by a person, hidden in every later read of their task (reply-mask.ts).
    const replies = new ReplyMask()
    // A read's result, its text and its facts. `lead`: a first line before the read (after a typed
    // reply); the budget holds it too.
    const readResult = (id: string, read: RenderableRead, lead = ''): ToolResult => {
      const room = budget && lead ? { bytes: Math.max(1, budget.bytes - byteLength(lead)), lines: Math.max(1, budget.lines - lineCount(lead)) } : budget
      const rendered = renderReadCut(read, { escalationHint: escalationPossible(ctx, confines), budget: room, mask: (text) => replies.hide(id, text) })
      return { content: [{ type: 'text', text: lead + rendered.text }], isError: false, structured: taskStructure(read.task, read.spillPaths, rendered.cut) }
    }
    // Every tool's results carry the facts as data (structured.ts): the tool's own, else these.
    const facts = { outputSchema: bashOutputSchema, structureOf: errorStructure }
    // Waiting reads (wait.ts): `until` runs off the loop (until.ts); what a cancelled wait read is
    // carried to the next read of its task.
    const matcher = new UntilMatcher()
    ctx.effect(() => () => matcher.dispose())
    const carry = new Carry()
    const exists = (id: string) => bash.get(id) !== undefined
    /** A task's next read, after whatever a cancelled wait left for it. */
    const gather = (id: string) => {
      const gathered = new GatheredRead(bash.readOutput(id))
      const held = carry.take(id)
      if (held) gathered.prepend(held)
      return gathered
    }
    const waitThenRender = async (id: string, call: ToolCall, rule: Pick<WaitRule, 'waitMs' | 'echo'> & { until?: string }, gathered: GatheredRead, lead = '') => {
      const { until } = rule
      let waited
      try {
        waited = await waitForOutput(bash, id, {
          waitMs: rule.waitMs,
          echo: rule.echo,
          until: until === undefined ? undefined : (lines) => matcher.firstMatch(until, lines),
          // More than a result holds need not be waited for.
          maxChars: budget?.bytes ?? 64_000,
          signal: call.signal,
        }, gathered)
      } catch (error) {
        carry.hold(id, gathered, exists)
        throw error
      }
      if (waited.aborted) {
        carry.hold(id, waited.gathered, exists)
        throw toolBashErrors.waitCancelled(id)
      }
      return readResult(id, waited.gathered.toRead(), lead)
    }

    ctx.tools.register({
      name: 'bash',
      description: bashDescription({ sandbox: confines, yieldAfterMs: config.yieldAfterMs }),
      parameters: bashParametersFor(capabilities),
      ...facts,
      annotations: BASH_ANNOTATIONS.bash,
      presentCall: presentBashCall,
      presentResult: presentBashResult,
      async execute(rawArgs, call) {
        const args = rawArgs as BashArgs
        checkBashArgs(args)
        // An approved escalation for this call, else the session's own mode (else the executor's default).
        const sandboxMode = (await escalation(ctx, bash, args, call)) ?? sessionMode(call)
        const cwd = call.agent?.session?.header?.cwd
        let workdir = args.workdir
        // The agent's workspace is the base; without an agent the executor's config decides.
        if (cwd && isAbsolute(cwd)) workdir = workdir === undefined || workdir === '' ? cwd : resolvePath(cwd, workdir)
        const request: BashExecRequest = {
          command: args.command,
          workdir,
          timeoutMs: args.timeoutMs,
          signal: call.signal,
          owner: ownerToken(call),
          sandboxMode,
        }
        // The session's egress rules narrow the executor's (never widen them).
        const network = call.agent?.session?.header?.network
        if (network) request.network = network
        if (args.interactive === true) request.interactive = true
        if (config.yieldAfterMs !== undefined && !args.run_in_background) request.yieldAfterMs = config.yieldAfterMs
        if (call.onProgress && !args.run_in_background) request.onOutput = newestLineReporter(call.onProgress)
        const spec = bash.resolve(request)
        if (args.run_in_background) {
          const task = bash.start(spec)
          return { content: [{ type: 'text', text: startedText(task.id) }], isError: false, structured: { ...taskStructure(task), ...launchFacts(spec) } }
        }
        const result = await bash.run(spec)
        const rendered = renderRun(result, { escalationHint: escalationPossible(ctx, confines), budget })
        const structured = { ...runStructure(result, rendered), ...launchFacts(spec) }
        if (result.aborted) return { content: [{ type: 'text', text: `Error: the command was aborted\n${rendered.text}` }], isError: true, structured }
        return { content: [{ type: 'text', text: rendered.text }], isError: false, structured }
      },
    })

    ctx.tools.register({
      name: 'bash_output',
      description: BASH_OUTPUT_DESCRIPTION,
      parameters: outputParameters,
      ...facts,
      annotations: BASH_ANNOTATIONS.bash_output,
      presentCall: presentTaskCall('bash_output'),
      presentResult: presentTaskResult('bash_output'),
      execute(rawArgs, call) {
        const args = rawArgs as OutputArgs
        checkOutputArgs(args)
        if (args.offset !== undefined) {
          // The executor fences complete outputs by owner itself (one error for unknown and foreign).
          const limits = rangeLimits(budget)
          const ref = rangeRef(args.task_id, args.stream)
          const read = bash.readFullOutput(ref, { offset: args.offset, length: Math.min(args.length ?? limits.bytes, limits.bytes) }, ownerToken(call))
          if ('path' in ref && args.stream !== undefined && args.stream !== read.stream) {
            throw toolBashErrors.invalidArguments(`invalid stream: that path is the ${read.stream} of ${read.id}`)
          }
          const { text, structured } = renderRange(read, args.offset, limits)
          return { content: [{ type: 'text', text }], isError: false, structured }
        }
        assertAccess(bash, args.task_id, call)
        return waitThenRender(args.task_id, call, { waitMs: args.wait_ms ?? 0, until: args.until }, gather(args.task_id))
      },
    })

    ctx.tools.register({
      name: 'bash_kill',
      description: BASH_KILL_DESCRIPTION,
      parameters: taskParameters,
      ...facts,
      annotations: BASH_ANNOTATIONS.bash_kill,
      presentCall: presentTaskCall('bash_kill'),
      presentResult: presentTaskResult('bash_kill'),
      async execute(rawArgs, call) {
        const args = rawArgs as TaskArgs
        checkTaskArgs(args)
        assertAccess(bash, args.task_id, call)
        const text = (await bash.kill(args.task_id)) ? killedText(args.task_id) : alreadyFinishedText(args.task_id)
        const task = bash.get(args.task_id)
        return { content: [{ type: 'text', text }], isError: false, ...(task ? { structured: taskStructure(task) } : {}) }
      },
    })

    // Input goes to interactive tasks only: an executor without terminals gets no bash_input.
    if (capabilities.interactive) {
      ctx.tools.register({
        name: 'bash_input',
        description: `${BASH_INPUT_DESCRIPTION}${ASK_USER_SENTENCE}`,
        parameters: inputParameters,
        ...facts,
        annotations: BASH_ANNOTATIONS.bash_input,
        presentCall: presentTaskCall('bash_input'),
        presentResult: presentTaskResult('bash_input'),
        async execute(rawArgs, call) {
          const args = rawArgs as InputArgs
          checkInputArgs(args)
          assertAccess(bash, args.task_id, call)
          const waitMs = args.wait_ms ?? DEFAULT_INPUT_WAIT_MS
          if (args.ask_user !== undefined) {
            // A person types the reply (secret-input.ts); the model reads only that it was typed.
            const owner = bash.ownerOf(args.task_id)
            const notify = (text: string) => {
              if (owner !== undefined) tellSession(ctx, owner, text, args.task_id)
            }
            const outcome = await sendUserReply(ctx, call, args.task_id, args.ask_user, replies, notify)
            // Waiting for `dsh-bash reply`: nothing was typed, so there is nothing to wait for now.
            if (!outcome.sent) return waitThenRender(args.task_id, call, { waitMs: 0, echo: '' }, gather(args.task_id), `${outcome.line}\n`)
            return waitThenRender(args.task_id, call, { waitMs, echo: '', until: args.until }, gather(args.task_id), `${TYPED_TEXT}\n`)
          }
          // Typed by the model: a question still waiting for a person's reply to this task is moot.
          if (args.text) {
            const service = serviceObject(ctx.get('secretInput')) as SecretInputService | undefined
            const sessionId = ownerToken(call)
            if (sessionId !== undefined) service?.withdraw?.({ sessionId, taskId: args.task_id })
          }
          // What the program printed before the typing is read first: only what comes after can answer it.
          const before = gather(args.task_id)
          try {
            // Not interactive, or finished: the executor's coded errors, before any wait.
            await bash.write(args.task_id, args.text ?? '')
          } catch (error) {
            carry.hold(args.task_id, before, exists)
            throw error
          }
          return waitThenRender(args.task_id, call, { waitMs, echo: args.text ?? '', until: args.until }, before)
        },
      })
    }

    ctx.bash.onTaskDone((task) => deliverNotice(ctx, bash, task, confines))
  },
}

/** The calling session's sandbox mode (`session.header.sandboxMode`), if it sets one. */
function sessionMode(call: ToolCall): string | undefined {
  const mode = call.agent?.session?.header?.sandboxMode
  return typeof mode === 'string' && mode !== '' ? mode : undefined
}

/** The ownership fence: a task owned by a session is closed to every other caller. */
function assertAccess(bash: Context['bash'], id: string, call: ToolCall): void {
  // An unknown id gets the executor's stable error.
  if (!bash.get(id)) bash.readOutput(id)
  const owner = bash.ownerOf(id)
  if (owner !== undefined && owner !== ownerToken(call)) throw toolBashErrors.foreignTask(id)
}

function deliverNotice(ctx: Context, bash: Context['bash'], task: BashTask, confines: boolean): void {
  const owner = bash.ownerOf(task.id)
  if (owner === undefined) return
  tellSession(ctx, owner, renderNotice(task, { escalationHint: escalationPossible(ctx, confines) }), task.id)
}

/** Injects a notice into the agent of session `owner`, if it still has one. */
function tellSession(ctx: Context, owner: string, text: string, taskId: string): void {
  // Not injected (tool-bash works without agents): looked up per notice, its `list` called on the object.
  const agents = serviceObject(ctx.get('agents')) as AgentDirectory | undefined
  // One agent per session gets it: several agent objects may share a session, the notice is one.
  const target = agents?.list().find((agent) => agent.session?.header?.id === owner)
  if (!target) return
  try {
    target.inject([{ type: 'text', text }], { source: { ...NOTICE_SOURCE } })
  } catch (error) {
    // The agent went away between the lookup and the call: nothing to tell it any more.
    if (!hasCode(error, CALLER_ERROR.disposed)) ctx.logger('dsh-tool-bash').error(`could not deliver the notice of ${taskId}: ${messageOf(error)}`)
  }
}

/**
 * True when the `bash` tool can escalate: the executor confines (`confines`, read once when the
 * plugin applies; it is applied again for another executor) and an approval service can answer.
 */
function escalationPossible(ctx: Context, confines: boolean): boolean {
  return confines && approvalOf(ctx) !== undefined
}

/** The approval service, when one that can answer is loaded. */
function approvalOf(ctx: Context): ApprovalService | undefined {
  const approval = ctx.get('approval') as ApprovalService | undefined
  return typeof approval?.request === 'function' ? approval : undefined
}

/**
 * Sandbox escalation: `sandbox_permissions` and `justification` come together, must ask for a mode
 * strictly wider than the current one (the session's mode, else the executor's default), and the
 * approval service decides for this one call. Returns the approved mode (undefined: no escalation).
 */
async function escalation(ctx: Context, bash: Context['bash'], args: BashArgs, call: ToolCall): Promise<string | undefined> {
  const wanted = args.sandbox_permissions
  const justification = args.justification?.trim() ?? ''
  if (wanted === undefined && justification === '') return undefined
  if (bash.sandboxMode === undefined) throw toolBashErrors.escalationDenied('invalid sandbox_permissions: this executor does not use a sandbox')
  // "Strictly wider" is measured against the session's mode when it sets one.
  const current = sessionMode(call) ?? bash.sandboxMode
  if (wanted === undefined) throw toolBashErrors.escalationDenied('invalid justification: it goes with sandbox_permissions')
  if (justification === '') throw toolBashErrors.escalationDenied('invalid sandbox_permissions: a non-empty justification is required with it')
  if (!widerModes(current, bash.capabilities.sandboxModes).includes(wanted)) {
    throw toolBashErrors.escalationDenied(`invalid sandbox_permissions: "${wanted}" is not wider than the current mode "${current}"`)
  }
  const approval = approvalOf(ctx)
  if (!approval) {
    throw toolBashErrors.escalationDenied(`sandbox escalation to "${wanted}" needs approval but no approval service is available`)
  }
  const request: ApprovalRequest = {
    callId: call.callId,
    tool: 'bash',
    // What runs unconfined: the validated arguments, the whole command (front ends show it escaped, never cut).
    arguments: call.args,
    reason: `run with sandbox mode "${wanted}" (now "${current}"): ${justification}`,
    agent: call.agent,
    signal: call.signal,
  }
  const tooLong = approvalTooLong(request)
  if (tooLong) throw toolBashErrors.escalationDenied(`sandbox escalation to "${wanted}" cannot be asked about: ${tooLong}`)
  // Through the registry, so the answer is recorded in the call's facts (audit logs, traces).
  const answer = await ctx.tools.requestApproval(call, request)
  if (answer === 'allowed-once') return wanted
  if (answer === 'rejected') throw toolBashErrors.escalationDenied(`sandbox escalation to "${wanted}" was rejected by the user`)
  if (answer === 'cancelled') throw toolBashErrors.escalationDenied(`sandbox escalation to "${wanted}" was cancelled`)
  throw toolBashErrors.escalationDenied(`sandbox escalation to "${wanted}" could not be approved: approval unavailable`)
}
