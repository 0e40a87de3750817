import { randomBytes } from 'node:crypto'
import { statSync } from 'node:fs'
import { posix, resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import type { BashExecRequest, BashExecSpec } from '@deepseek-ai/dsh-bash'
import { type LaunchedCommand, type LaunchIdentity, ProcessExecutor } from '@deepseek-ai/dsh-bash-kit'
import { launchInContainer } from './command.js'
import { type ContainerExecutorConfig, type ContainerExecutorConfigInput, parseContainerConfig } from './config.js'
import { EngineClient, engineUrlFromEnv } from './engine.js'
import { containerErrors } from './errors.js'
import { type ContainerSpec, ContainerSession } from './session.js'
import { LABEL_EXECUTOR, LABEL_SERVER, serverIdentity, sweepDeadServers } from './sweep.js'

/** The owner key of calls made without an owner (they share one container). */
const NO_OWNER = '\0no-owner'

/**
 * Runs every command in a container of its session (owner): created on the owner's first command
 * from the configured image (never pulled), with no network by default, memory/pids/CPU limits,
 * every capability dropped and no new privileges, the workspace bind-mounted at `mountPath`.
 * Commands run through one long-lived agent per container (see scripts.ts), so a call costs a fork
 * inside the container rather than a `runc exec`. Output, timeouts, kills, leftovers, background
 * tasks, reads and ownership are those of the kit's `ProcessExecutor`.
 *
 * Containers are removed when their owner is released (`releaseOwner`), when the executor is
 * disposed, and — through the lifeline — when the server process dies in any way.
 */
export class ContainerExecutor extends ProcessExecutor {
  static readonly inject: string[] = []
  protected readonly containerConfig: ContainerExecutorConfig
  readonly engine: EngineClient
  /** The host directory mounted at `mountPath`. */
  readonly workspace: string
  private readonly _sessions = new Map<string, Promise<ContainerSession>>()
  /** Removals of sessions that were lost or released, awaited by disposal. */
  private readonly _removals = new Set<Promise<void>>()
  private readonly _markerPrefix = `${process.pid.toString(36)}-${randomBytes(6).toString('hex')}`
  private readonly _instance = randomBytes(4).toString('hex')
  private _markerSeq = 0
  private _sessionSeq = 0
  private _sweep: Promise<void>
  private readonly _user: string | undefined

  constructor(ctx: Context, config: ContainerExecutorConfigInput) {
    const parsed = parseContainerConfig(config)
    const engineUrl = parsed.engine ?? engineUrlFromEnv()
    const engine = new EngineClient(engineUrl)
    const workspace = resolvePath(parsed.workspace ?? parsed.cwd ?? process.cwd())
    let stat
    try {
      stat = statSync(workspace)
    } catch {
      throw containerErrors.invalidConfig(`workspace ${JSON.stringify(workspace)} does not exist`)
    }
    if (!stat.isDirectory()) throw containerErrors.invalidConfig(`workspace ${JSON.stringify(workspace)} is not a directory`)
    // Relative workdirs resolve inside the container: by default against the mount.
    super(ctx, { ...parsed, cwd: parsed.cwd ?? parsed.mountPath })
    this.containerConfig = parsed
    this.engine = engine
    this.workspace = workspace
    this._user = parsed.user ?? `${stat.uid}:${stat.gid}`
    this._sweep = parsed.sweep ? sweepDeadServers(engine).then(() => undefined, () => undefined) : Promise.resolve()
  }

  /**
   * Paths are container paths. A relative workdir resolves against `cwd` (default the mount path),
   * POSIX rules; an absolute host path inside the workspace (a session's cwd on the host) maps to
   * the same place under the mount; any other absolute path is taken as a container path.
   */
  resolve(request: BashExecRequest): BashExecSpec {
    const spec = super.resolve(request)
    const cwd = this.toContainerPath(this.config.cwd ?? this.containerConfig.mountPath)
    let workdir = spec.workdir
    if (request && typeof request.workdir === 'string' && request.workdir !== '' && !request.workdir.startsWith('/')) {
      workdir = posix.resolve(cwd, request.workdir)
    } else if (!request || request.workdir === undefined || request.workdir === '') {
      workdir = cwd
    }
    return { ...spec, workdir: this.toContainerPath(workdir) }
  }

  /** The container path of a host path inside the workspace; other paths unchanged. */
  toContainerPath(path: string): string {
    const mount = this.containerConfig.mountPath
    if (path === this.workspace) return mount
    if (this.workspace !== '/' && path.startsWith(`${this.workspace}/`)) return posix.join(mount, path.slice(this.workspace.length + 1))
    return path
  }

  /** The container id of an owner's session (undefined before its first command). */
  async containerOf(owner: string | undefined): Promise<string | undefined> {
    const session = this._sessions.get(owner ?? NO_OWNER)
    if (!session) return undefined
    try {
      return (await session).id
    } catch {
      return undefined
    }
  }

  /**
   * Ends an owner's session: kills its running tasks (whole trees) and removes its container.
   * Its finished tasks stay readable. The next command of that owner gets a fresh container.
   */
  async releaseOwner(owner: string): Promise<void> {
    const kills = this.list()
      .filter((task) => task.status === 'running' && this.ownerOf(task.id) === owner)
      .map((task) => this.kill(task.id).catch(() => false))
    await Promise.all(kills)
    const session = this._sessions.get(owner)
    if (!session) return
    this._sessions.delete(owner)
    try {
      await (await session).remove()
    } catch {
      // It never started: nothing to remove.
    }
  }

  /** Interactive tasks run in a pseudo-terminal the agent opens inside the container (see scripts.ts). */
  protected get supportsInteractive(): boolean {
    return true
  }

  protected async launch(spec: BashExecSpec, _launch: LaunchIdentity): Promise<LaunchedCommand> {
    const session = await this.sessionFor(spec.owner)
    return launchInContainer(session, spec, `${this._markerPrefix}-${++this._markerSeq}`)
  }

  protected async disposeBackend(): Promise<void> {
    const sessions = [...this._sessions.values()]
    this._sessions.clear()
    for (const session of sessions) void session.then((s) => s.onBusy?.(), () => undefined)
    await Promise.all(sessions.map((p) => p.then((s) => s.remove(), () => undefined)))
    await Promise.all(this._removals)
    await this._sweep
    this.engine.close()
  }

  /** Removes the session's container once nothing of it has run for `idleTimeoutMs`. */
  private watchIdle(key: string, session: ContainerSession): void {
    const idleMs = this.containerConfig.idleTimeoutMs
    if (idleMs === 0) return
    let timer: NodeJS.Timeout | undefined
    const stop = () => {
      if (timer) clearTimeout(timer)
      timer = undefined
    }
    session.onBusy = stop
    session.onIdle = () => {
      stop()
      timer = setTimeout(() => {
        timer = undefined
        if (session.activeCommands > 0 || session.lost || this.disposing) return
        void this._sessions.get(key)?.then((current) => {
          if (current !== session || session.activeCommands > 0) return
          this._sessions.delete(key)
          const removal = session.remove()
          this._removals.add(removal)
          void removal.then(() => this._removals.delete(removal))
        }, () => undefined)
      }, idleMs)
      timer.unref?.()
    }
    // Created for a command that is about to attach: no timer until it is released.
  }

  private sessionFor(owner: string | undefined): Promise<ContainerSession> {
    const key = owner ?? NO_OWNER
    let session = this._sessions.get(key)
    if (!session) {
      session = this.createSession(key)
      this._sessions.set(key, session)
      // A failed creation is not cached: the next command tries again.
      session.catch(() => {
        if (this._sessions.get(key) === session) this._sessions.delete(key)
      })
    }
    return session
  }

  private async createSession(key: string): Promise<ContainerSession> {
    await this._sweep
    if (this.disposing) throw containerErrors.disposed()
    const c = this.containerConfig
    const spec: ContainerSpec = {
      image: c.image,
      workspace: { hostPath: this.workspace, mountPath: c.mountPath, readOnly: c.readOnlyWorkspace },
      network: c.network,
      memoryBytes: c.memoryBytes,
      pidsLimit: c.pidsLimit,
      cpus: c.cpus,
      user: this._user,
      env: c.env,
      labels: { ...c.labels, [LABEL_EXECUTOR]: 'container', [LABEL_SERVER]: serverIdentity() },
      shell: c.shell,
      secretPatterns: this.config.secretEnvPatterns,
      startTimeoutMs: c.startTimeoutMs,
    }
    const name = `dsh-bash-${this._instance}-${++this._sessionSeq}`
    let created: ContainerSession | undefined
    const session = await ContainerSession.create(this.engine, name, spec, () => {
      // The container died under us: the next command of this owner gets a new one.
      const current = this._sessions.get(key)
      if (current) current.then((s) => s === created && this._sessions.get(key) === current && this._sessions.delete(key), () => {})
      if (created) {
        const removal = created.remove()
        this._removals.add(removal)
        void removal.then(() => this._removals.delete(removal))
      }
    })
    created = session
    this.watchIdle(key, session)
    if (this.disposing) {
      await session.remove()
      throw containerErrors.disposed()
    }
    return session
  }
}

