import { constants } from 'node:os'
import { PassThrough } from 'node:stream'
import { type BashExecSpec, TERMINAL_COLS, TERMINAL_ENV, TERMINAL_ROWS, type TerminalModes } from '@deepseek-ai/dsh-bash'
import { type ExitFacts, type LaunchedCommand, NON_INTERACTIVE_ENV, parseSttyModes } from '@deepseek-ai/dsh-bash-kit'
import { containerErrors } from './errors.js'
import type { AgentSession, CommandSink } from './agent-session.js'

const SIGNAL_NAMES = new Map<number, string>(Object.entries(constants.signals).map(([name, number]) => [number, name]))

/**
 * Starts one command through the session's agent (any backend). Resolves once the agent reports the command's
 * pid; rejects for infrastructure failures (workdir missing, container gone).
 */
export async function launchThroughAgent(session: AgentSession, spec: BashExecSpec, marker: string): Promise<LaunchedCommand> {
  if (spec.command.includes('\0')) throw containerErrors.nulInCommand()
  if (spec.workdir.includes('\0')) throw containerErrors.nulInWorkdir()
  const terminal = spec.interactive === true
  // A terminal gets a terminal's TERM and the pagers' secure modes (TERMINAL_ENV); the other
  // non-interactive defaults (no pager, no colour, no git prompt) stay: the model still reads text.
  const env: Record<string, string> = { ...NON_INTERACTIVE_ENV, ...(terminal ? TERMINAL_ENV : {}), ...(spec.env ?? {}) }
  for (const [name, value] of Object.entries(env)) if (value.includes('\0')) throw containerErrors.nulInEnv(name)
  const pairs = Object.entries(env).map(([k, v]) => `${k}=${v}`)
  const hasStdin = !terminal && spec.stdin !== undefined
  const mode = terminal ? `pty,${TERMINAL_COLS},${TERMINAL_ROWS}` : hasStdin ? 'pipe' : 'none'
  const payload = [spec.workdir, marker, mode, String(pairs.length), ...pairs, spec.command].join('\0')
  const command = new AgentCommand(session, session.nextId(), spec.workdir, marker, terminal)
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

class AgentCommand implements LaunchedCommand, CommandSink {
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
  private leftoversAtExit?: number
  private emptied?: Promise<void>
  private pid?: number
  /** The leader's start time in the container (/proc/<pid>/stat), as the agent read it at the fork; undefined when it did not say. */
  private leaderStart?: number
  private readonly waiters = new Map<string, Array<(payload: string | undefined) => void>>()

  constructor(
    private readonly session: AgentSession,
    readonly id: string,
    private readonly workdir: string,
    private readonly marker: string,
    /** Runs in a pseudo-terminal of the agent: stdout is the raw terminal stream, stderr stays empty. */
    readonly terminal: boolean,
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
   * Resolves once handed to the engine stream; rejects when the command or its container is gone.
   */
  write?: (data: Uint8Array) => Promise<void> = async (data) => {
    if (this.released || this.lost || this.stdoutEnded) throw containerErrors.terminalClosed()
    const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    for (let at = 0; at < bytes.length; at += 1 << 16) {
      if (!this.session.send('in', this.id, bytes.subarray(at, at + (1 << 16)))) throw containerErrors.terminalClosed()
    }
  }

  /** New terminal size (terminal only): the agent sets it on the master; the program gets SIGWINCH. */
  resize?: (cols: number, rows: number) => void = (cols, rows) => {
    if (this.released || this.lost) return
    this.session.send('size', this.id, `${Math.max(1, Math.floor(cols))} ${Math.max(1, Math.floor(rows))}`)
  }

  /** The terminal's modes (terminal only), read by the agent on the pty master (`modes` frame). */
  terminalModes?: () => Promise<TerminalModes | undefined> = async () => {
    if (this.stdoutEnded) return undefined
    const answer = await this.control('modes', 'modes')
    return answer === undefined ? undefined : parseSttyModes(answer)
  }

  private stdoutEnded = false

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
      default: {
        // Answers to control requests: count, termed, empty, modes.
        const queue = this.waiters.get(op)
        const next = queue?.shift()
        next?.(payload.toString('latin1'))
      }
    }
  }

  onLost(reason: string): void {
    if (this.lost) return
    this.lost = reason
    if (!this.startSettled) {
      this.startSettled = true
      this.rejectStarted(containerErrors.lost(reason))
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
    const error =
      reason === 'nowd'
        ? containerErrors.workdirMissing(wd)
        : reason === 'notdir'
          ? containerErrors.workdirNotDir(wd)
          : reason === 'noaccess'
            ? containerErrors.workdirNoAccess(wd)
            : containerErrors.spawn(reason.replace(/^spawn:/, ''))
    this.rejectStarted(error)
    this.resolveExited({ exitCode: null, signal: null })
  }

  lostReason(): string | undefined {
    return this.lost
  }

  /** One control request; resolves with the answer, or undefined when the container is gone. */
  private control(op: 'count' | 'term' | 'wait' | 'modes', answer: string, payload = ''): Promise<string | undefined> {
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
    // Counted by the agent when it reaped the main process: saves a round trip through the engine.
    if (this.leftoversAtExit !== undefined) return this.leftoversAtExit
    const answer = await this.control('count', 'count')
    const count = answer === undefined ? 0 : Number.parseInt(answer, 10)
    return Number.isFinite(count) ? count : 0
  }

  terminate(graceMs: number): Promise<void> {
    this.termination ??= this.terminateWithFallback(graceMs)
    return this.termination
  }

  /**
   * TERM then KILL through the agent; where the backend has a second channel and the agent has not
   * confirmed in time (stuck on a transport nobody reads), KILL through that channel instead.
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
    this.emptied ??= this.control('wait', 'empty').then(() => undefined)
    return this.emptied
  }

  release(): void {
    if (this.released) return
    this.released = true
    this.session.send('forget', this.id)
    this.session.detach(this.id)
    for (const queue of this.waiters.values()) for (const waiter of queue.splice(0)) waiter(undefined)
  }
}
