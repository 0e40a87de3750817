import type { V1Container, V1Pod } from '@kubernetes/client-node'
import { AGENT_PROCESS_NAME, POD_AGENT_DIR, POD_BOOT_SCRIPT } from '@deepseek-ai/dsh-bash-agent'
import { kubernetesErrors } from './errors.js'

/** Every pod of this executor carries it (value `kubernetes`): the sweep and the NetworkPolicy select on it. */
export const LABEL_EXECUTOR = 'dsh-bash.executor'
/** An annotation (label values cannot hold `/`): `<hostname>/<pid>/<start time>` of the creating server. */
export const ANNOTATION_SERVER = 'dsh-bash.server'
/** The name of the emptyDir the executor adds at `mountPath` when the template mounts nothing there. */
export const WORKSPACE_VOLUME = 'dsh-bash-workspace'
/** The name of the emptyDir the agent is installed into (POD_AGENT_DIR). */
export const AGENT_VOLUME = 'dsh-bash-agent'

/**
 * The session container's command: bash runs the agent's POD_BOOT_SCRIPT as PID 1, which waits for
 * the agent's installation (an exec, see PodSession) and then becomes it in `pod-init` mode: it
 * reaps orphans, exits at once on TERM (as PID 1 it would otherwise ignore it and every deletion
 * would wait out the grace period), and is the pod's **lifeline**: it exits — and with it every
 * process of the container's PID namespace; `restartPolicy: Never` keeps it stopped — once the
 * serving agent has been gone for `goneSeconds`. The agent is gone when the server is: its exec's
 * WebSocket closes, the kubelet closes the exec's stdin, the agent kills its commands and exits.
 * See packages/bash-agent/native/lifeline.c for the rules.
 */
export function podCommand(lifeline: PodSettings['lifeline']): string[] {
  return ['bash', '--noprofile', '--norc', '-c', POD_BOOT_SCRIPT, 'boot', POD_AGENT_DIR, String(lifeline.firstSeconds), String(lifeline.goneSeconds), AGENT_PROCESS_NAME]
}

/** What the executor puts into every session pod (from its config). */
export interface PodSettings {
  /** The pod's name (DNS-1123); never taken from the template. */
  name: string
  /** The pod's namespace. */
  namespace: string
  /** Overrides the session container's image; undefined: the template's (one is required). */
  image?: string
  /** The template container the agent runs in; undefined: the first (or a new `bash`). */
  container?: string
  /** `spec.serviceAccountName`; undefined: the template's. */
  serviceAccount?: string
  /** Resource limits merged over the template container's (Kubernetes quantities). */
  limits: Record<string, string>
  /** Resource requests; undefined: the limits. */
  requests?: Record<string, string>
  /** Variables added to the container (they replace template entries of the same name). */
  env: Record<string, string>
  /** Labels added to the pod; the executor's `dsh-bash.executor` always wins. */
  labels: Record<string, string>
  /** Annotations added to the pod (the server identity). */
  annotations: Record<string, string>
  /** The pod's workdir; an emptyDir goes there unless the template mounts something at it. */
  mountPath: string
  /**
   * The main process's lifeline (see podCommand): it waits `firstSeconds` for the agent to
   * appear, then exits once the agent has been gone for `goneSeconds`. `goneSeconds` 0: it never exits.
   */
  lifeline: { firstSeconds: number; goneSeconds: number }
}

/**
 * The session pod: the template (deep-copied) with the executor's settings applied. Defaults that
 * the template does not set: `restartPolicy: Never`, no service-account token, no service links,
 * no privilege escalation, every capability dropped, `imagePullPolicy: IfNotPresent`, a short
 * termination grace, and an `emptyDir` at `mountPath`. Always: an `emptyDir` at POD_AGENT_DIR for
 * the agent, and the container's command (podCommand).
 */
export function buildPod(template: Record<string, unknown> | undefined, s: PodSettings): { pod: V1Pod; container: string } {
  const pod = structuredClone(template ?? {}) as V1Pod
  if (pod.kind !== undefined && pod.kind !== 'Pod') throw kubernetesErrors.badTemplate(`kind must be Pod, got ${JSON.stringify(pod.kind)}`)
  pod.apiVersion = 'v1'
  pod.kind = 'Pod'
  const metadata = (pod.metadata ??= {})
  delete metadata.generateName
  delete metadata.resourceVersion
  delete metadata.uid
  metadata.name = s.name
  metadata.namespace = s.namespace
  metadata.labels = { ...(metadata.labels ?? {}), ...s.labels, [LABEL_EXECUTOR]: 'kubernetes' }
  metadata.annotations = { ...(metadata.annotations ?? {}), ...s.annotations }
  const spec = (pod.spec ??= { containers: [] })
  spec.containers ??= []
  let container: V1Container | undefined
  if (s.container !== undefined) {
    container = spec.containers.find((c) => c.name === s.container)
    if (!container) {
      if (spec.containers.length > 0) throw kubernetesErrors.noContainer(s.container)
      container = { name: s.container }
      spec.containers.push(container)
    }
  } else {
    container = spec.containers[0]
    if (!container) {
      container = { name: 'bash' }
      spec.containers.push(container)
    }
  }
  if (typeof container.name !== 'string' || container.name === '') throw kubernetesErrors.badTemplate('every container needs a name')
  if (s.image !== undefined) container.image = s.image
  if (!container.image) throw kubernetesErrors.noImage()
  container.command = podCommand(s.lifeline)
  container.args = []
  // The agent's exec brings its own stdin; the main process needs none.
  container.stdin = false
  container.tty = false
  container.imagePullPolicy ??= 'IfNotPresent'
  container.env = [...(container.env ?? []).filter((e) => !(e.name in s.env)), ...Object.entries(s.env).map(([name, value]) => ({ name, value }))]
  const limits = { ...(container.resources?.limits ?? {}), ...s.limits }
  container.resources = { ...(container.resources ?? {}), limits, requests: { ...(container.resources?.requests ?? {}), ...(s.requests ?? limits) } }
  const security = (container.securityContext ??= {})
  security.allowPrivilegeEscalation ??= false
  security.capabilities ??= { drop: ['ALL'] }
  spec.restartPolicy = 'Never'
  spec.automountServiceAccountToken ??= false
  spec.enableServiceLinks ??= false
  spec.terminationGracePeriodSeconds ??= 1
  if (s.serviceAccount !== undefined) spec.serviceAccountName = s.serviceAccount
  const mounts = (container.volumeMounts ??= [])
  if (!mounts.some((m) => m.mountPath === s.mountPath)) {
    mounts.push({ name: WORKSPACE_VOLUME, mountPath: s.mountPath })
    spec.volumes = [...(spec.volumes ?? []).filter((v) => v.name !== WORKSPACE_VOLUME), { name: WORKSPACE_VOLUME, emptyDir: {} }]
  }
  // Where the agent is installed: writable and executable whatever the image (a read-only root too).
  container.volumeMounts = [...mounts.filter((m) => m.mountPath !== POD_AGENT_DIR), { name: AGENT_VOLUME, mountPath: POD_AGENT_DIR }]
  spec.volumes = [...(spec.volumes ?? []).filter((v) => v.name !== AGENT_VOLUME), { name: AGENT_VOLUME, emptyDir: {} }]
  return { pod, container: container.name }
}
