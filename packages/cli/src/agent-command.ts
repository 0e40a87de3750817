import { randomBytes } from 'node:crypto'
import { createInterface, type Interface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import { type ModelAdapter, type ModelReply, type ModelRequest, modelFailureFacts, OpenAIChatAdapter, resultText } from '@deepseek-ai/dsh-agent'
import { type ApprovalDecision, type ApprovalRequest, type ToolRegistry, type ToolResult, visibleText } from '@deepseek-ai/dsh-tools'
import type { AgentCommandOptions } from './args.js'
import { askApproval } from './approval.js'
import { attach, composeApp, firstLine } from './compose.js'
import { cliErrors, UsageError } from './errors.js'
import { LineReader } from './lines.js'
import { onStopSignals, type StopSignal, signalExitCode } from './signals.js'

interface Io {
  input: Readable
  /** The final answer, and nothing else. */
  output: Writable
  /** The trace (tool calls, result excerpts, notices), approval prompts and errors. */
  error: Writable
}

/** How much of each result the trace shows. */
const EXCERPT_LINES = 4
const EXCERPT_WIDTH = 160

/**
 * Runs `dsh-bash agent`: one turn of the real agent loop with an OpenAI-compatible model over the
 * composed app. Resolves with the exit code: 0 answered, 1 model/HTTP/runtime failure, 128+N after
 * a signal. Every task is killed before it resolves.
 */
export async function runAgent(
  options: AgentCommandOptions,
  io: Io = { input: process.stdin, output: process.stdout, error: process.stderr },
): Promise<number> {
  // stdout carries the answer only, whatever a plugin logs: cordis' logger goes to stderr (composeApp),
  // and this keeps a dependency's or a plugin's stray console.log out of the answer too.
  if (io.output === process.stdout) console.log = console.info = console.debug = (...args: unknown[]) => console.error(...args)
  const fromStdin = typeof options.prompt !== 'string'
  // A prompt piped in usually ends with a newline that is not part of the request.
  const prompt = typeof options.prompt === 'string' ? options.prompt : (await readAll(io.input)).replace(/\s+$/, '')
  if (prompt.trim() === '') throw new UsageError('the prompt read from stdin is empty')
  let adapter: OpenAIChatAdapter
  try {
    adapter = new OpenAIChatAdapter({ baseUrl: options.baseUrl, model: options.model, apiKey: options.apiKey })
  } catch (error) {
    throw new UsageError(`--base-url: ${firstLine(error)}`)
  }

  const app = await composeApp(options)
  const trace = new Trace(io.error)
  // Approvals need a person at a terminal; a prompt read from stdin used the input up.
  const tty = Boolean((io.input as { isTTY?: boolean }).isTTY) && !fromStdin
  const approvals = new Approvals(tty ? io.input : undefined, io.error)
  let over = false
  const agent = await attach(app, 'dsh-agent-cli', 'the agent', (ctx) => {
    const agent = ctx.agents.create({
      id: 'agent',
      session: { id: randomBytes(18).toString('base64url'), cwd: options.workdir ?? process.cwd() },
      adapter: new NamedAdapter(adapter),
      system: options.system,
      maxSteps: options.maxSteps,
    })
    const self = agent.id
    // Notices stay queued: the agent admits them into its next model request by itself.
    // Once the turn is over (the tasks are being killed), nobody is left to read them.
    agent.onInject((entry) => {
      if (!over) trace.line(`[notice] ${entry.content.map((block) => block.text).join(' ')}`)
    })
    ctx.set('approval', { request: (request: ApprovalRequest) => approvals.request(request), via: 'terminal' })
    // The lowest order: the line is printed before any permission listener decides (or asks).
    ctx.tools.onPreExecute(
      (call) => {
        if (call.agent?.id === self) trace.call(call.callId, callLine(ctx.tools, call.name, call.args))
      },
      { order: Number.MIN_SAFE_INTEGER },
    )
    ctx.tools.onResult((call, result) => {
      if (call.agent?.id !== self) return
      // Calls refused before the permission stage (unknown tool, invalid arguments) get their line here.
      trace.call(call.callId, callLine(ctx.tools, call.name, call.arguments))
      trace.result(call.callId, result)
    })
    return agent
  })

  const controller = new AbortController()
  let stoppedBy: StopSignal | undefined
  onStopSignals((signal) => {
    stoppedBy = signal
    controller.abort(cliErrors.stopped(signal))
  })
  try {
    const answer = await agent.run(prompt, { signal: controller.signal })
    if (answer !== '') io.output.write(answer.endsWith('\n') ? answer : `${answer}\n`)
    return 0
  } catch (error) {
    if (stoppedBy) {
      trace.line(`dsh-bash: ${stoppedBy}: the turn was aborted`)
      return signalExitCode(stoppedBy)
    }
    trace.line(`dsh-bash: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  } finally {
    over = true
    approvals.close()
    const running = app.ctx.get('bash')?.list().filter((task) => task.status === 'running').length ?? 0
    if (running > 0) trace.line(`dsh-bash: killing ${running} running background task(s)`)
    await app.shutdown()
  }
}

/** Adds the URL to every model failure: "model request to <url> failed: HTTP 500 …". */
class NamedAdapter implements ModelAdapter {
  constructor(private readonly inner: OpenAIChatAdapter) {}

  async next(request: ModelRequest, signal?: AbortSignal): Promise<ModelReply> {
    try {
      return await this.inner.next(request, signal)
    } catch (error) {
      const facts = modelFailureFacts(error)
      if (signal?.aborted || !(error instanceof Error) || facts.url !== undefined) throw error
      const detail = facts.detail ?? error.message
      throw cliErrors.model(this.inner.url, detail, error)
    }
  }
}

/** The stderr trace a person follows: one line per tool call, then an excerpt of its result. */
class Trace {
  private readonly shown = new Set<string>()

  constructor(private readonly out: Writable) {}

  line(text: string): void {
    this.out.write(text.endsWith('\n') ? text : `${text}\n`)
  }

  /** Prints the call line once per call id. */
  call(callId: string, text: string): void {
    if (this.shown.has(callId)) return
    this.shown.add(callId)
    this.line(text)
  }

  result(callId: string, result: ToolResult): void {
    this.shown.delete(callId)
    const lines = resultText(result).replace(/\n+$/, '').split('\n')
    if (lines.length === 1 && lines[0] === '') return this.line('  (empty result)')
    for (const line of lines.slice(0, EXCERPT_LINES)) this.line(`  ${clip(line)}`)
    if (lines.length > EXCERPT_LINES) this.line(`  … (${lines.length - EXCERPT_LINES} more lines)`)
  }
}

/** `$ <command>` for bash, the tool's own title for the others (`bash_output bash-1`), else `name {json}`. */
function callLine(tools: ToolRegistry, name: string, args: unknown): string {
  const fields = args && typeof args === 'object' ? (args as Record<string, unknown>) : {}
  if (name === 'bash' && typeof fields.command === 'string') {
    return `$ ${clip(fields.command)}${fields.run_in_background === true ? '  [background]' : ''}`
  }
  try {
    const shown = tools.get(name)?.presentCall?.(args)
    if (shown) return shown.kind === 'terminal' ? `$ ${clip(shown.title)}` : clip(shown.title)
  } catch {
    // Presenters must not throw; if one does, the generic line below serves.
  }
  let json: string
  try {
    json = JSON.stringify(args) ?? String(args)
  } catch {
    json = String(args)
  }
  return `${clip(name)} ${clip(json)}`
}

/**
 * The first line of `text`, at most EXCERPT_WIDTH characters, with "…" when something was cut;
 * escaped (`visibleText`): the trace reaches a person's terminal, and a call line or an output line
 * with ESC or CR in it could rewrite what the person reads, the approval prompt below it included.
 */
function clip(text: string): string {
  const lines = text.split('\n')
  const first = lines[0]
  if (first.length > EXCERPT_WIDTH) return `${visibleText(first.slice(0, EXCERPT_WIDTH))}…`
  return lines.length > 1 ? `${visibleText(first)} …` : visibleText(first)
}

/**
 * The approval service: a y/N prompt on the terminal (read from stdin, written to stderr), or
 * `unavailable` (the call is denied with the policy's reason) without one.
 */
class Approvals {
  private rl: Interface | undefined
  private reader: LineReader | undefined
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly input: Readable | undefined,
    private readonly out: Writable,
  ) {}

  request(request: ApprovalRequest): Promise<ApprovalDecision> {
    const input = this.input
    if (!input) return Promise.resolve('unavailable')
    // One question at a time; the terminal is read only while a question is open.
    const asked = this.queue.then(() => {
      if (!this.reader) {
        // Not `terminal`: the terminal stays in cooked mode, so Ctrl-C still raises SIGINT.
        this.rl = createInterface({ input, terminal: false })
        this.reader = new LineReader(this.rl)
      }
      const reader = this.reader
      return askApproval(request, () => reader.next(), this.out)
    })
    this.queue = asked.catch(() => undefined)
    return asked
  }

  close(): void {
    this.rl?.close()
  }
}

async function readAll(input: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of input) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer))
  return Buffer.concat(chunks).toString('utf8')
}
