/**
 * THE table of executor kinds: a new executor touches this file only (issue #17). Each kind names
 * its package and export (imported only when chosen), its own flags with their help lines, how
 * `--workdir` is read, and how its flags fold into the executor config. Kept light: `--help` and
 * usage errors import it without loading any executor.
 */
import { UsageError } from './errors.js'
import { applyLimitsConfig, applySandboxFlags, applySshFlags, type LimitName, limitValue, nonEmpty } from './executor-flags.js'
import { limitDefaultsHelp } from './limit-defaults.js'
import { fileFlag } from './flags.js'

/** One flag of an executor kind (a `node:util` parseArgs option plus its help). */
export interface ExecutorFlag {
  type: 'string'
  multiple?: true
  /** Help lines, each already indented and aligned like the other flags. */
  help: string[]
}

/** One executor kind of the command line. */
export interface ExecutorKindSpec {
  /** The package holding the plugin (named in errors). */
  module: string
  /**
   * Imports `module`, on demand (never at start-up of another kind). A literal `import()` so that
   * the bundler of the published package (packages/cli/bundle.mjs) finds and splits it.
   */
  load(): Promise<Record<string, unknown>>
  /** The plugin class exported by `module`. */
  export: string
  /** A few words for `--executor KIND` in the help. */
  summary: string
  /**
   * How `--workdir` is read: `host` — a directory of this machine (checked to exist); `remote` —
   * an absolute path over there (SSH host), required, never checked here.
   */
  workdir: 'host' | 'remote'
  /** Its flags, by name (a flag several kinds share is declared by each, with the same type). */
  flags: Record<string, ExecutorFlag>
  /**
   * Folds its flags (`values`, parsed) into the config (flags win over `--executor-config`);
   * throws UsageError for a bad or missing value. `workdir` is the resolved `--workdir`, if any.
   */
  apply?(values: Record<string, unknown>, config: Record<string, unknown>, workdir: string | undefined): void
}

const IMAGE_HELP = (who: string, text: string) => [`  --image IMAGE           ${who}: ${text}`]

/** The help of the limit flags: one text for every kind that takes them (printed once). */
const LIMIT_HELP: Record<LimitName, string[]> = {
  memory: [
    '  --limit-memory SIZE     the memory of each command, its processes together (512M, 4G; none: no',
    '                          limit); container, kubernetes: of each session\'s container or pod',
  ],
  pids: ['  --limit-pids N          the processes (and threads) of each command at once; container: per container'],
  cpu: ['  --limit-cpu CORES       the CPU time of each command, in cores (1.5); container, kubernetes: per session'],
  tmp: [
    '  --limit-tmp SIZE        the size of the private /tmp and /dev/shm: sandbox (each command), container,',
    '                          kubernetes (each session)',
  ],
}

/** The limit flags a kind takes (the table's entries share one help text each). */
function limitFlags(names: readonly LimitName[]): Record<string, ExecutorFlag> {
  return Object.fromEntries(names.map((name) => [`limit-${name}`, { type: 'string', help: LIMIT_HELP[name] }]))
}

/** A limit flag's value for a kind whose config keys differ (container, kubernetes): undefined when absent, 0 for none. */
function limitOrZero(values: Record<string, unknown>, name: LimitName): number | undefined {
  const value = limitValue(name, values[`limit-${name}`])
  return value === null ? 0 : value
}

export const EXECUTOR_KINDS = {
  local: {
    module: '@deepseek-ai/dsh-bash-local',
    load: () => import('@deepseek-ai/dsh-bash-local'),
    export: 'LocalExecutor',
    summary: 'local (default)',
    workdir: 'host',
    flags: limitFlags(['memory', 'pids', 'cpu']),
    apply: (values, config) => applyLimitsConfig(values, config, ['memory', 'pids', 'cpu']),
  },
  sandbox: {
    module: '@deepseek-ai/dsh-bash-sandbox',
    load: () => import('@deepseek-ai/dsh-bash-sandbox'),
    export: 'SandboxExecutor',
    summary: 'sandbox',
    workdir: 'host',
    flags: {
      'sandbox-mode': { type: 'string', help: ['  --sandbox-mode MODE     sandbox: read-only, workspace-write (default) or danger-full-access'] },
      network: { type: 'string', help: ['  --network on|off        sandbox: allow the network (default off)'] },
      'allow-domain': {
        type: 'string',
        multiple: true,
        help: [
          '  --allow-domain PATTERN  sandbox: network only to these hosts, through a proxy on this machine',
          '                          (example.com, *.example.com; repeatable; nothing else leads out)',
        ],
      },
      'deny-domain': { type: 'string', multiple: true, help: ['  --deny-domain PATTERN   sandbox: egress never to these hosts (repeatable; wins over --allow-domain)'] },
      'add-host': { type: 'string', multiple: true, help: ['  --add-host NAME:IP      sandbox: the proxy resolves NAME to IP (repeatable)'] },
      'deny-read': {
        type: 'string',
        multiple: true,
        help: ['  --deny-read PATH        sandbox: commands cannot read PATH (repeatable; besides ~/.ssh, ~/.aws, ~/.kube, …)'],
      },
      'allow-read': { type: 'string', multiple: true, help: ['  --allow-read PATH       sandbox: lift PATH from the unreadable paths (repeatable)'] },
      ...limitFlags(['memory', 'pids', 'cpu', 'tmp']),
    },
    apply: (values, config) => {
      applySandboxFlags(values, config)
      applyLimitsConfig(values, config, ['memory', 'pids', 'cpu', 'tmp'])
    },
  },
  ssh: {
    module: '@deepseek-ai/dsh-bash-ssh',
    load: () => import('@deepseek-ai/dsh-bash-ssh'),
    export: 'SshExecutor',
    summary: 'ssh',
    workdir: 'remote',
    flags: {
      ssh: { type: 'string', multiple: true, help: ['  --ssh USER@HOST[:PORT]  ssh: a host to run commands on (repeatable: sessions spread over hosts)'] },
      'ssh-key': { type: 'string', help: ['  --ssh-key PATH          ssh: private key (default ~/.ssh/id_ed25519, id_ecdsa or id_rsa)'] },
      'known-hosts': { type: 'string', help: ['  --known-hosts PATH      ssh: known_hosts file verifying host keys (default ~/.ssh/known_hosts)'] },
      ...limitFlags(['memory', 'pids']),
    },
    apply: (values, config) => {
      applySshFlags(values, config)
      applyLimitsConfig(values, config, ['memory', 'pids'])
    },
  },
  container: {
    module: '@deepseek-ai/dsh-bash-container',
    load: () => import('@deepseek-ai/dsh-bash-container'),
    export: 'ContainerExecutor',
    summary: 'container',
    workdir: 'host',
    flags: {
      image: { type: 'string', help: IMAGE_HELP('container', 'the image of the session containers (required; never pulled)') },
      ...limitFlags(['memory', 'pids', 'cpu', 'tmp']),
      engine: {
        type: 'string',
        help: [
          '  --engine URL            container: unix:///path, tcp://host:port or https://host:port (default $DOCKER_HOST, else',
          '                          unix:///var/run/docker.sock; TLS per DOCKER_TLS_VERIFY and DOCKER_CERT_PATH) or ssh://[user@]host[:port]',
        ],
      },
    },
    apply(values, config) {
      const image = nonEmpty('image', values.image)
      const engine = nonEmpty('engine', values.engine)
      if (image !== undefined) config.image = image
      if (engine !== undefined) config.engine = engine
      // The container's own keys (0: none).
      const keys = { memory: 'memoryBytes', pids: 'pidsLimit', cpu: 'cpus', tmp: 'tmpBytes' } as const
      for (const name of Object.keys(keys) as LimitName[]) {
        const value = limitOrZero(values, name)
        if (value !== undefined) config[keys[name]] = value
      }
      if (config.image === undefined) throw new UsageError('--image: required with --executor container (an image already on the engine: it is never pulled)')
    },
  },
  kubernetes: {
    module: '@deepseek-ai/dsh-bash-kubernetes',
    load: () => import('@deepseek-ai/dsh-bash-kubernetes'),
    export: 'KubernetesExecutor',
    summary: 'kubernetes',
    workdir: 'host',
    flags: {
      image: { type: 'string', help: IMAGE_HELP('kubernetes', 'the image of the session pods (required unless the pod template names one)') },
      namespace: { type: 'string', help: ["  --namespace NS          kubernetes: the pods' namespace (default: the kubeconfig context's, else default)"] },
      'pod-template': { type: 'string', help: ['  --pod-template FILE     kubernetes: a pod (YAML or JSON) every session pod starts from'] },
      ...limitFlags(['memory', 'cpu', 'tmp']),
    },
    apply(values, config, workdir) {
      // The pod's resource limits (Kubernetes quantities; none: the key removed), and its /tmp.
      const limits: Record<string, string> = { ...((config.limits as Record<string, string> | undefined) ?? { memory: '2Gi', cpu: '2' }) }
      for (const [name, key] of [['memory', 'memory'], ['cpu', 'cpu']] as const) {
        const value = limitValue(name, values[`limit-${name}`])
        if (value === null) delete limits[key]
        else if (value !== undefined) limits[key] = String(value)
      }
      if (values['limit-memory'] !== undefined || values['limit-cpu'] !== undefined) config.limits = limits
      const tmp = limitOrZero(values, 'tmp')
      if (tmp !== undefined) config.tmpBytes = tmp
      const image = nonEmpty('image', values.image)
      const namespace = nonEmpty('namespace', values.namespace)
      const template = nonEmpty('pod-template', values['pod-template'])
      if (image !== undefined) config.image = image
      if (namespace !== undefined) {
        if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace) || namespace.length > 63) {
          throw new UsageError(`--namespace: expected a Kubernetes namespace name (lower-case letters, digits, -), got ${JSON.stringify(namespace)}`)
        }
        config.namespace = namespace
      }
      if (template !== undefined) config.podTemplateFile = fileFlag('--pod-template', template, 'file', { mayBeMissing: true })
      if (config.image === undefined && config.podTemplateFile === undefined && config.podTemplate === undefined) {
        throw new UsageError('--image: required with --executor kubernetes (unless --pod-template names the image)')
      }
      // Host paths under the workspace (the sessions' cwd) map to the pod's workdir.
      if (workdir !== undefined && config.workspace === undefined) config.workspace = workdir
    },
  },
} as const satisfies Record<string, ExecutorKindSpec>

export type ExecutorKind = keyof typeof EXECUTOR_KINDS
export const EXECUTORS = Object.keys(EXECUTOR_KINDS) as ExecutorKind[]

/** The kind's spec (typed as the interface, whatever literal the table holds). */
export function executorKind(kind: ExecutorKind): ExecutorKindSpec {
  return EXECUTOR_KINDS[kind]
}

/** Every executor flag, as `node:util` parseArgs options (the union over the kinds). */
export const executorFlagSpec: Record<string, { type: 'string'; multiple?: true }> = Object.fromEntries(
  Object.values(EXECUTOR_KINDS).flatMap((spec: ExecutorKindSpec) => Object.entries(spec.flags).map(([name, flag]) => [name, flag.multiple ? { type: 'string', multiple: true } : { type: 'string' }])),
)

/** The kinds that take a flag, in table order. */
function kindsOf(flag: string): ExecutorKind[] {
  return EXECUTORS.filter((kind) => Object.hasOwn(executorKind(kind).flags, flag))
}

/**
 * Refuses every executor flag the chosen kind does not take (`--image: only used with --executor
 * container or kubernetes`), then lets the kind fold its flags into the config.
 */
export function applyExecutorFlags(kind: ExecutorKind, values: Record<string, unknown>, config: Record<string, unknown>, workdir?: string): void {
  const spec = executorKind(kind)
  for (const flag of Object.keys(executorFlagSpec)) {
    const value = values[flag]
    if (value === undefined || (Array.isArray(value) && value.length === 0)) continue
    if (!Object.hasOwn(spec.flags, flag)) {
      throw new UsageError(`--${flag}: only used with --executor ${kindsOf(flag).join(' or ')}`)
    }
  }
  spec.apply?.(values, config, workdir)
}

/**
 * The help lines of every executor flag, in table order (a flag shared by kinds: one line per kind,
 * unless the kinds share its help text, printed once). The limit flags come last, with the
 * defaults of `mcp` and `agent`.
 */
export function executorFlagHelp(overrides: Record<string, string[]> = {}): string[] {
  const lines: string[] = []
  const limits: string[] = []
  const seen = new Set<string>()
  const printed = new Set<string[]>()
  for (const kind of EXECUTORS) {
    for (const [name, flag] of Object.entries(executorKind(kind).flags)) {
      if (overrides[name]) {
        if (!seen.has(name)) lines.push(...overrides[name])
      } else if (!printed.has(flag.help)) {
        ;(name.startsWith('limit-') ? limits : lines).push(...flag.help)
        printed.add(flag.help)
      }
      seen.add(name)
    }
  }
  return [...lines, ...limits, ...limitDefaultsHelp()]
}

/** `--executor KIND` help text: every kind's summary. */
export function executorKindsHelp(): string {
  const names = EXECUTORS.map((kind) => executorKind(kind).summary)
  return `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`
}
