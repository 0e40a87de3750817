import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { posix } from 'node:path'
import type { Context, Logger } from 'cordis'
import ssh2 from 'ssh2'
import { type BashExecRequest, type BashExecSpec, type ExecutorCapabilities, messageOf } from '@deepseek-ai/dsh-bash'
import { type LaunchedCommand, type LaunchIdentity, ProcessExecutor } from '@deepseek-ai/dsh-bash-kit'
import { hostLabel, parseSshConfig, type SshExecutorConfig, type SshExecutorConfigInput, type SshHostConfig } from './config.js'
import { isConnectionError, sshErrors } from './errors.js'
import { SshHost } from './host.js'
import { FingerprintPolicy, type HostKeyPolicy, KnownHostsPolicy } from './hostkey.js'

const SSH_CAPABILITIES: ExecutorCapabilities = Object.freeze({
  sandboxModes: [],
  interactive: true,
  resize: true,
  paths: 'remote',
  // The agent sets RLIMIT_AS and RLIMIT_NPROC on the far side (`agent serve --rlimit-as/--rlimit-nproc`).
  limits: ['memory', 'pids'] as const,
  networkModes: [],
})

/**
 * Runs commands on other machines over SSH (ssh2), through the one far-side agent
 * (@deepseek-ai/dsh-bash-agent) that each host's connection runs over one exec channel: each
 * command is `bash --noprofile --norc -c <command>` in its own remote session and process group,
 * in the requested remote workdir, with the kit's non-interactive environment; output, timeouts,
 * kills, leftovers, background tasks, reads and ownership are those of the kit's `ProcessExecutor`.
 *
 * Several hosts: each owner token is pinned to one host at its first call (the least busy one);
 * calls without an owner go to the least busy host at that moment (ties: the first listed).
 */
export class SshExecutor extends ProcessExecutor {
  static readonly inject: string[] = []
  protected readonly sshConfig: SshExecutorConfig
  private readonly _hosts: SshHost[]
  /** owner token → host, fixed at the owner's first call. */
  private readonly _pins = new Map<string, SshHost>()
  /**
   * task id → host label (tasks started in the background, and runs that yielded into a task),
   * while the kit tracks the task: entries go with the task (`evicted`).
   */
  private readonly _taskHosts = new Map<string, string>()
  /** launched command → host label, for every launch: a yielded run's task finds its host here. */
  private readonly _launchHosts = new WeakMap<LaunchedCommand, string>()
  private readonly _markerPrefix = `${process.pid.toString(36)}-${randomBytes(6).toString('hex')}`
  private _markerSeq = 0

  constructor(ctx: Context, config: SshExecutorConfigInput) {
    const parsed = parseSshConfig(config)
    const logger = ctx.logger('dsh-bash:ssh')
    const hosts = parsed.hosts.map((host, index) => buildHost(parsed, host, index, ctx, logger))
    super(ctx, parsed)
    this.sshConfig = parsed
    this._hosts = hosts
  }

  /**
   * Opens a connection to every host (one attempt) and starts the agent there, kept for the first
   * commands: an unreachable host, a refused key or an unknown host key fails the start, naming the
   * host and the flags to check; an agent that cannot start there fails it with the agent's reason.
   */
  override async check(): Promise<void> {
    await Promise.all(
      this._hosts.map(async (host) => {
        try {
          await host.check()
        } catch (error) {
          if (!isConnectionError(error)) throw error
          throw new Error(`${messageOf(error)} (check that sshd runs there and takes this key: --ssh, --ssh-key, --known-hosts)`)
        }
      }),
    )
  }

  /** `user@host:port` of every configured host, in config order. */
  get hosts(): string[] {
    return this._hosts.map((h) => h.label)
  }

  /** The host an owner is pinned to, or undefined before its first call. */
  hostOf(owner: string): string | undefined {
    return this._pins.get(owner)?.label
  }

  /** The host a background task runs on (while the task is tracked). */
  hostOfTask(id: string): string | undefined {
    return this._taskHosts.get(id)
  }

  /** Commands currently running per host (foreground runs and background tasks). */
  load(): Record<string, number> {
    return Object.fromEntries(this._hosts.map((h) => [h.label, h.active]))
  }

  /** Remote paths: a relative workdir resolves against the configured remote `cwd` (POSIX rules). */
  resolve(request: BashExecRequest): BashExecSpec {
    const spec = super.resolve(request)
    if (request && typeof request.workdir === 'string' && request.workdir !== '' && !request.workdir.startsWith('/') && this.config.cwd) {
      return { ...spec, workdir: posix.resolve(this.config.cwd, request.workdir) }
    }
    return spec
  }

  /**
   * Commands run on the remote host's paths, unconfined; interactive tasks in a pty the agent opens
   * there (resized through the agent).
   */
  get capabilities(): ExecutorCapabilities {
    return SSH_CAPABILITIES
  }

  protected async launch(spec: BashExecSpec, launch: LaunchIdentity): Promise<LaunchedCommand> {
    const host = this.pick(spec.owner)
    // Known at once, while the connection is still being made (a task is visible before it runs).
    if (launch.kind === 'task') this._taskHosts.set(launch.id, host.label)
    const launched = await host.launch(spec, {
      marker: `${this._markerPrefix}-${++this._markerSeq}`,
      name: launch.id,
      wait: { reportMs: this.sshConfig.waitReportMs, stoppedBoundMs: this.sshConfig.stoppedWaitMs },
    })
    this._launchHosts.set(launched, host.label)
    return launched
  }

  /** A yielded run becomes a task on the host it runs on. */
  protected adopted(task: LaunchIdentity, _run: LaunchIdentity, launched: LaunchedCommand): void {
    const host = this._launchHosts.get(launched)
    if (host !== undefined) this._taskHosts.set(task.id, host)
  }

  /** An evicted task's host is forgotten with it. */
  protected evicted(task: LaunchIdentity): void {
    this._taskHosts.delete(task.id)
  }

  protected async disposeBackend(): Promise<void> {
    await Promise.all(this._hosts.map((h) => h.dispose()))
  }

  /** The owner's pinned host; else the least busy host (pinning it for the owner). */
  private pick(owner: string | undefined): SshHost {
    if (owner !== undefined) {
      const pinned = this._pins.get(owner)
      if (pinned) return pinned
    }
    let best = this._hosts[0]
    for (const host of this._hosts) if (host.active < best.active) best = host
    if (owner !== undefined) this._pins.set(owner, best)
    return best
  }

}

function buildHost(config: SshExecutorConfig, host: SshHostConfig, index: number, ctx: Context, logger: Logger): SshHost {
  const label = hostLabel(host)
  let privateKey: string | Buffer
  if (host.privateKeyPath !== undefined) {
    try {
      privateKey = readFileSync(host.privateKeyPath)
    } catch (error) {
      throw sshErrors.invalidConfig(`hosts.${index}.privateKeyPath: cannot read ${host.privateKeyPath}: ${(error as Error).message}`)
    }
  } else {
    privateKey = host.privateKey!
  }
  const parsed = ssh2.utils.parseKey(privateKey, host.passphrase)
  const key = Array.isArray(parsed) ? parsed[0] : parsed
  const keyName = host.privateKeyPath !== undefined ? 'privateKeyPath' : 'privateKey'
  if (key instanceof Error) throw sshErrors.invalidConfig(`hosts.${index}.${keyName}: ${key.message}`)
  if (!key || key.isPrivateKey() !== true) throw sshErrors.invalidConfig(`hosts.${index}.${keyName}: not a private key`)
  let policy: HostKeyPolicy
  if ('fingerprint' in host.hostKey) policy = new FingerprintPolicy(host.hostKey.fingerprint)
  else policy = new KnownHostsPolicy(host.hostKey.knownHostsPath, host.host, host.port)
  return new SshHost(
    {
      label,
      connect: {
        host: host.host,
        port: host.port,
        username: host.username,
        privateKey,
        passphrase: host.passphrase,
        readyTimeout: config.readyTimeoutMs,
        keepaliveInterval: config.keepaliveIntervalMs,
        keepaliveCountMax: config.keepaliveCountMax,
      },
      policy,
      connectAttempts: config.connectAttempts,
      reconnectDelayMs: config.reconnectDelayMs,
      maxReconnectDelayMs: config.maxReconnectDelayMs,
    },
    config.shell,
    config.secretEnvPatterns,
    { addressSpaceBytes: config.limits.memory, processes: config.limits.pids },
    config.graceMs,
    ctx,
    logger,
  )
}
