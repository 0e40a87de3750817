import type { Logger } from 'cordis'
import { AgentSession } from './agent-session.js'
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

/**
 * One session's container: created from the image with no pull, held alive by the lifeline (an
 * attached stdin of PID 1), running one agent through one attached exec. The agent protocol itself
 * is the backend-neutral `AgentSession`'s.
 */
export class ContainerSession extends AgentSession {
  /** The container id (set once created). */
  id = ''
  private lifeline?: EngineStream

  private constructor(
    private readonly engine: EngineClient,
    readonly name: string,
    onGone: (session: AgentSession) => void,
    private readonly logger: Logger,
  ) {
    super(onGone)
  }

  /**
   * Creates the container, attaches the lifeline, starts it and starts the agent. On any failure
   * whatever was created is removed before the error is thrown.
   */
  static async create(
    engine: EngineClient,
    name: string,
    spec: ContainerSpec,
    onGone: (session: AgentSession) => void,
    /** The executor plugin's logger: a container that could not be removed is said there. */
    logger: Logger,
  ): Promise<ContainerSession> {
    const session = new ContainerSession(engine, name, onGone, logger)
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
    await this.startAgent(await this.engine.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false }))
  }

  get shortId(): string {
    return this.id ? this.id.slice(0, 12) : this.name
  }

  protected async destroyBackend(): Promise<void> {
    if (this.id) {
      try {
        await this.engine.request('DELETE', `/containers/${this.id}?force=1&v=1`)
      } catch (error) {
        // 404: gone already; 409: AutoRemove is removing it (the lifeline closed first).
        if (!(error instanceof EngineError && (error.status === 404 || error.status === 409))) {
          this.logger.error(`removing container ${this.shortId} failed: ${messageOf(error)}`)
        }
      }
      await waitUntilGone(this.engine, this.id)
    }
    this.lifeline?.destroy()
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

