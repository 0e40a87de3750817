import { z } from 'zod'
import { executorConfigShape, nonNegativeInt, parseConfig, positiveInt } from '@deepseek-ai/dsh-bash-kit'
import { kubernetesErrors } from './errors.js'

/** Where the session's working directory is inside every pod (an `emptyDir` unless the template mounts something there). */
export const DEFAULT_POD_WORKDIR = '/workspace'

export const kubernetesConfigSchema = z
  .object({
    ...executorConfigShape,
    /**
     * The image of the session container. Overrides the template's; required when the template
     * names none. Pulled by the kubelet per `imagePullPolicy` (default `IfNotPresent`).
     */
    image: z.string().min(1, 'image must not be empty').optional(),
    /** The namespace of the pods; default the kubeconfig context's, else `default`. */
    namespace: z.string().min(1, 'namespace must not be empty').optional(),
    /** A kubeconfig file; default `KubeConfig.loadFromDefault()` ($KUBECONFIG, ~/.kube/config, in-cluster). */
    kubeconfig: z.string().optional(),
    /** The kubeconfig context; default its current context. */
    context: z.string().optional(),
    /**
     * A pod (`{ metadata?, spec }`) every session pod starts from: volumes, node selectors,
     * tolerations, security context, sidecars… The executor sets the name, its labels, the session
     * container's command, stdin and (when given) image, service account and resources.
     */
    podTemplate: z.record(z.string(), z.unknown()).optional(),
    /** A YAML or JSON file holding `podTemplate` (read at load). */
    podTemplateFile: z.string().optional(),
    /** The container of the template the agent runs in; default its first (or a new one named `bash`). */
    container: z.string().optional(),
    /** The pods' service account; default the template's (else none: no API token is mounted either way). */
    serviceAccount: z.string().optional(),
    /** Resource limits of the session container (Kubernetes quantities); requests default to them. */
    limits: z.record(z.string(), z.string()).default({ memory: '2Gi', cpu: '2' }),
    /**
     * Size of a private /tmp (an `emptyDir` in memory, `sizeLimit`, counted in the memory limit) in
     * bytes; 0 = the image's /tmp. Ignored when the template mounts something at /tmp.
     */
    tmpBytes: nonNegativeInt('tmpBytes').default(0),
    /** Resource requests; default the limits. */
    requests: z.record(z.string(), z.string()).optional(),
    /**
     * Create (once, idempotently) a NetworkPolicy denying all ingress and egress to the executor's
     * pods in the namespace. Only effective where the cluster's network plugin enforces policies.
     */
    networkPolicy: z.boolean().default(true),
    /** Where `workspace` (the host directory) maps to, and the default workdir, inside the pod. */
    mountPath: z.string().default(DEFAULT_POD_WORKDIR),
    /**
     * A host directory whose paths map to `mountPath` (the tools pass the session's host cwd).
     * Its files are copied into the pod only with `workspaceMode: "copy"`. Default `process.cwd()` at load.
     */
    workspace: z.string().optional(),
    /**
     * `none`: the pod's `mountPath` starts as the template made it (an empty `emptyDir` by default);
     * `copy`: the workspace's content is copied there (a tar stream into `tar -x` through an exec)
     * before the session's first command. Changes stay in the pod and vanish with it.
     */
    workspaceMode: z.enum(['none', 'copy']).default('none'),
    /** `copy` only: at most this many bytes of regular-file content are copied (else the session fails to start). */
    workspaceCopyMaxBytes: positiveInt('workspaceCopyMaxBytes').default(1024 * 1024 * 1024),
    /** Extra variables of the session container. */
    env: z.record(z.string(), z.string()).default({}),
    /** Extra labels of every pod (the executor's own `dsh-bash.*` labels win). */
    labels: z.record(z.string(), z.string()).default({}),
    /** The shell commands run in (looked up on the container's PATH). */
    shell: z.string().min(1, 'shell must not be empty').default('bash'),
    /** How long creating a pod (scheduling, pulling, starting) and its agent may take (ms). */
    startTimeoutMs: positiveInt('startTimeoutMs').default(120_000),
    /** Delete a session's pod after this long (ms) with nothing running; 0: only at release or disposal. */
    idleTimeoutMs: nonNegativeInt('idleTimeoutMs').default(30 * 60_000),
    /** At load, delete pods of this executor left by dead dsh-bash servers of this host. */
    sweep: z.boolean().default(true),
    /**
     * When the agent does not confirm a kill within `graceMs` + this (ms), kill the command's
     * processes through a second exec (the agent may be stuck).
     */
    killFallbackMs: positiveInt('killFallbackMs').default(5_000),
    /**
     * The pod's lifeline: its main process exits (and with it every process of the session
     * container) once the agent has been gone this many seconds — after the server died or lost
     * the exec. 0: the main process never exits (the pod runs until deleted or its deadline).
     */
    lifelineSeconds: nonNegativeInt('lifelineSeconds').default(3),
  })
  .strict()

export type KubernetesExecutorConfig = z.output<typeof kubernetesConfigSchema>
export type KubernetesExecutorConfigInput = z.input<typeof kubernetesConfigSchema>

export function parseKubernetesConfig(input: unknown): KubernetesExecutorConfig {
  const config = parseConfig(kubernetesConfigSchema, input, 'kubernetes executor')
  if (!config.mountPath.startsWith('/')) throw kubernetesErrors.invalidConfig('mountPath must be an absolute path')
  if (config.podTemplate && config.podTemplateFile) throw kubernetesErrors.invalidConfig('podTemplate and podTemplateFile exclude each other')
  for (const name of Object.keys(config.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw kubernetesErrors.invalidConfig(`env: bad variable name ${JSON.stringify(name)}`)
  }
  return config
}
