import type { Readable, Writable } from 'node:stream'
import { containerErrors, lostMessage } from './errors.js'

/**
 * The byte streams of one running in-container agent (scripts.ts), whatever carries them: a
 * hijacked Docker Engine exec, a Kubernetes `pods/exec` WebSocket, … The agent protocol runs over
 * `stdin`/`stdout`; `stderr` only ever carries the agent's own complaints.
 */
export interface AgentStream {
  /** To the agent's stdin. Never ended by the session except when it is torn down. */
  readonly stdin: Writable
  /** The agent's stdout: protocol frames only. */
  readonly stdout: Readable
  /** The agent's stderr: diagnostics, kept (the last 4 KiB) for error messages. */
  readonly stderr: Readable
  /** Resolves once the transport is closed (by either side). Never rejects. */
  readonly closed: Promise<void>
  /** Closes the transport at once (does not by itself stop anything in the container). */
  destroy(): void
}

/** Receives the agent's frames for one command. */
export interface CommandSink {
  onFrame(op: string, payload: Buffer): void
  /** The container (or its agent) is gone: nothing more will come. */
  onLost(reason: string): void
}

const MAX_AGENT_STDERR = 4096

/**
 * One session of the in-container agent, independent of the backend that runs the container: it
 * multiplexes commands over the agent's stdin/stdout (frames, see scripts.ts), routes answers to
 * their command, and tells every command when the container or the agent is gone. Backends
 * (Docker containers, Kubernetes pods) subclass it: they create what the agent runs in, call
 * `startAgent()` with its streams, and implement `destroyBackend()`.
 */
export abstract class AgentSession {
  private agent?: AgentStream
  private readonly sinks = new Map<string, CommandSink>()
  private seq = 0
  private lostReason?: string
  private agentStderr = ''
  private removing?: Promise<void>
  private helloWaiter?: { resolve: () => void; reject: (error: Error) => void }

  /** @param onGone called once when the session is lost or removed (the executor forgets it). */
  protected constructor(private readonly onGone?: (session: AgentSession) => void) {}

  /** A short name of the container/pod for messages. */
  abstract get shortId(): string

  /** Deletes the container/pod; resolves once it is gone. Never rejects. */
  protected abstract destroyBackend(): Promise<void>

  /**
   * Runs `boot` (create the container or pod, start the agent) under the start deadline, for every
   * backend alike: when `boot` fails, or the deadline passes first (`timeoutError()`), whatever was
   * created is removed before the error is thrown. `boot` may poll `cancelled()` — true once the
   * deadline has passed — to stop waiting early (it is not awaited after the deadline).
   */
  protected async bootWithin(timeoutMs: number, timeoutError: () => Error, boot: (cancelled: () => boolean) => Promise<void>): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    let timedOut = false
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true
        reject(timeoutError())
      }, timeoutMs)
      timer.unref?.()
    })
    try {
      await Promise.race([boot(() => timedOut), timeout])
    } catch (error) {
      await this.remove()
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  /** Starts the protocol over the agent's streams; resolves at the agent's `hello`. */
  protected async startAgent(agent: AgentStream): Promise<void> {
    this.agent = agent
    agent.stderr.on('data', (chunk: Buffer) => {
      this.agentStderr = (this.agentStderr + chunk.toString('utf8')).slice(-MAX_AGENT_STDERR)
    })
    const hello = new Promise<void>((resolve, reject) => {
      this.helloWaiter = { resolve, reject }
    })
    if (this.lostReason) this.helloWaiter?.reject(containerErrors.agentFailed(this.lostReason))
    this.readFrames(agent)
    agent.closed.then(() => {
      const why = this.agentStderr.trim()
      this.markLost(why ? `${lostMessage(this.shortId)}: ${why.split('\n').slice(-3).join(' ')}` : lostMessage(this.shortId))
    })
    await hello
  }

  /** True once the container or its agent is gone. */
  get lost(): boolean {
    return this.lostReason !== undefined
  }

  /** A fresh command id of this session. */
  nextId(): string {
    return String(++this.seq)
  }

  attach(id: string, sink: CommandSink): void {
    if (this.lostReason) {
      sink.onLost(this.lostReason)
      return
    }
    this.sinks.set(id, sink)
    this.onBusy?.()
  }

  detach(id: string): void {
    if (this.sinks.delete(id) && this.sinks.size === 0 && !this.lostReason) this.onIdle?.()
  }

  /** Commands of this session not yet released (running, or finished and still draining). */
  get activeCommands(): number {
    return this.sinks.size
  }

  /**
   * The second channel for kills, when the backend has one (Kubernetes: a second exec): KILL to a
   * command's process group and marked processes without the agent. Used when the agent has not
   * confirmed a kill `killFallbackMs` after the grace. `pid` is the command's leader (its group id)
   * and `start` its start time as the agent read it: the group is matched only while that very
   * process still holds the number (see KILL_SCRIPT). Never rejects.
   */
  killFallback?(marker: string, pid: number | undefined, start: number | undefined): Promise<void>
  /** See `killFallback`; ms past the grace. */
  killFallbackMs = 5_000

  /** Called when the session's last command is released (the executor starts its idle timer). */
  onIdle?: () => void
  /** Called when a command starts. */
  onBusy?: () => void

  /** Sends one frame to the agent; false when the agent is gone. */
  send(op: string, id: string, payload: Buffer | string = ''): boolean {
    if (this.lostReason || !this.agent) return false
    const data = typeof payload === 'string' ? Buffer.from(payload) : payload
    this.agent.stdin.write(Buffer.concat([Buffer.from(`${op} ${id} ${data.length}\n`), data]))
    return true
  }

  /** Kills and removes the container/pod; resolves once it is gone. Never rejects. */
  remove(): Promise<void> {
    // Assigned before anything runs: markLost() below calls remove() again and must get this one.
    this.removing ??= Promise.resolve().then(async () => {
      this.markLost(lostMessage(this.shortId))
      try {
        await this.destroyBackend()
      } catch {
        // destroyBackend never rejects by contract; a bug there must not leave disposal hanging.
      } finally {
        this.agent?.destroy()
      }
    })
    return this.removing
  }

  /** The container/pod is gone (or about to be): fails every command and the start. */
  protected markLost(reason: string): void {
    if (this.lostReason) return
    this.lostReason = reason
    this.helloWaiter?.reject(containerErrors.agentFailed(this.agentStderr.trim() || reason))
    this.helloWaiter = undefined
    const sinks = [...this.sinks.values()]
    this.sinks.clear()
    for (const sink of sinks) sink.onLost(reason)
    this.onGone?.(this)
    // An agent that died leaves the container (and whatever its commands left) running: remove it.
    void this.remove()
  }

  /** Parses `<op> <id> <len>\n<payload>` frames from the agent's stdout. */
  private readFrames(agent: AgentStream): void {
    let pending: Buffer = Buffer.alloc(0)
    agent.stdout.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      for (;;) {
        const newline = pending.indexOf(0x0a)
        if (newline < 0) {
          if (pending.length > 256) this.protocolError(pending)
          return
        }
        const [op, id, lenText] = pending.subarray(0, newline).toString('latin1').split(' ')
        const length = Number(lenText)
        if (!op || id === undefined || !Number.isInteger(length) || length < 0) return this.protocolError(pending)
        if (pending.length < newline + 1 + length) return
        const payload = pending.subarray(newline + 1, newline + 1 + length)
        pending = pending.subarray(newline + 1 + length)
        if (op === 'hello') {
          this.helloWaiter?.resolve()
          this.helloWaiter = undefined
          continue
        }
        this.sinks.get(id)?.onFrame(op, payload)
      }
    })
  }

  private protocolError(data: Buffer): void {
    this.markLost(`unexpected output from the agent in ${this.shortId}: ${JSON.stringify(data.subarray(0, 100).toString('utf8'))}`)
  }
}
