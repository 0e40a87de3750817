import { posix } from 'node:path'
import type { Logger } from 'cordis'
import { type AgentBinary, type AgentErrors, AgentSession, containerAgentPath } from '@deepseek-ai/dsh-bash-agent'
import { messageOf } from '@deepseek-ai/dsh-bash'
import { EngineError, type EngineClient, type EngineStream } from './engine.js'
import { containerErrors, lostMessage } from './errors.js'
import { workspaceArchive } from './workspace-archive.js'

/** What one container is created with (the executor computes it from its config). */
export interface ContainerSpec {
  image: string
  /**
   * Host directory → path in the container; undefined: no workspace. `bind` mounts it (`readOnly`
   * applies); `copy` copies its content in before the agent starts (at most `copyMaxBytes` of file
   * content; owned by the container user), and the container's copy is never written back.
   */
  workspace?: { hostPath: string; mountPath: string; readOnly: boolean; mode: 'bind' | 'copy'; copyMaxBytes: number }
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
  /** The agent build that `image` carries (see agentImage): its path is the entrypoint. */
  agent: AgentBinary
}

/**
 * One session's container: created with no pull from the image plus the agent's layer (see
 * agentImage), held alive by the lifeline (PID 1 is the agent in `init` mode, its stdin attached
 * by the server), running one serving agent through one attached exec. The protocol itself is
 * the transport-neutral `AgentSession`'s (@deepseek-ai/dsh-bash-agent).
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
    await session.bootWithin(spec.startTimeoutMs, () => containerErrors.createFailed(`not ready after ${spec.startTimeoutMs} ms`), () => session.boot(spec))
    return session
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
    if (spec.workspace?.mode === 'bind') {
      const { hostPath, mountPath, readOnly } = spec.workspace
      hostConfig.Binds = [`${hostPath}:${mountPath}${readOnly ? ':ro' : ''}`]
    }
    const agentPath = containerAgentPath(spec.agent)
    const body: Record<string, unknown> = {
      Image: spec.image,
      // PID 1: the agent's lifeline (native/lifeline.c).
      Entrypoint: [agentPath, 'init'],
      Cmd: [],
      // A copied workspace is made by the archive (a missing mountPath would be created root-owned here).
      WorkingDir: spec.workspace?.mode === 'bind' ? spec.workspace.mountPath : '/',
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
    await this.stopIfRemoved()
    // The lifeline is attached before the start: from its first instant the container lives only
    // as long as this connection.
    this.lifeline = await this.engine.hijack(`/containers/${this.id}/attach?stream=1&stdin=1&stdout=0&stderr=0`)
    void this.lifeline.closed.then(() => this.markLost(lostMessage(this.shortId)))
    try {
      await this.engine.request('POST', `/containers/${this.id}/start`)
    } catch (error) {
      throw containerErrors.createFailed(messageOf(error))
    }
    await this.stopIfRemoved()
    if (spec.workspace?.mode === 'copy') await this.copyWorkspace(spec.workspace.hostPath, spec.workspace.mountPath, spec.workspace.copyMaxBytes, spec.user)
    const exec = await this.engine.request<{ Id: string }>('POST', `/containers/${this.id}/exec`, {
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      Cmd: [agentPath, 'serve', spec.shell, ...spec.secretPatterns],
      ...(spec.user ? { User: spec.user } : {}),
    })
    await this.startAgent(await this.engine.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false }))
  }

  /**
   * The start deadline passed (or the session was removed) while a step of `boot` was under way:
   * `remove()` found nothing to delete yet, so what this step created is deleted here, and `boot`
   * stops (nobody awaits it any more).
   */
  private async stopIfRemoved(): Promise<void> {
    if (!this.lost) return
    await this.destroyBackend()
    throw containerErrors.createFailed('removed while starting')
  }

  /**
   * Copies the workspace's content to `mountPath`: one tar stream (see workspace-archive.ts) put at
   * `/` with every entry under `mountPath`, so the directory itself and its content get the
   * container user as owner, and missing parents are created root-owned by the engine.
   */
  private async copyWorkspace(hostPath: string, mountPath: string, maxBytes: number, user: string | undefined): Promise<void> {
    const owner = await this.numericUser(user)
    let archive
    try {
      archive = await workspaceArchive({ hostPath, prefix: posix.normalize(mountPath).replace(/^\/+|\/+$/g, ''), owner, maxBytes })
    } catch (error) {
      throw containerErrors.workspaceCopy(messageOf(error))
    }
    try {
      await this.engine.putArchive(this.id, '/', archive.stream)
    } catch (error) {
      // tar's own failure (if any) explains an engine that saw a cut stream.
      const tarFailure = archive.failure
      archive.abort()
      throw containerErrors.workspaceCopy(tarFailure ? messageOf(tarFailure) : `${mountPath}: ${messageOf(error)}`)
    }
    await archive.done.catch((error: unknown) => {
      throw containerErrors.workspaceCopy(messageOf(error))
    })
  }

  /** `uid:gid` of the container user: parsed when numeric, else asked of the container (`id`). */
  private async numericUser(user: string | undefined): Promise<{ uid: number; gid: number }> {
    const numeric = user === undefined ? undefined : /^(\d+):(\d+)$/.exec(user)
    if (numeric) return { uid: Number(numeric[1]), gid: Number(numeric[2]) }
    const exec = await this.engine.request<{ Id: string }>('POST', `/containers/${this.id}/exec`, {
      AttachStdout: true,
      AttachStderr: true,
      Cmd: ['sh', '-c', 'id -u; id -g'],
      ...(user ? { User: user } : {}),
    })
    const stream = await this.engine.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false })
    stream.stdin.end()
    let out = ''
    stream.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')))
    stream.stderr.resume()
    await stream.closed
    const ids = /^(\d+)\n(\d+)\n$/.exec(out)
    if (!ids) throw containerErrors.workspaceCopy(`cannot tell the numeric ids of the container user ${JSON.stringify(user ?? '')}: ${JSON.stringify(out.slice(0, 200))}`)
    return { uid: Number(ids[1]), gid: Number(ids[2]) }
  }

  get shortId(): string {
    return this.id ? this.id.slice(0, 12) : this.name
  }

  get errors(): AgentErrors {
    return containerErrors
  }

  protected lostMessage(): string {
    return lostMessage(this.shortId)
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

