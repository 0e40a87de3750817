import type { Readable, Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { AGENT_PROTOCOL_VERSION, AGENT_PROCESS_NAME } from './binary.js'
import type { AgentErrors } from './errors.js'
import { encodeFrame, FrameReader } from './frames.js'

/**
 * The byte streams of one running agent, whatever carries them: a hijacked Docker Engine exec, a
 * Kubernetes `pods/exec` WebSocket, an SSH exec channel, a local pipe. The protocol runs over
 * `stdin`/`stdout`; `stderr` only ever carries the agent's own complaints.
 */
export interface AgentStream {
  /** To the agent's stdin. Never ended by the session except when it is torn down. */
  readonly stdin: Writable
  /** The agent's stdout: protocol frames only (after a preamble, where the transport allows one). */
  readonly stdout: Readable
  /** The agent's stderr: diagnostics, kept (the last 4 KiB) for error messages. */
  readonly stderr: Readable
  /** Resolves once the transport is closed (by either side). Never rejects. */
  readonly closed: Promise<void>
  /** Closes the transport at once. Closing the agent's stdin is its lifeline: it kills its commands and exits. */
  destroy(): void
}

/** Receives the agent's frames for one command. */
export interface CommandSink {
  onFrame(op: string, payload: Buffer): void
  /** The session (or its agent) is gone: nothing more will come. */
  onLost(reason: string): void
}

/** What the agent said of itself in its hello frame. */
export interface AgentHello {
  version: number
  /** The SHA-256 of the sources it was built from. */
  sourceSha256: string
  /** Optional abilities it announced (`cgroup`: each command gets a cgroup of its own). */
  features: ReadonlySet<string>
}

const MAX_AGENT_STDERR = 4096

/**
 * One session of the agent, independent of the transport that runs it: it multiplexes commands
 * over the agent's stdin/stdout (docs/agent-protocol.md), routes answers to their command, and
 * tells every command when the session or its agent is gone. Transports (Docker containers,
 * Kubernetes pods, SSH connections) subclass it: they create what the agent runs in, call
 * `startAgent()` with its streams, and implement `destroyBackend()`.
 */
export abstract class AgentSession {
  private agent?: AgentStream
  private readonly sinks = new Map<string, CommandSink>()
  private seq = 0
  private lostReason?: string
  private agentStderr = ''
  private removing?: Promise<void>
  private helloWaiter?: { resolve: (hello: AgentHello) => void; reject: (error: Error) => void }
  /** The agent's hello, once it came. */
  hello?: AgentHello

  /** @param onGone called once when the session is lost or removed (the executor forgets it). */
  protected constructor(private readonly onGone?: (session: AgentSession) => void) {}

  /** A short name of the container/pod/host for messages. */
  abstract get shortId(): string

  /** How this transport words its failures. */
  abstract get errors(): AgentErrors

  /** The reason commands get when the session is gone under them. */
  protected abstract lostMessage(): string

  /** Deletes the container/pod, closes the connection; resolves once it is gone. Never rejects. */
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

  /**
   * Starts the protocol over the agent's streams; resolves at the agent's `hello`. `preambleBytes`:
   * how much output may come before the hello and is skipped (a login shell's greeting over SSH).
   */
  protected async startAgent(agent: AgentStream, preambleBytes = 0): Promise<AgentHello> {
    this.agent = agent
    agent.stderr.on('data', (chunk: Buffer) => {
      this.agentStderr = (this.agentStderr + chunk.toString('utf8')).slice(-MAX_AGENT_STDERR)
    })
    const hello = new Promise<AgentHello>((resolve, reject) => {
      this.helloWaiter = { resolve, reject }
    })
    if (this.lostReason) this.helloWaiter?.reject(this.errors.agentFailed(this.lostReason))
    const reader = new FrameReader(
      (op, id, payload) => this.onFrame(op, id, payload),
      (data) => this.protocolError(`unexpected output from the agent in ${this.shortId}: ${JSON.stringify(data.subarray(0, 100).toString('utf8'))}`),
      preambleBytes,
    )
    agent.stdout.on('data', (chunk: Buffer) => reader.push(chunk))
    // Lost once the transport is closed and every frame it delivered was read.
    void Promise.all([agent.closed, finished(agent.stdout).catch(() => undefined)]).then(() => {
      const why = this.agentStderr.trim()
      this.markLost(why ? `${this.lostMessage()}: ${why.split('\n').slice(-3).join(' ')}` : this.lostMessage())
    })
    return hello
  }

  /** True once the session or its agent is gone. */
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
   * The second channel for kills, when the transport has one (Kubernetes: a second exec running
   * the agent's `kill` mode): KILL to a command's process group and marked processes without the
   * serving agent. Used when the agent has not confirmed a kill `killFallbackMs` after the grace.
   * `pid` is the command's leader (its group id) and `start` its start time as the agent read it:
   * the group is matched only while that very process still holds the number. Never rejects.
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
    this.agent.stdin.write(encodeFrame(op, id, payload))
    return true
  }

  /** Kills and removes what the session runs in; resolves once it is gone. Never rejects. */
  remove(): Promise<void> {
    // Assigned before anything runs: markLost() below calls remove() again and must get this one.
    this.removing ??= Promise.resolve().then(async () => {
      this.markLost(this.lostMessage())
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

  /** The session is gone (or about to be): fails every command and the start. */
  protected markLost(reason: string): void {
    if (this.lostReason) return
    this.lostReason = reason
    this.helloWaiter?.reject(this.errors.agentFailed(this.agentStderr.trim() || reason))
    this.helloWaiter = undefined
    const sinks = [...this.sinks.values()]
    this.sinks.clear()
    for (const sink of sinks) sink.onLost(reason)
    this.onGone?.(this)
    // An agent that died leaves what it ran in (and whatever its commands left) running: remove it.
    void this.remove()
  }

  private onFrame(op: string, id: string, payload: Buffer): void {
    if (op === 'hello') return this.onHello(payload)
    if (op === 'error' && id === '0') return this.protocolError(`the agent in ${this.shortId} refused a frame: ${payload.toString('utf8')}`)
    this.sinks.get(id)?.onFrame(op, payload)
  }

  private onHello(payload: Buffer): void {
    const [name, version, sha, ...features] = payload.toString('latin1').split(' ')
    if (name !== AGENT_PROCESS_NAME || Number(version) !== AGENT_PROTOCOL_VERSION) {
      return this.protocolError(`the agent in ${this.shortId} speaks ${JSON.stringify(payload.toString('latin1').slice(0, 100))}, not ${AGENT_PROCESS_NAME} protocol ${AGENT_PROTOCOL_VERSION}`)
    }
    this.hello = { version: Number(version), sourceSha256: sha ?? '', features: new Set(features) }
    this.helloWaiter?.resolve(this.hello)
    this.helloWaiter = undefined
  }

  private protocolError(message: string): void {
    this.markLost(message)
  }
}
