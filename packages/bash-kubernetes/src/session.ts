import { PassThrough } from 'node:stream'
import type { Logger } from 'cordis'
import { type CoreV1Api, Exec, type KubeConfig, type V1Pod, type V1Status } from '@kubernetes/client-node'
import { messageOf } from '@deepseek-ai/dsh-bash'
import { type AgentErrors, AgentSession, type AgentStream, INSTALL_SCRIPT, installArgs, POD_AGENT_DIR, runInstall } from '@deepseek-ai/dsh-bash-agent'
import { containerErrors, lostMessage, workspaceArchive } from '@deepseek-ai/dsh-bash-container'
import { kubernetesErrors } from './errors.js'

/** What a session needs to reach its pod. */
export interface PodAccess {
  /** The loaded kubeconfig (cluster, credentials): the exec WebSockets are opened with it. */
  kubeConfig: KubeConfig
  /** The core API client made from it (pods create/get/delete). */
  api: CoreV1Api
  /** The executor plugin's logger: a pod that could not be deleted is said there. */
  logger: Logger
  /** The namespace of the session pods. */
  namespace: string
}

/** What one session pod is started with (the executor computes it). */
export interface PodSessionSpec {
  /** The pod to create (see buildPod): named, labelled, its container's command set. */
  pod: V1Pod
  /** The container of the pod the agent runs in. */
  container: string
  /** The shell the agent runs commands in. */
  shell: string
  /** Name fragments of variables the agent drops from every command's environment. */
  secretPatterns: readonly string[]
  /** Create + running + agent hello, at most (ms). */
  startTimeoutMs: number
  /** Extra wait, past the grace, before a kill goes through a second exec. */
  killFallbackMs: number
  /**
   * `workspaceMode: "copy"`: the host directory whose content is extracted into `mountPath` (as the
   * container's user) before the agent starts, at most `maxBytes` of file content. Undefined: no copy.
   */
  workspaceCopy?: { hostPath: string; mountPath: string; maxBytes: number }
}

/** The part of the client's exec WebSocket (`ws`) this package uses. */
interface ExecSocket {
  on(event: 'close' | 'error', listener: () => void): void
  close(): void
  /** Bytes queued and not yet handed to the network (the client itself never waits on it). */
  readonly bufferedAmount: number
  /** The channel protocol agreed (`v5.channel.k8s.io` can close stdin alone). */
  readonly protocol: string
}

/** Bytes of the workspace archive queued on the WebSocket at most before the copy waits. */
const COPY_HIGH_WATER = 8 * 1024 * 1024

/** The status code of a client-node ApiException (undefined for other errors). */
export function apiStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'number' ? code : undefined
}

/**
 * One session's pod: created from the template, waited for until its container runs, the agent
 * installed through one exec (its binary on the exec's stdin, checked by its SHA-256), then one
 * serving agent through one long-lived `pods/exec` WebSocket. The pod's PID 1 becomes the agent's
 * lifeline (see podCommand); the pod is deleted on release, idle timeout and disposal, and by the
 * sweep of the next server of this host after a crash (see README).
 */
export class PodSession extends AgentSession {
  private ws?: ExecSocket
  /** The agent's path in the pod, once installed. */
  private agentPath?: string

  private constructor(
    private readonly access: PodAccess,
    readonly name: string,
    private readonly container: string,
    onGone: (session: AgentSession) => void,
  ) {
    super(onGone)
  }

  /** Creates the pod, waits until it runs and starts the agent; on failure deletes what was created. */
  static async create(access: PodAccess, spec: PodSessionSpec, onGone: (session: AgentSession) => void): Promise<PodSession> {
    const session = new PodSession(access, spec.pod.metadata!.name!, spec.container, onGone)
    session.killFallbackMs = spec.killFallbackMs
    await session.bootWithin(spec.startTimeoutMs, () => kubernetesErrors.notReady(session.name, `not ready after ${spec.startTimeoutMs} ms`), (cancelled) => session.boot(spec, cancelled))
    return session
  }

  private created = false

  get shortId(): string {
    return `pod ${this.access.namespace}/${this.name}`
  }

  /** The container executor's words: a pod is the container of its session. */
  get errors(): AgentErrors {
    return containerErrors
  }

  protected lostMessage(): string {
    return lostMessage(this.shortId)
  }

  private async boot(spec: PodSessionSpec, cancelled: () => boolean): Promise<void> {
    const { api, namespace } = this.access
    try {
      await api.createNamespacedPod({ namespace, body: spec.pod })
    } catch (error) {
      throw kubernetesErrors.createFailed(describe(error))
    }
    this.created = true
    await this.stopIfRemoved()
    await this.waitRunning(cancelled)
    await this.stopIfRemoved()
    if (spec.workspaceCopy && !cancelled()) await this.copyWorkspace(spec.workspaceCopy)
    if (cancelled()) return
    const agentPath = await this.installAgent()
    this.agentPath = agentPath
    await this.stopIfRemoved()
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let resolveClosed!: () => void
    const closed = new Promise<void>((resolve) => (resolveClosed = resolve))
    const ws = await this.exec([agentPath, 'serve', spec.shell, ...spec.secretPatterns], stdout, stderr, stdin)
    this.ws = ws
    ws.on('close', () => {
      stdout.end()
      stderr.end()
      resolveClosed()
    })
    ws.on('error', () => {})
    const stream: AgentStream = { stdin, stdout, stderr, closed, destroy: () => ws.close() }
    await this.startAgent(stream)
  }

  /**
   * The start deadline passed (or the session was removed) while a step of `boot` was under way:
   * `remove()` may have found no pod to delete yet, so it is deleted here, and `boot` stops.
   */
  private async stopIfRemoved(): Promise<void> {
    if (!this.lost) return
    await this.destroyBackend()
    throw kubernetesErrors.notReady(this.name, 'removed while starting')
  }

  /**
   * Installs the agent: one exec of INSTALL_SCRIPT (bash and coreutils) that asks for the build of
   * the pod's architecture, reads exactly its bytes from stdin, checks the SHA-256 and renames it
   * into `/.dsh-bash/<uid>/` (where PID 1 waits for it). Resolves with its path.
   */
  private async installAgent(): Promise<string> {
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const ws = await this.exec(['bash', '--noprofile', '--norc', '-c', INSTALL_SCRIPT, 'install', ...installArgs(POD_AGENT_DIR)], stdout, stderr, stdin)
    const closed = new Promise<void>((resolve) => {
      ws.on('close', () => resolve())
      ws.on('error', () => resolve())
    })
    try {
      return await runInstall({ stdin, stdout, stderr, closed }, this.shortId)
    } catch (error) {
      throw containerErrors.agentFailed(messageOf(error))
    } finally {
      ws.close()
    }
  }

  /** Polls the pod until its container runs; a terminal phase or a waiting reason that will not pass fails. */
  private async waitRunning(cancelled: () => boolean): Promise<void> {
    const { api, namespace } = this.access
    let delay = 50
    for (;;) {
      if (cancelled() || this.lost) return
      const pod = await api.readNamespacedPod({ name: this.name, namespace })
      const phase = pod.status?.phase
      const state = pod.status?.containerStatuses?.find((c) => c.name === this.container)?.state
      if (phase === 'Running' && state?.running) return
      if (phase === 'Failed' || phase === 'Succeeded') throw kubernetesErrors.notReady(this.name, `phase ${phase}${pod.status?.message ? `: ${pod.status.message}` : ''}`)
      const waiting = state?.waiting
      if (waiting && ['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError'].includes(waiting.reason ?? '')) {
        throw kubernetesErrors.notReady(this.name, `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`)
      }
      await new Promise((resolve) => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, 500)
    }
  }

  /**
   * Copies the workspace's content into `mountPath`: the shared tar stream (bash-container's
   * `workspaceArchive`, entries `./…` without the directory itself) into `tar -x` run by an exec as
   * the container's user (`--no-same-owner`: the files are that user's). The client ignores
   * backpressure on the WebSocket, so the archive is fed at most COPY_HIGH_WATER ahead of the network.
   */
  private async copyWorkspace(copy: NonNullable<PodSessionSpec['workspaceCopy']>): Promise<void> {
    const archive = await workspaceArchive({ hostPath: copy.hostPath, maxBytes: copy.maxBytes }).catch((error: unknown) => {
      throw kubernetesErrors.workspaceCopy(this.name, messageOf(error))
    })
    const stdin = new PassThrough()
    const out = new PassThrough().resume()
    const err = new PassThrough()
    let stderr = ''
    err.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)))
    let status: V1Status | undefined
    let ws: ExecSocket
    try {
      ws = await this.exec(['tar', '-x', '-f', '-', '-C', copy.mountPath, '--no-same-owner'], out, err, stdin, (s) => (status = s))
    } catch (error) {
      archive.abort()
      throw kubernetesErrors.workspaceCopy(this.name, messageOf(error))
    }
    const closed = new Promise<void>((resolve) => {
      ws.on('close', () => resolve())
      ws.on('error', () => resolve())
    })
    let gone = false
    void closed.then(() => (gone = true))
    try {
      for await (const chunk of archive.stream) {
        if (gone) break
        stdin.write(chunk)
        while (ws.bufferedAmount > COPY_HIGH_WATER && !gone) await new Promise((resolve) => setTimeout(resolve, 5))
      }
      // The exec ended early (tar failed in the pod): its status below says why.
      if (gone) archive.abort()
      else await archive.done
    } catch (error) {
      const tarFailure = archive.failure
      archive.abort()
      ws.close()
      throw kubernetesErrors.workspaceCopy(this.name, messageOf(tarFailure ?? error))
    }
    // v5 closes stdin alone; over v4 ending stdin would close the whole exec (and lose its status),
    // and GNU tar stops at the archive's end marker anyway.
    if (ws.protocol === 'v5.channel.k8s.io') stdin.end()
    await closed
    if (status?.status !== 'Success') {
      // tar's first complaint names the cause; its last line is only "Exiting with failure status".
      const why = stderr.trim().split('\n').filter((line) => line && !/Exiting with failure status/.test(line))[0] || status?.message || 'the exec ended without a status'
      throw kubernetesErrors.workspaceCopy(this.name, `tar -x -C ${copy.mountPath}: ${why}`)
    }
  }

  /** One exec in the session container over the client's WebSocket (channels 0–3). */
  private async exec(
    command: string[],
    stdout: PassThrough,
    stderr: PassThrough,
    stdin: PassThrough | null,
    onStatus?: (status: V1Status) => void,
  ): Promise<ExecSocket> {
    try {
      const ws = await new Exec(this.access.kubeConfig).exec(this.access.namespace, this.name, this.container, command, stdout, stderr, stdin, false, onStatus)
      return ws as unknown as ExecSocket
    } catch (error) {
      throw kubernetesErrors.execFailed(this.name, describe(error))
    }
  }

  /**
   * The second channel for kills: a separate exec running the agent's `kill` mode (freeze-then-KILL
   * of the command's process group while its leader is still there, and of every process carrying
   * its marker). Used when the serving agent does not answer a kill in time. Resolves when that
   * exec ends; never rejects.
   */
  async killFallback(marker: string, pid: number | undefined, start: number | undefined): Promise<void> {
    if (!this.created || !this.agentPath) return
    const out = new PassThrough().resume()
    const err = new PassThrough().resume()
    try {
      const ws = await this.exec([this.agentPath, 'kill', marker, String(pid ?? 0), String(start ?? 0)], out, err, null)
      await new Promise<void>((resolve) => {
        ws.on('close', () => resolve())
        ws.on('error', () => resolve())
      })
    } catch {
      // The pod is gone or unreachable: its deletion kills everything anyway.
    }
  }

  protected async destroyBackend(): Promise<void> {
    this.ws?.close()
    if (!this.created) return
    const { api, namespace } = this.access
    try {
      await api.deleteNamespacedPod({ name: this.name, namespace, gracePeriodSeconds: 0 })
    } catch (error) {
      if (apiStatus(error) !== 404) this.access.logger.error(`deleting ${this.shortId} failed: ${describe(error)}`)
      return
    }
    // Wait until the API no longer has it: disposal promises nothing is left.
    for (let i = 0; i < 600; i++) {
      try {
        await api.readNamespacedPod({ name: this.name, namespace })
      } catch (error) {
        if (apiStatus(error) === 404 || apiStatus(error) === undefined) return
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/** A readable message of a client-node error (its Status message when the API sent one). */
export function describe(error: unknown): string {
  const body = (error as { body?: unknown } | null)?.body
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: string }
      if (status.message) return status.message
    } catch {
      // Not JSON.
    }
  } else if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message
  }
  if (error instanceof Error) return error.message
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' ? message : String(error)
}
