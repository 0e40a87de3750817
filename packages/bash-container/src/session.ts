import { messageOf } from '@deepseek-ai/dsh-bash'

import { AGENT_SCRIPT, LIFELINE_SCRIPT } from './scripts.js'
import { EngineError, type EngineClient, type EngineStream } from './engine.js'
import { containerErrors, lostMessage } from './errors.js'

/** What one container is created with (the executor computes it from its config). */
export interface ContainerSpec {
  image: string
  /** Host directory → mount path; undefined: no workspace mount. */
  workspace?: { hostPath: string; mountPath: string; readOnly: boolean }
  network: string
  memoryBytes: number
  pidsLimit: number
  cpus: number
  user?: string
  env: Record<string, string>
  labels: Record<string, string>
  shell: string
  secretPatterns: readonly string[]
  startTimeoutMs: number
}

/** Receives the agent's frames for one command. */
export interface CommandSink {
  onFrame(op: string, payload: Buffer): void
  /** The container (or its agent) is gone: nothing more will come. */
  onLost(reason: string): void
}

const MAX_AGENT_STDERR = 4096

/**
 * One session's container: created from the image with no pull, held alive by the lifeline (an
 * attached stdin of PID 1), running one agent through one attached exec. Commands are multiplexed
 * over the agent's stdin/stdout (see scripts.ts for the protocol).
 */
export class ContainerSession {
  /** The container id (set once created). */
  id = ''
  private lifeline?: EngineStream
  private agent?: EngineStream
  private readonly sinks = new Map<string, CommandSink>()
  private seq = 0
  private lostReason?: string
  private agentStderr = ''
  private removing?: Promise<void>
  private onGone?: () => void

  private constructor(
    private readonly engine: EngineClient,
    readonly name: string,
  ) {}

  /**
   * Creates the container, attaches the lifeline, starts it and starts the agent. On any failure
   * whatever was created is removed before the error is thrown.
   */
  static async create(engine: EngineClient, name: string, spec: ContainerSpec, onGone: () => void): Promise<ContainerSession> {
    const session = new ContainerSession(engine, name)
    session.onGone = onGone
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(containerErrors.createFailed(`not ready after ${spec.startTimeoutMs} ms`)), spec.startTimeoutMs)
      timer.unref?.()
    })
    try {
      await Promise.race([session.boot(spec), timeout])
      return session
    } catch (error) {
      await session.remove()
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  private async boot(spec: ContainerSpec): Promise<void> {
    const hostConfig: Record<string, unknown> = {
      AutoRemove: true,
      NetworkMode: spec.network,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Init: false,
    }
    if (spec.memoryBytes > 0) Object.assign(hostConfig, { Memory: spec.memoryBytes, MemorySwap: spec.memoryBytes })
    if (spec.pidsLimit > 0) hostConfig.PidsLimit = spec.pidsLimit
    if (spec.cpus > 0) hostConfig.NanoCpus = Math.round(spec.cpus * 1e9)
    if (spec.workspace) {
      const { hostPath, mountPath, readOnly } = spec.workspace
      hostConfig.Binds = [`${hostPath}:${mountPath}${readOnly ? ':ro' : ''}`]
    }
    const body: Record<string, unknown> = {
      Image: spec.image,
      Entrypoint: ['perl', '-e', LIFELINE_SCRIPT],
      Cmd: [],
      WorkingDir: spec.workspace?.mountPath ?? '/',
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      Labels: spec.labels,
      AttachStdin: true,
      AttachStdout: false,
      AttachStderr: false,
      OpenStdin: true,
      StdinOnce: true,
      Tty: false,
      NetworkDisabled: spec.network === 'none',
      HostConfig: hostConfig,
    }
    if (spec.user) body.User = spec.user
    let created: { Id: string }
    try {
      created = await this.engine.request<{ Id: string }>('POST', `/containers/create?name=${encodeURIComponent(this.name)}`, body)
    } catch (error) {
      if (error instanceof EngineError && error.status === 404) throw containerErrors.noImage(spec.image)
      throw containerErrors.createFailed(messageOf(error))
    }
    this.id = created.Id
    // The lifeline is attached before the start: from its first instant the container lives only
    // as long as this connection.
    this.lifeline = await this.engine.hijack(`/containers/${this.id}/attach?stream=1&stdin=1&stdout=0&stderr=0`)
    this.lifeline.closed.then(() => this.markLost(lostMessage(this.shortId)))
    try {
      await this.engine.request('POST', `/containers/${this.id}/start`)
    } catch (error) {
      throw containerErrors.createFailed(messageOf(error))
    }
    const exec = await this.engine.request<{ Id: string }>('POST', `/containers/${this.id}/exec`, {
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Cmd: ['perl', '-e', AGENT_SCRIPT, spec.shell, ...spec.secretPatterns],
      ...(spec.user ? { User: spec.user } : {}),
    })
    const agent = await this.engine.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false })
    this.agent = agent
    agent.stderr.on('data', (chunk: Buffer) => {
      this.agentStderr = (this.agentStderr + chunk.toString('utf8')).slice(-MAX_AGENT_STDERR)
    })
    const hello = new Promise<void>((resolve, reject) => {
      this.helloWaiter = { resolve, reject }
    })
    this.readFrames(agent)
    agent.closed.then(() => {
      const why = this.agentStderr.trim()
      this.markLost(why ? `${lostMessage(this.shortId)}: ${why.split('\n').slice(-3).join(' ')}` : lostMessage(this.shortId))
    })
    await hello
  }

  private helloWaiter?: { resolve: () => void; reject: (error: Error) => void }

  get shortId(): string {
    return this.id ? this.id.slice(0, 12) : this.name
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

  /** Kills and removes the container; resolves once the engine no longer has it. Never rejects. */
  remove(): Promise<void> {
    this.removing ??= (async () => {
      this.markLost(lostMessage(this.shortId))
      if (this.id) {
        try {
          await this.engine.request('DELETE', `/containers/${this.id}?force=1&v=1`)
        } catch (error) {
          // 404: gone already; 409: AutoRemove is removing it (the lifeline closed first).
          if (!(error instanceof EngineError && (error.status === 404 || error.status === 409))) {
            console.error(`[dsh-bash-container] removing container ${this.shortId} failed: ${messageOf(error)}`)
          }
        }
        await waitUntilGone(this.engine, this.id)
      }
      this.lifeline?.destroy()
      this.agent?.destroy()
    })()
    return this.removing
  }

  private markLost(reason: string): void {
    if (this.lostReason) return
    this.lostReason = reason
    this.helloWaiter?.reject(containerErrors.agentFailed(this.agentStderr.trim() || reason))
    this.helloWaiter = undefined
    const sinks = [...this.sinks.values()]
    this.sinks.clear()
    for (const sink of sinks) sink.onLost(reason)
    this.onGone?.()
    // An agent that died leaves the container (and whatever its commands left) running: remove it.
    void this.remove()
  }

  /** Parses `<op> <id> <len>\n<payload>` frames from the agent's stdout. */
  private readFrames(agent: EngineStream): void {
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
    this.markLost(`unexpected output from the agent in container ${this.shortId}: ${JSON.stringify(data.subarray(0, 100).toString('utf8'))}`)
    void this.remove()
  }
}

async function waitUntilGone(engine: EngineClient, id: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await engine.request('GET', `/containers/${id}/json`)
    } catch (error) {
      if (error instanceof EngineError && error.status === 404) return
      if (!(error instanceof EngineError)) return
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

