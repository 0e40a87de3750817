import { constants } from 'node:os'
import { PassThrough } from 'node:stream'
import type { Logger } from 'cordis'
import { type BashExecSpec, TERMINAL_COLS, TERMINAL_ENV, TERMINAL_ROWS, type TerminalModes } from '@deepseek-ai/dsh-bash'
import { type ExitFacts, type LaunchedCommand, NON_INTERACTIVE_ENV, parseSttyModes } from '@deepseek-ai/dsh-bash-kit'
import { EmptyWait, type EmptyWaitOptions } from './empty-wait.js'
import { agentErrors } from './errors.js'
import type { AgentSession, CommandSink } from './session.js'

const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals).map(([name, number]) => [number, name]))

/** How a transport wants the wait for a command's processes done (see EmptyWait). */
export interface AgentWaitOptions extends EmptyWaitOptions {
  /** The executor plugin's logger: reports and silent waits are said there. */
  logger: Logger
  /** How log lines name the command, given its pid on the far side. */
  name(pid: number): string
}

export interface AgentLaunchOptions {
  /** Unique per command: every process it starts inherits it (DSH_BASH_TASK). */
  marker: string
  /** Reports and bounds for the wait (SSH); undefined: a plain wait for the agent's answer. */
  wait?: AgentWaitOptions
}

/** A command started through an agent: the kit's LaunchedCommand (with `terminalModes` for terminals). */
export type AgentLaunchedCommand = LaunchedCommand

/**
 * Starts one command through the session's agent (any transport). Resolves once the agent reports
 * the command's pid; rejects for infrastructure failures (workdir missing, session gone).
 */
export async function launchThroughAgent(session: AgentSession, spec: BashExecSpec, options: AgentLaunchOptions | string): Promise<AgentLaunchedCommand> {
  const { marker, wait } = typeof options === 'string' ? { marker: options, wait: undefined } : options
  if (spec.command.includes('\0')) throw agentErrors.nulInCommand()
  if (spec.workdir.includes('\0')) throw agentErrors.nulInWorkdir()
  const terminal = spec.interactive === true
  // A terminal gets a terminal's TERM and the pagers' secure modes (TERMINAL_ENV); the other
  // non-interactive defaults (no pager, no colour, no git prompt) stay: the model still reads text.
  const env: Record<string, string> = { ...NON_INTERACTIVE_ENV, ...(terminal ? TERMINAL_ENV : {}), ...(spec.env ?? {}) }
  for (const [name, value] of Object.entries(env)) if (value.includes('\0') || name.includes('\0')) throw agentErrors.nulInEnv(name)
  const pairs = Object.entries(env).map(([k, v]) => `${k}=${v}`)
  const hasStdin = !terminal && spec.stdin !== undefined
  const mode = terminal ? `pty,${TERMINAL_COLS},${TERMINAL_ROWS}` : hasStdin ? 'pipe' : 'none'
  const payload = [spec.workdir, marker, mode, String(pairs.length), ...pairs, spec.command].join('\0')
  const command = new AgentCommand(session, session.nextId(), spec.workdir, marker, terminal, wait)
  session.attach(command.id, command)
  session.send('run', command.id, Buffer.from(payload))
  if (hasStdin) {
    const bytes = typeof spec.stdin === 'string' ? Buffer.from(spec.stdin) : Buffer.from(spec.stdin as Uint8Array)
    // Frames of at most 1 MiB: the agent buffers them for the command's stdin pipe.
    for (let at = 0; at < bytes.length; at += 1 << 20) session.send('in', command.id, bytes.subarray(at, at + (1 << 20)))
    session.send('eof', command.id)
  }
  try {
    await command.started
  } catch (error) {
    command.release()
    throw error
  }
  return command
}

type Answer = 'count' | 'termed' | 'empty' | 'modes'

class AgentCommand implements AgentLaunchedCommand, CommandSink {
  readonly stdout = new PassThrough()
  readonly stderr = new PassThrough()
  readonly exited: Promise<ExitFacts>
  readonly started: Promise<void>
  private resolveExited!: (facts: ExitFacts) => void
  private resolveStarted!: () => void
  private rejectStarted!: (error: Error) => void
  private startSettled = false
  private lost?: string
  private released = false
  private termination?: Promise<void>
  /** True once the agent answered the termination. */
  private terminated = false
  private leftoversAtExit?: number
  private emptied?: Promise<void>
  private emptyWait?: EmptyWait
  private pid?: number
  /** The leader's start time on the far side (/proc/<pid>/stat), as the agent read it at the fork; undefined when it did not say. */
  private leaderStart?: number
  private readonly waiters = new Map<Answer, Array<(payload: string | undefined) => void>>()
  /** Who hears the agent's `still` reports (the waits under way). */
  private readonly noteListeners = new Set<(note: string) => void>()
  private stdoutEnded = false

  constructor(
    private readonly session: AgentSession,
    readonly id: string,
    private readonly workdir: string,
    private readonly marker: string,
    /** Runs in a pseudo-terminal of the agent: stdout is the raw terminal stream, stderr stays empty. */
    readonly terminal: boolean,
    private readonly waitOptions: AgentWaitOptions | undefined,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExited = resolve))
    this.started = new Promise((resolve, reject) => {
      this.resolveStarted = resolve
      this.rejectStarted = reject
    })
    this.started.catch(() => {})
    this.stdout.on('error', () => {})
    this.stderr.on('error', () => {})
    // The terminal merges stderr into its one stream: the agent never sends `err` frames for it.
    if (terminal) this.stderr.end()
    else {
      this.write = undefined
      this.resize = undefined
      this.terminalModes = undefined
    }
  }

  /**
   * Typed input (terminal only): frames of at most 64 KiB to the agent, which buffers what the
   * terminal does not take at once (a program that does not read never blocks the agent's loop).
   * Resolves once handed to the transport; rejects when the command or its session is gone.
   */
  write?: (data: Uint8Array) => Promise<void> = async (data) => {
    if (this.released || this.lost || this.stdoutEnded) throw this.session.errors.terminalClosed()
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    for (let at = 0; at < bytes.length; at += 1 << 16) {
      if (!this.session.send('in', this.id, bytes.subarray(at, at + (1 << 16)))) throw this.session.errors.terminalClosed()
    }
  }

  /** New terminal size (terminal only): the agent sets it on the master; the program gets SIGWINCH. */
  resize?: (cols: number, rows: number) => void = (cols, rows) => {
    if (this.released || this.lost) return
    this.session.send('size', this.id, `${Math.max(1, Math.floor(cols))} ${Math.max(1, Math.floor(rows))}`)
  }

  /**
   * The terminal's modes (terminal only): the agent reads them on the pty master (`modes` frame,
   * stty's words); undefined once the terminal is closed or the session gone.
   */
  terminalModes?: () => Promise<TerminalModes | undefined> = async () => {
    if (this.stdoutEnded) return undefined
    const answer = await this.control('modes', 'modes')
    return answer === undefined || answer === '' ? undefined : parseSttyModes(answer)
  }

  onFrame(op: string, payload: Buffer): void {
    switch (op) {
      case 'ok': {
        const [pid, start] = payload.toString('latin1').split(' ')
        this.pid = Number.parseInt(pid, 10) || undefined
        this.leaderStart = Number.parseInt(start ?? '', 10) || undefined
        this.startSettled = true
        this.resolveStarted()
        return
      }
      case 'fail':
        return this.failStart(payload.toString('utf8'))
      case 'out':
        this.stdout.write(payload)
        return
      case 'err':
        this.stderr.write(payload)
        return
      case 'eof1':
        this.stdoutEnded = true
        this.stdout.end()
        return
      case 'eof2':
        this.stderr.end()
        return
      case 'exit': {
        const [kind, value, leftovers] = payload.toString('latin1').split(' ')
        const number = Number(value)
        if (leftovers !== undefined && /^\d+$/.test(leftovers)) this.leftoversAtExit = Number(leftovers)
        if (kind === 's') this.resolveExited({ exitCode: null, signal: SIGNAL_NAMES.get(number) ?? `SIG${number}` })
        else this.resolveExited({ exitCode: number, signal: null })
        return
      }
      case 'still':
        for (const listener of this.noteListeners) listener(payload.toString('utf8'))
        return
      case 'count':
      case 'termed':
      case 'empty':
      case 'modes':
        this.waiters.get(op)?.shift()?.(payload.toString('latin1'))
        return
      default:
      // `error` for an op this agent does not know: the request it answered stays unanswered,
      // as it would with an agent that cannot do it.
    }
  }

  onLost(reason: string): void {
    if (this.lost) return
    this.lost = reason
    if (!this.startSettled) {
      this.startSettled = true
      this.rejectStarted(this.session.errors.lost(reason))
    }
    for (const queue of this.waiters.values()) for (const waiter of queue.splice(0)) waiter(undefined)
    this.stdout.end()
    this.stderr.end()
    this.resolveExited({ exitCode: null, signal: null })
  }

  private failStart(reason: string): void {
    if (this.startSettled) return
    this.startSettled = true
    const wd = this.workdir
    const errors = this.session.errors
    const error =
      reason === 'nowd'
        ? errors.workdirMissing(wd)
        : reason === 'notdir'
          ? errors.workdirNotDir(wd)
          : reason === 'noaccess'
            ? errors.workdirNoAccess(wd)
            : errors.spawn(reason.replace(/^spawn:/, ''))
    this.rejectStarted(error)
    this.resolveExited({ exitCode: null, signal: null })
  }

  lostReason(): string | undefined {
    return this.lost
  }

  /** One request; resolves with the answer's payload, or undefined when the session is gone. */
  private control(op: 'count' | 'term' | 'wait' | 'modes', answer: Answer, payload = ''): Promise<string | undefined> {
    if (this.lost || this.released) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const queue = this.waiters.get(answer) ?? []
      queue.push(resolve)
      this.waiters.set(answer, queue)
      if (!this.session.send(op, this.id, payload)) {
        queue.splice(queue.indexOf(resolve), 1)
        resolve(undefined)
      }
    })
  }

  async countLeftovers(): Promise<number> {
    // Counted by the agent when it reaped the main process: saves a round trip.
    if (this.leftoversAtExit !== undefined) return this.leftoversAtExit
    const answer = await this.control('count', 'count')
    const count = answer === undefined ? 0 : Number.parseInt(answer, 10)
    return Number.isFinite(count) ? count : 0
  }

  terminate(graceMs: number): Promise<void> {
    this.termination ??= this.terminateWithFallback(graceMs).then(() => {
      this.terminated = true
      this.emptyWait?.stopped()
    })
    return this.termination
  }

  /**
   * TERM then freeze-then-KILL through the agent; where the transport has a second channel and the
   * agent has not confirmed in time (stuck on a transport nobody reads), KILL through that channel.
   */
  private async terminateWithFallback(graceMs: number): Promise<void> {
    const viaAgent = this.control('term', 'termed', String(graceMs)).then(() => true)
    const fallback = this.session.killFallback
    if (!fallback) return void (await viaAgent)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), graceMs + this.session.killFallbackMs)))
    const confirmed = await Promise.race([viaAgent, late])
    clearTimeout(timer)
    if (!confirmed && !this.lost) await fallback.call(this.session, this.marker, this.pid, this.leaderStart)
  }

  whenEmpty(): Promise<void> {
    if (this.emptied) return this.emptied
    const options = this.waitOptions
    if (!options) {
      this.emptied = this.control('wait', 'empty').then(() => undefined)
      return this.emptied
    }
    const command = this
    this.emptyWait = new EmptyWait(
      {
        get name() {
          return options.name(command.pid ?? 0)
        },
        logger: options.logger,
        request: (reportMs, onNote) => {
          this.noteListeners.add(onNote)
          return this.control('wait', 'empty', String(reportMs)).finally(() => this.noteListeners.delete(onNote))
        },
      },
      options,
    )
    if (this.terminated) this.emptyWait.stopped()
    this.emptied = this.emptyWait.done
    return this.emptied
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.emptyWait?.dispose()
    this.session.send('forget', this.id)
    this.session.detach(this.id)
    for (const queue of this.waiters.values()) for (const waiter of queue.splice(0)) waiter(undefined)
  }
}
