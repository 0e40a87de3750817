import { randomBytes } from 'node:crypto'
import { statSync } from 'node:fs'
import { resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import type { AgentSession } from './agent-session.js'
import { type ContainerExecutorConfig, type ContainerExecutorConfigInput, parseContainerConfig } from './config.js'
import { containerErrors } from './errors.js'
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
 * Commands run through one long-lived agent per container (see scripts.ts), so a call costs a fork
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

  protected openSession(_key: string, onGone: (session: AgentSession) => void): Promise<ContainerSession> {
    const c = this.containerConfig
    const spec: ContainerSpec = {
      image: c.image,
      workspace: { hostPath: this.workspace, mountPath: c.mountPath, readOnly: c.readOnlyWorkspace, mode: c.workspaceMode, copyMaxBytes: c.workspaceCopyMaxBytes },
      network: c.network,
      memoryBytes: c.memoryBytes,
      pidsLimit: c.pidsLimit,
      cpus: c.cpus,
      tmpBytes: c.tmpBytes,
      user: this._user,
      env: c.env,
      labels: { ...c.labels, [LABEL_EXECUTOR]: 'container', [LABEL_SERVER]: serverIdentity() },
      shell: c.shell,
      secretPatterns: this.config.secretEnvPatterns,
      startTimeoutMs: c.startTimeoutMs,
    }
    return ContainerSession.create(this.engine, `dsh-bash-${this._instance}-${++this._sessionSeq}`, spec, onGone, this.logger.extend('container'))
  }
}
