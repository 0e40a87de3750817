import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve as resolvePath } from 'node:path'
import { homedir } from 'node:os'
import type { Context } from 'cordis'
import { CoreV1Api, KubeConfig, loadYaml, NetworkingV1Api } from '@kubernetes/client-node'
import type { AgentSession } from '@deepseek-ai/dsh-bash-agent'
import { AgentSessionExecutor, serverIdentity } from '@deepseek-ai/dsh-bash-container'
import { type KubernetesExecutorConfig, type KubernetesExecutorConfigInput, parseKubernetesConfig } from './config.js'
import { kubernetesErrors } from './errors.js'
import { ANNOTATION_SERVER, buildPod } from './pod.js'
import { describe, type PodAccess, PodSession } from './session.js'
import { ensureDenyAllPolicy, sweepDeadPods } from './sweep.js'

/**
 * Runs every command in a Kubernetes pod of its session (owner), created on the owner's first
 * command from the pod template, through the same in-container agent as the Docker executor
 * (one long-lived `pods/exec` per pod; a second exec for kills when the agent does not answer).
 * Pods are deleted on `releaseOwner`, after the idle timeout, and at disposal; pods of dead
 * servers of this host are swept at load. Scheduling, quotas and scale are the cluster's.
 */
export class KubernetesExecutor extends AgentSessionExecutor<PodSession> {
  static readonly inject: string[] = []
  protected readonly kubernetesConfig: KubernetesExecutorConfig
  readonly kubeConfig: KubeConfig
  /** The namespace of the session pods. */
  readonly namespace: string
  private readonly api: CoreV1Api
  private readonly template: Record<string, unknown> | undefined
  private readonly _instance = randomBytes(4).toString('hex')
  private _sessionSeq = 0
  private readonly _ready: Promise<void>

  /**
   * A kubeconfig is there (without one the client falls back to http://localhost:8080 and every call
   * fails with a TLS complaint) and the cluster answers a pod listing in the namespace.
   */
  override async check(): Promise<void> {
    const env = process.env
    if (!this.kubernetesConfig.kubeconfig && !env.KUBECONFIG && !env.KUBERNETES_SERVICE_HOST && !existsSync(join(homedir(), '.kube', 'config'))) {
      throw new Error('no kubeconfig: set KUBECONFIG, create ~/.kube/config, or name one with --executor-config \'{"kubeconfig":"PATH"}\'')
    }
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('no answer within 20 s')), 20_000)
    })
    try {
      await Promise.race([this.api.listNamespacedPod({ namespace: this.namespace, limit: 1 }), late])
    } catch (error) {
      const server = this.kubeConfig.getCurrentCluster()?.server ?? 'the cluster'
      throw new Error(`cannot list pods in namespace ${this.namespace} at ${server}: ${describe(error)} (check the kubeconfig context, or try kubectl get pods -n ${this.namespace})`)
    } finally {
      clearTimeout(timer)
    }
  }

  constructor(ctx: Context, config: KubernetesExecutorConfigInput) {
    const parsed = parseKubernetesConfig(config)
    const kubeConfig = new KubeConfig()
    try {
      if (parsed.kubeconfig) kubeConfig.loadFromFile(parsed.kubeconfig)
      else kubeConfig.loadFromDefault()
      if (parsed.context) kubeConfig.setCurrentContext(parsed.context)
    } catch (error) {
      throw kubernetesErrors.kubeconfig(describe(error))
    }
    if (!kubeConfig.getCurrentCluster()) throw kubernetesErrors.kubeconfig('no current cluster')
    const template = parsed.podTemplateFile ? readTemplate(parsed.podTemplateFile) : parsed.podTemplate
    const namespace = parsed.namespace ?? kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? 'default'
    // Validates the template and the image now (a config error at load, not at the first command).
    buildPod(template, podSettings(parsed, 'dsh-bash-check', namespace))
    const hostRoot = resolvePath(parsed.workspace ?? process.cwd())
    if (parsed.workspaceMode === 'copy') {
      let stat
      try {
        stat = statSync(hostRoot)
      } catch {
        throw kubernetesErrors.invalidConfig(`workspace ${JSON.stringify(hostRoot)} does not exist`)
      }
      if (!stat.isDirectory()) throw kubernetesErrors.invalidConfig(`workspace ${JSON.stringify(hostRoot)} is not a directory`)
    }
    super(ctx, parsed, { hostRoot, mountPath: parsed.mountPath, idleTimeoutMs: parsed.idleTimeoutMs })
    this.kubernetesConfig = parsed
    this.kubeConfig = kubeConfig
    this.namespace = namespace
    this.template = template
    this.api = kubeConfig.makeApiClient(CoreV1Api)
    const steps: Promise<unknown>[] = []
    if (parsed.sweep) steps.push(sweepDeadPods(this.api, namespace).catch(() => []))
    if (parsed.networkPolicy) steps.push(ensureDenyAllPolicy(kubeConfig.makeApiClient(NetworkingV1Api), namespace))
    this._ready = Promise.all(steps).then(() => undefined)
    // Surfaced by the first command; an unhandled rejection must not take the server down meanwhile.
    this._ready.catch(() => {})
  }

  /** The pod name of an owner's session (undefined before its first command). */
  async podOf(owner: string | undefined): Promise<string | undefined> {
    return (await this.sessionOf(owner))?.name
  }

  protected async beforeSessions(): Promise<void> {
    try {
      await this._ready
    } catch (error) {
      throw kubernetesErrors.createFailed(`cannot create the NetworkPolicy: ${describe(error)}`)
    }
  }

  protected async closeBackend(): Promise<void> {
    await this._ready.catch(() => undefined)
  }

  protected openSession(_key: string, onGone: (session: AgentSession) => void): Promise<PodSession> {
    const c = this.kubernetesConfig
    const name = `dsh-bash-${this._instance}-${++this._sessionSeq}`
    const { pod, container } = buildPod(this.template, podSettings(c, name, this.namespace))
    const access: PodAccess = { kubeConfig: this.kubeConfig, api: this.api, namespace: this.namespace, logger: this.logger.extend('kubernetes') }
    return PodSession.create(
      access,
      {
        pod,
        container,
        shell: c.shell,
        secretPatterns: this.config.secretEnvPatterns,
        startTimeoutMs: c.startTimeoutMs,
        killFallbackMs: c.killFallbackMs,
        ...(c.workspaceMode === 'copy' ? { workspaceCopy: { hostPath: this.sessionOptions.hostRoot!, mountPath: c.mountPath, maxBytes: c.workspaceCopyMaxBytes } } : {}),
      },
      onGone,
    )
  }
}

function podSettings(c: KubernetesExecutorConfig, name: string, namespace: string) {
  return {
    name,
    namespace,
    image: c.image,
    container: c.container,
    serviceAccount: c.serviceAccount,
    limits: c.limits,
    requests: c.requests,
    env: c.env,
    labels: c.labels,
    annotations: { [ANNOTATION_SERVER]: serverIdentity() },
    mountPath: c.mountPath,
    // The agent starts within the start timeout (after scheduling, pulls and the workspace copy).
    lifeline: { firstSeconds: Math.ceil(c.startTimeoutMs / 1000), goneSeconds: c.lifelineSeconds },
  }
}

/** A pod template file: YAML or JSON (JSON is YAML). */
export function readTemplate(path: string): Record<string, unknown> {
  let value: unknown
  try {
    value = loadYaml(readFileSync(path, 'utf8'))
  } catch (error) {
    throw kubernetesErrors.badTemplate(`cannot read ${JSON.stringify(path)}: ${describe(error)}`)
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw kubernetesErrors.badTemplate(`${JSON.stringify(path)} does not hold an object`)
  return value as Record<string, unknown>
}
