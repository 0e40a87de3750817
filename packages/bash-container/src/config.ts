import { posix } from 'node:path'
import { z } from 'zod'
import { executorConfigShape, nonNegativeInt, parseConfig, positiveInt } from '@deepseek-ai/dsh-bash-kit'
import { containerErrors } from './errors.js'

/** Where the workspace appears inside every container. */
export const DEFAULT_MOUNT_PATH = '/workspace'

export const containerConfigSchema = z
  .object({
    ...executorConfigShape,
    /** The image every session container is created from. Never pulled: it must be on the engine. */
    image: z.string({ error: 'image must be a string' }).min(1, 'image must not be empty'),
    /** The engine: `unix:///path`, `tcp://host:port` or `https://host:port`; default `DOCKER_HOST`, else `unix:///var/run/docker.sock`. */
    engine: z.string().optional(),
    /**
     * TLS for a `tcp://` engine: `certPath` holds `ca.pem`, `cert.pem`, `key.pem` (default
     * `~/.docker`); `verify` checks the server's certificate (default true). Absent: the Docker
     * CLI's environment decides (`DOCKER_TLS_VERIFY`, `DOCKER_CERT_PATH`, `DOCKER_TLS`).
     */
    tls: z.object({ certPath: z.string().optional(), verify: z.boolean().default(true) }).strict().optional(),
    /**
     * Extra `ssh` arguments for an `ssh://` engine (`["-i", "/path/key", "-o", "UserKnownHostsFile=/path"]`);
     * otherwise ssh's own configuration applies (~/.ssh/config, agent, known_hosts). Never a prompt.
     */
    sshArgs: z.array(z.string()).default([]),
    /**
     * The host directory bind-mounted at `mountPath` in every container; default the executor's
     * `cwd`, else `process.cwd()` at load. Host paths under it are mapped to the mount (see README).
     */
    workspace: z.string().optional(),
    /** Where the workspace is mounted inside the container (absolute). */
    mountPath: z.string().default(DEFAULT_MOUNT_PATH),
    /**
     * How the workspace gets into each container: `bind` mounts the host directory (commands change
     * the host's files); `copy` copies its content in before the session's first command (owned by
     * the container user; changes stay in the container and vanish with it). See README.
     */
    workspaceMode: z.enum(['bind', 'copy']).default('bind'),
    /** `copy` only: at most this many bytes of regular-file content are copied (else the session fails to start). */
    workspaceCopyMaxBytes: positiveInt('workspaceCopyMaxBytes').default(1024 * 1024 * 1024),
    /** Mount the workspace read-only. */
    readOnlyWorkspace: z.boolean().default(false),
    /** `none` (default: no network at all) or the name of an engine network (`bridge`, `host`, …). */
    network: z.string().min(1, 'network must not be empty').default('none'),
    /** Memory limit per container (bytes); 0 = the engine's default (none). */
    memoryBytes: nonNegativeInt('memoryBytes').default(2 * 1024 * 1024 * 1024),
    /** Process limit per container; 0 = none. */
    pidsLimit: nonNegativeInt('pidsLimit').default(1024),
    /** CPU limit per container, in CPUs (1.5 = one and a half); 0 = none. */
    cpus: z.number({ error: 'cpus must be a number' }).nonnegative('cpus must not be negative').default(2),
    /** Size of a private /tmp per container (a tmpfs, counted in `memoryBytes`); 0 = the image's /tmp. */
    tmpBytes: nonNegativeInt('tmpBytes').default(0),
    /** `uid[:gid]` or a user name of the image; default the workspace owner's `uid:gid` on the host. */
    user: z.string().optional(),
    /** Extra variables of every container (on top of the image's). */
    env: z.record(z.string(), z.string()).default({}),
    /** The shell commands run in (looked up on the container's PATH). */
    shell: z.string().min(1, 'shell must not be empty').default('bash'),
    /** Extra labels on every container (the executor's own `dsh-bash.*` labels always win). */
    labels: z.record(z.string(), z.string()).default({}),
    /** How long creating a session's container and starting its agent may take (ms). */
    startTimeoutMs: positiveInt('startTimeoutMs').default(60_000),
    /**
     * Remove a session's container after this long (ms) without any command or background task
     * running; its owner's next command gets a fresh container. 0: only at release or disposal.
     */
    idleTimeoutMs: nonNegativeInt('idleTimeoutMs').default(30 * 60_000),
    /** Remove leftover containers of dead dsh-bash servers of this host when the executor loads. */
    sweep: z.boolean().default(true),
  })
  .strict()

export type ContainerExecutorConfig = z.output<typeof containerConfigSchema>
export type ContainerExecutorConfigInput = z.input<typeof containerConfigSchema>

export function parseContainerConfig(input: unknown): ContainerExecutorConfig {
  const config = parseConfig(containerConfigSchema, input, 'container executor')
  if (!config.mountPath.startsWith('/')) throw containerErrors.invalidConfig('mountPath must be an absolute path')
  if (config.workspaceMode === 'copy' && config.readOnlyWorkspace) throw containerErrors.invalidConfig('readOnlyWorkspace applies to workspaceMode "bind" only (a copy is the container\'s own)')
  if (config.workspaceMode === 'copy' && posix.normalize(config.mountPath) === '/') throw containerErrors.invalidConfig('mountPath must not be / with workspaceMode "copy"')
  for (const name of Object.keys(config.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw containerErrors.invalidConfig(`env: bad variable name ${JSON.stringify(name)}`)
  }
  return config
}
