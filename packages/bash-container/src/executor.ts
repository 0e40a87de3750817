import { randomBytes } from 'node:crypto'
import { statSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import type { AgentSession } from '@deepseek-ai/dsh-bash-agent'
import { type AgentImage, agentImage } from './agent-image.js'
import { type ContainerExecutorConfig, type ContainerExecutorConfigInput, parseContainerConfig } from './config.js'
import { hasCode, messageOf } from '@deepseek-ai/dsh-bash'
import { CONTAINER_ERROR, containerErrors } from './errors.js'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { EngineClient, engineTlsFromEnv, engineUrlFromEnv, loadEngineTls } from './engine.js'
import { AgentSessionExecutor } from './session-executor.js'
import { type ContainerSpec, ContainerSession } from './session.js'
import { LABEL_EXECUTOR, LABEL_SERVER, serverIdentity, sweepDeadServers } from './sweep.js'

/**
 * Runs every command in a container of its session (owner): created on the owner's first command
 * from the configured image (never pulled), with no network by default, memory/pids/CPU limits,
 * every capability dropped and no new privileges, the workspace bind-mounted at `mountPath`.
 * Commands run through one long-lived agent per container (@deepseek-ai/dsh-bash-agent), so a call costs a fork
 * inside the container rather than a `runc exec`. Output, timeouts, kills, leftovers, background
 * tasks, reads and ownership are those of the kit's `ProcessExecutor`; sessions per owner, paths
 * and idle removal those of `AgentSessionExecutor` (shared with the Kubernetes executor).
 *
 * Containers are removed when their owner is released (`releaseOwner`), when the executor is
 * disposed, and — through the lifeline — when the server process dies in any way.
 */
export class ContainerExecutor extends AgentSessionExecutor<ContainerSession> {
  static readonly inject: string[] = []
  protected readonly containerConfig: ContainerExecutorConfig
  readonly engine: EngineClient
  /** The host directory mounted at `mountPath`. */
  readonly workspace: string
  private readonly _instance = randomBytes(4).toString('hex')
  private _sessionSeq = 0
  private readonly _sweep: Promise<void>
  private readonly _user: string | undefined
  /** The configured image with the agent's layer (made or found once per executor). */
  private _agentImage?: Promise<AgentImage>

  constructor(ctx: Context, config: ContainerExecutorConfigInput) {
    const parsed = parseContainerConfig(config)
    const engineUrl = parsed.engine ?? engineUrlFromEnv()
    const tls = parsed.tls ? loadEngineTls(parsed.tls.certPath ?? join(homedir(), '.docker'), parsed.tls.verify) : engineTlsFromEnv()
    const engine = new EngineClient(engineUrl, tls, { sshArgs: parsed.sshArgs })
    const workspace = resolvePath(parsed.workspace ?? parsed.cwd ?? process.cwd())
    let stat
    try {
      stat = statSync(workspace)
    } catch {
      throw containerErrors.invalidConfig(`workspace ${JSON.stringify(workspace)} does not exist`)
    }
    if (!stat.isDirectory()) throw containerErrors.invalidConfig(`workspace ${JSON.stringify(workspace)} is not a directory`)
    super(ctx, parsed, { hostRoot: workspace, mountPath: parsed.mountPath, idleTimeoutMs: parsed.idleTimeoutMs })
    this.containerConfig = parsed
    this.engine = engine
    this.workspace = workspace
    this._user = parsed.user ?? `${stat.uid}:${stat.gid}`
    this._sweep = parsed.sweep ? sweepDeadServers(engine).then(() => undefined, () => undefined) : Promise.resolve()
  }

  /**
   * The engine answers and has the image (it is never pulled): otherwise the start fails with the
   * engine's address or the image's name and what to do.
   */
  override async check(): Promise<void> {
    try {
      await this.engine.request('GET', '/version', undefined, 15_000)
    } catch (error) {
      throw new Error(`${messageOf(error)} (start Docker or Podman, or point --engine or DOCKER_HOST at it)`)
    }
    const image = this.containerConfig.image
    try {
      await this.engine.request('GET', `/images/${encodeURIComponent(image)}/json`, undefined, 15_000)
    } catch (error) {
      if ((error as { status?: number }).status === 404) throw new Error(`the image ${image} is not on the engine, and it is never pulled (docker pull ${image}, or name another with --image)`)
      throw new Error(`cannot inspect the image ${image}: ${messageOf(error)}`)
    }
  }

  /** The container id of an owner's session (undefined before its first command). */
  async containerOf(owner: string | undefined): Promise<string | undefined> {
    return (await this.sessionOf(owner))?.id
  }

  protected beforeSessions(): Promise<void> {
    return this._sweep
  }

  protected async closeBackend(): Promise<void> {
    await this._sweep
    this.engine.close()
  }

  /** The image sessions are created from (see agentImage); a failed look is tried again next time. */
  private imageWithAgent(labels: Record<string, string>): Promise<AgentImage> {
    this._agentImage ??= agentImage(this.engine, this.containerConfig.image, labels)
    this._agentImage.catch(() => (this._agentImage = undefined))
    return this._agentImage
  }

  protected async openSession(_key: string, onGone: (session: AgentSession) => void): Promise<ContainerSession> {
    const c = this.containerConfig
    const own = { [LABEL_EXECUTOR]: 'container', [LABEL_SERVER]: serverIdentity() }
    const labels = { ...c.labels, ...own }
    let image: AgentImage
    try {
      // The helper container gets only the executor's own labels: an image keeps its container's.
      image = await this.imageWithAgent(own)
    } catch (error) {
      throw hasCode(error, CONTAINER_ERROR.noImage) || hasCode(error, CONTAINER_ERROR.createFailed) ? error : containerErrors.createFailed(messageOf(error))
    }
    const spec: ContainerSpec = {
      image: image.image,
      workspace: { hostPath: this.workspace, mountPath: c.mountPath, readOnly: c.readOnlyWorkspace, mode: c.workspaceMode, copyMaxBytes: c.workspaceCopyMaxBytes },
      network: c.network,
      memoryBytes: c.memoryBytes,
      pidsLimit: c.pidsLimit,
      cpus: c.cpus,
      user: this._user,
      env: c.env,
      labels,
      shell: c.shell,
      secretPatterns: this.config.secretEnvPatterns,
      startTimeoutMs: c.startTimeoutMs,
      agent: image.agent,
    }
    return ContainerSession.create(this.engine, `dsh-bash-${this._instance}-${++this._sessionSeq}`, spec, onGone, this.logger.extend('container'))
  }
}
