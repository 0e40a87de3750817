import { randomBytes } from 'node:crypto'
import { posix } from 'node:path'
import type { Context } from 'cordis'
import { type BashExecRequest, type BashExecSpec, type ExecutorCapabilities, pluginTimer } from '@deepseek-ai/dsh-bash'
import { containerErrors } from './errors.js'
import { type ExecutorConfig, type LaunchedCommand, type LaunchIdentity, ProcessExecutor } from '@deepseek-ai/dsh-bash-kit'
import { type AgentSession, launchThroughAgent } from '@deepseek-ai/dsh-bash-agent'

/** The owner key of calls made without an owner (they share one session). */
const NO_OWNER = '\0no-owner'

/** How a backend's paths and session lifetimes are set up (see `AgentSessionExecutor`). */
export interface AgentSessionOptions {
  /**
   * A host directory whose paths map to `mountPath` inside the container/pod (the tools pass the
   * session's host cwd). Undefined: no mapping, every absolute path is a container path.
   */
  hostRoot?: string
  /** Where `hostRoot` appears inside (absolute, POSIX). Never a host path. */
  mountPath: string
  /**
   * Remove a session after this long (ms) with no command or background task running; its owner's
   * next command gets a fresh one. 0: only at release or disposal.
   */
  idleTimeoutMs: number
}

const SESSION_CAPABILITIES: ExecutorCapabilities = Object.freeze({
  sandboxModes: [],
  interactive: true,
  resize: true,
  paths: 'remote',
  limits: [],
  networkModes: [],
})

/**
 * The executor half shared by every backend of the in-container agent: one session (container,
 * pod) per owner, created on the owner's first command and removed on `releaseOwner`, after the
 * idle timeout, when it is lost, and at disposal; container paths; commands launched through the
 * session's agent. Backends implement `openSession` (create the container/pod, start the agent)
 * and may override `beforeSessions` (e.g. await a sweep) and `closeBackend` (release clients).
 */
export abstract class AgentSessionExecutor<S extends AgentSession> extends ProcessExecutor {
  private readonly _sessions = new Map<string, Promise<S>>()
  /** Removals of sessions that were lost, released or idle, awaited by disposal. */
  private readonly _removals = new Set<Promise<void>>()
  private readonly _markerPrefix = `${process.pid.toString(36)}-${randomBytes(6).toString('hex')}`
  private _markerSeq = 0
  protected readonly sessionOptions: AgentSessionOptions

  constructor(ctx: Context, config: ExecutorConfig, options: AgentSessionOptions) {
    // Relative workdirs resolve inside the container: by default against the mount.
    super(ctx, { ...config, cwd: config.cwd ?? options.mountPath })
    this.sessionOptions = options
  }

  /** Creates the container/pod of a session and starts its agent; `onGone` when it is lost. */
  protected abstract openSession(key: string, onGone: (session: AgentSession) => void): Promise<S>

  /** Awaited before every session creation (a sweep at load, a namespace policy, …). */
  protected beforeSessions(): Promise<void> {
    return Promise.resolve()
  }

  /** Called at disposal once every session is removed. */
  protected async closeBackend(): Promise<void> {}

  /**
   * Paths are container paths. A relative workdir resolves against `cwd` (default the mount path),
   * POSIX rules; an absolute host path inside `hostRoot` (a session's cwd on the host) maps to
   * the same place under the mount; any other absolute path is taken as a container path.
   */
  resolve(request: BashExecRequest): BashExecSpec {
    const spec = super.resolve(request)
    const cwd = this.toContainerPath(this.config.cwd ?? this.sessionOptions.mountPath)
    let workdir = spec.workdir
    if (request && typeof request.workdir === 'string' && request.workdir !== '' && !request.workdir.startsWith('/')) {
      workdir = posix.resolve(cwd, request.workdir)
    } else if (!request || request.workdir === undefined || request.workdir === '') {
      workdir = cwd
    }
    return { ...spec, workdir: this.toContainerPath(workdir) }
  }

  /** The container path of a host path inside `hostRoot`; other paths unchanged. */
  toContainerPath(path: string): string {
    const { hostRoot, mountPath } = this.sessionOptions
    if (hostRoot === undefined) return path
    if (path === hostRoot) return mountPath
    if (hostRoot !== '/' && path.startsWith(`${hostRoot}/`)) return posix.join(mountPath, path.slice(hostRoot.length + 1))
    return path
  }

  /** An owner's session, once created (undefined before its first command or when it failed). */
  protected async sessionOf(owner: string | undefined): Promise<S | undefined> {
    const session = this._sessions.get(owner ?? NO_OWNER)
    if (!session) return undefined
    try {
      return await session
    } catch {
      return undefined
    }
  }

  /**
   * Ends an owner's session: kills its running tasks (whole trees) and removes its container/pod.
   * Its finished tasks stay readable. The next command of that owner gets a fresh session.
   */
  async releaseOwner(owner: string): Promise<void> {
    await this.killOwner(owner)
    const session = this._sessions.get(owner)
    if (!session) return
    this._sessions.delete(owner)
    try {
      await (await session).remove()
    } catch {
      // It never started: nothing to remove.
    }
  }

  /**
   * Commands run on the container's or pod's paths (a workspace mapped in), unconfined by a
   * sandbox mode; interactive tasks in a pseudo-terminal the agent opens there (resized through it).
   */
  get capabilities(): ExecutorCapabilities {
    return SESSION_CAPABILITIES
  }

  protected async launch(spec: BashExecSpec, _launch: LaunchIdentity): Promise<LaunchedCommand> {
    const session = await this.sessionFor(spec.owner)
    return launchThroughAgent(session, spec, `${this._markerPrefix}-${++this._markerSeq}`)
  }

  protected async disposeBackend(): Promise<void> {
    const sessions = [...this._sessions.values()]
    this._sessions.clear()
    for (const session of sessions) void session.then((s) => s.onBusy?.(), () => undefined)
    await Promise.all(sessions.map((p) => p.then((s) => s.remove(), () => undefined)))
    await Promise.all(this._removals)
    await this.closeBackend()
  }

  private track(removal: Promise<void>): void {
    this._removals.add(removal)
    void removal.then(() => this._removals.delete(removal))
  }

  /** Removes the session once nothing of it has run for `idleTimeoutMs`. */
  private watchIdle(key: string, session: S): void {
    const idleMs = this.sessionOptions.idleTimeoutMs
    if (idleMs === 0) return
    let cancel: (() => void) | undefined
    const stop = () => {
      cancel?.()
      cancel = undefined
    }
    session.onBusy = stop
    session.onIdle = () => {
      stop()
      // Bound to the executor plugin: unloading it clears the timer (sessions go with the shutdown).
      cancel = pluginTimer(this.pluginCtx, idleMs, () => {
        cancel = undefined
        if (session.activeCommands > 0 || session.lost || this.disposing) return
        void this._sessions.get(key)?.then((current) => {
          if (current !== session || session.activeCommands > 0) return
          this._sessions.delete(key)
          this.track(session.remove())
        }, () => undefined)
      })
    }
    // Created for a command that is about to attach: no timer until it is released.
  }

  private sessionFor(owner: string | undefined): Promise<S> {
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

  private async createSession(key: string): Promise<S> {
    await this.beforeSessions()
    if (this.disposing) throw containerErrors.disposed()
    const session = await this.openSession(key, (lost) => {
      // The container died under us: the next command of this owner gets a new one.
      const current = this._sessions.get(key)
      if (current) current.then((s) => s === lost && this._sessions.get(key) === current && this._sessions.delete(key), () => {})
      this.track(lost.remove())
    })
    this.watchIdle(key, session)
    if (this.disposing) {
      await session.remove()
      throw containerErrors.disposed()
    }
    return session
  }
}
