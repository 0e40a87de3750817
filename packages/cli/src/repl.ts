import { randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import type { Agent } from '@deepseek-ai/dsh-agent'
import type { ApprovalDecision, ApprovalRequest, SecretInputAnswer, SecretInputRequest, ToolResult } from '@deepseek-ai/dsh-tools'
import { visibleText } from '@deepseek-ai/dsh-tools'
import type { ReplOptions } from './args.js'
import { askApproval } from './approval.js'
import { type App, attach, composeApp } from './compose.js'
import { REPL_COMMANDS } from './help.js'
import { LineReader } from './lines.js'
import { MutableOutput, readHiddenLine, secretQuestion } from './secret.js'
import { onStopSignals } from './signals.js'



const DESCRIPTION = 'Run a command typed in the REPL'

interface Io {
  input: Readable
  output: Writable
}

/** Runs `dsh-bash repl`; resolves with the exit code. */
export async function runRepl(options: ReplOptions, io: Io = { input: process.stdin, output: process.stdout }): Promise<number> {
  const app = await composeApp(options)
  const tty = Boolean((io.input as { isTTY?: boolean }).isTTY && (io.output as { isTTY?: boolean }).isTTY)
  // readline writes (its echo included) through a switch, so a secret can be typed unseen.
  const lineOutput = new MutableOutput(io.output)
  const rl = createInterface({ input: io.input, output: lineOutput, terminal: tty, prompt: 'dsh-bash> ' })
  const reader = new LineReader(rl)
  const repl = new Repl(app, rl, reader, io.output, tty, lineOutput)
  try {
    await repl.start(options.workdir ?? process.cwd())
  } catch (error) {
    rl.close()
    throw error
  }
  onStopSignals(() => {
    repl.abort()
    reader.end()
  })
  // Ctrl-C as in a shell: it stops a running call, clears a half-typed line, and on an empty line
  // says what leaving would kill; a second Ctrl-C on the empty line (or Ctrl-D) leaves.
  let leaving = false
  rl.on('SIGINT', () => {
    if (repl.busy) return repl.abort()
    if (rl.line !== '') {
      leaving = false
      rl.write(null, { ctrl: true, name: 'e' })
      rl.write(null, { ctrl: true, name: 'u' })
      io.output.write('^C\n')
      return rl.prompt()
    }
    if (leaving) return reader.end()
    leaving = true
    const running = runningTasks(app)
    io.output.write(`\n${leaveWarning(running)}\n`)
    rl.prompt()
  })
  rl.on('line', () => (leaving = false))
  try {
    if (tty) io.output.write(`dsh-bash REPL in ${repl.agent.session.header.cwd}. :help lists the commands.\n`)
    await repl.loop()
  } finally {
    rl.close()
    const running = runningTasks(app)
    if (running.length > 0) process.stderr.write(`${leavingText(running)}\n`)
    await app.shutdown()
  }
  return 0
}

function runningTasks(app: App) {
  return app.ctx.get('bash')?.list().filter((task) => task.status === 'running') ?? []
}

/** What Ctrl-C on an empty line says (docs/harness.md). */
export function leaveWarning(running: { id: string; command: string }[]): string {
  return `(Ctrl-C again or Ctrl-D to leave${running.length > 0 ? `; it kills ${describeTasks(running)}` : ''})`
}

/** What leaving with running tasks says on stderr (docs/harness.md). */
export function leavingText(running: { id: string; command: string }[]): string {
  return `dsh-bash: killing ${describeTasks(running)}`
}

/** `2 running background task(s): bash-1 (sleep 100), bash-2 (npm run dev)`, commands cut to 40 characters. */
export function describeTasks(tasks: { id: string; command: string }[]): string {
  const shown = tasks.map((task) => {
    const line = visibleText(task.command.split('\n')[0])
    return `${task.id} (${line.length > 40 ? `${line.slice(0, 39)}…` : line})`
  })
  return `${tasks.length} running background task(s): ${shown.join(', ')}`
}

/** `:call NAME {json}` → the tool call, or a message saying what is wrong. */
function parseCall(arg: string): { name: string; args: Record<string, unknown> } | string {
  const match = /^(\S+)\s*([\s\S]*)$/.exec(arg)
  if (!match) return ':call needs a tool name and JSON arguments, e.g. :call bash {"command":"ls","description":"List files"}'
  let args: unknown = {}
  if (match[2].trim() !== '') {
    try {
      args = JSON.parse(match[2])
    } catch (error) {
      return `:call: the arguments are not JSON: ${(error as Error).message}`
    }
  }
  // Anything else goes to the tool as it is: the pipeline reports what is wrong, as it would to a model.
  return { name: match[1], args: args as Record<string, unknown> }
}

class Repl {
  agent!: Agent
  busy = false
  private atPrompt = false
  private json = false
  private controller: AbortController | undefined
  private seq = 0

  constructor(
    private readonly app: App,
    private readonly rl: ReturnType<typeof createInterface>,
    private readonly reader: LineReader,
    private readonly out: Writable,
    private readonly tty: boolean,
    private readonly lineOutput: MutableOutput,
  ) {}

  /** Creates the session's agent and the approval service (a y/n prompt); a failure shuts the app down. */
  async start(cwd: string): Promise<void> {
    this.agent = await attach(this.app, 'dsh-repl', 'the REPL', (ctx) => {
      const agent = ctx.agents.create({ id: 'repl', session: { id: randomBytes(18).toString('base64url'), cwd } })
      agent.onInject((entry) => {
        for (const block of entry.content) this.notice(`[notice] ${block.text}`)
        agent.takeInjected()
      })
      ctx.set('approval', { request: (request: ApprovalRequest) => this.approve(request) })
      ctx.set('secretInput', { ask: (request: SecretInputRequest) => this.askSecret(request) })
      return agent
    })
  }

  async loop(): Promise<void> {
    for (;;) {
      if (this.tty) this.rl.prompt()
      this.atPrompt = true
      const line = await this.reader.next()
      this.atPrompt = false
      if (line === null) return
      if (!(await this.handle(line.trim()))) return
    }
  }

  abort(): void {
    this.controller?.abort()
  }

  /** Handles one input line; false means quit. */
  private async handle(line: string): Promise<boolean> {
    if (line === '') return true
    if (!line.startsWith(':')) {
      const background = line.startsWith('&')
      const command = background ? line.slice(1).trim() : line
      if (command === '') return this.say('nothing to run after "&"'), true
      await this.call('bash', background ? { command, description: DESCRIPTION, run_in_background: true } : { command, description: DESCRIPTION })
      return true
    }
    // The argument is the rest of the line verbatim: `:call` JSON may hold runs of spaces.
    const [, name, rawArg] = /^(\S+)\s*([\s\S]*)$/.exec(line)!
    const arg = rawArg.trimEnd()
    switch (name) {
      case ':quit':
      case ':q':
      case ':exit':
        return false
      case ':help':
        this.say(REPL_COMMANDS)
        return true
      case ':json':
        this.json = !this.json
        this.say(`showing ${this.json ? 'whole results as JSON' : 'result texts'}`)
        return true
      case ':tasks':
        this.say(this.tasks())
        return true
      case ':call': {
        const call = parseCall(arg)
        if (typeof call === 'string') return this.say(call), true
        await this.call(call.name, call.args)
        return true
      }
      case ':output':
      case ':kill':
        if (!arg) return this.say(`${name} needs a task id, e.g. ${name} bash-1`), true
        await this.call(name === ':output' ? 'bash_output' : 'bash_kill', { task_id: arg })
        return true
      case ':type':
        if (!arg) return this.say(':type needs a task id, e.g. :type bash-1'), true
        await this.typeReply(arg)
        return true
      default:
        this.say(`unknown REPL command ${name}; :help lists them`)
        return true
    }
  }

  private async call(name: string, args: Record<string, unknown>): Promise<void> {
    this.controller = new AbortController()
    this.busy = true
    let result: ToolResult
    try {
      result = await this.app.ctx.tools.execute({ callId: `repl-${++this.seq}`, name, arguments: args, agent: this.agent, signal: this.controller.signal })
    } finally {
      this.busy = false
      this.controller = undefined
    }
    if (this.json) this.print(JSON.stringify(result))
    else for (const block of result.content) this.print(block.text)
  }

  private tasks(): string {
    const bash = this.app.ctx.get('bash')
    const tasks = bash?.list() ?? []
    if (tasks.length === 0) return '(no background tasks)'
    return tasks
      .map((task) => {
        const status = task.status === 'completed' ? `completed, exit code ${task.exitCode}` : task.status === 'killed' ? `killed${task.signal ? ` by ${task.signal}` : ''}` : 'running'
        return `${task.id}  ${status}  ${task.command.split('\n')[0]}`
      })
      .join('\n')
  }

  /**
   * `:type ID`: one line read without echo goes to the task's terminal with Enter. The reply is
   * never printed, never stored, never part of a tool result. Ctrl-C while typing cancels.
   */
  private async typeReply(id: string): Promise<void> {
    const bash = this.app.ctx.get('bash')
    if (!bash) return this.say('no executor is loaded')
    const owner = bash.ownerOf(id)
    if (bash.get(id) && owner !== undefined && owner !== this.agent.session.header.id) return this.say(`task ${id} belongs to another session`)
    const task = bash.get(id)
    if (!task) return this.say(`unknown bash task ${JSON.stringify(id)}`)
    if (!task.interactive) return this.say(`task ${id} does not take input; start it with interactive: true`)
    this.out.write(`reply for ${id} (not shown): `)
    const line = await this.readSecret()
    this.out.write('\n')
    if (line === null) return this.say(`nothing was sent to ${id}`)
    try {
      await bash.write(id, `${line}\n`)
      this.say(`sent your reply to ${id} (not shown); :output ${id} reads what it printed`)
    } catch (error) {
      // The executor's message names the task and its status, never the data.
      this.say(`nothing was sent: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  /** The secretInput service: the model's `bash_input {ask_user}` reaches the person here. */
  private async askSecret(request: SecretInputRequest): Promise<SecretInputAnswer> {
    if (request.sessionId !== this.agent.session.header.id) return { outcome: 'unavailable' }
    // Nobody is asked without being told where the reply goes.
    if (typeof request.command !== 'string') return { outcome: 'unavailable' }
    this.out.write(secretQuestion(request))
    const line = await this.readSecret(request.signal)
    this.out.write('\n')
    if (line === null) return { outcome: 'cancelled' }
    if (line === '') return { outcome: 'declined' }
    return { outcome: 'typed', text: line }
  }

  /** One hidden line; Ctrl-C (through `abort`) or an abort of `signal` gives null. */
  private async readSecret(signal?: AbortSignal): Promise<string | null> {
    const controller = this.controller ?? new AbortController()
    const stop = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal
    const own = this.controller === undefined
    if (own) {
      this.controller = controller
      this.busy = true
    }
    try {
      return await readHiddenLine(this.reader, this.rl, this.lineOutput, stop)
    } finally {
      if (own) {
        this.controller = undefined
        this.busy = false
      }
    }
  }

  private approve(request: ApprovalRequest): Promise<ApprovalDecision> {
    return askApproval(request, () => this.reader.next(), this.out)
  }

  /** Prints REPL messages (not model text). */
  private say(text: string): void {
    this.print(text)
  }

  /** Prints text on its own line(s). */
  private print(text: string): void {
    this.out.write(text.endsWith('\n') ? text : `${text}\n`)
  }

  /** Prints an asynchronous notice, keeping an interactive prompt and what was typed intact. */
  private notice(text: string): void {
    if (!(this.tty && this.atPrompt)) return this.print(text)
    this.out.write('\r\x1b[K')
    this.print(text)
    this.rl.prompt(true)
  }
}
