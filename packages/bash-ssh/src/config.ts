import { z } from 'zod'
import { executorConfigShape, nonNegativeInt, parseConfig, positiveInt } from '@deepseek-ai/dsh-bash-kit'
import { sshErrors } from './errors.js'

/** `SHA256:` followed by the unpadded base64 of the key's SHA-256, as printed by `ssh-keygen -l`. */
const FINGERPRINT = /^SHA256:[A-Za-z0-9+/]{43}=?$/

const hostKeySchema = z.union(
  [
    z.object({ knownHostsPath: z.string().min(1, 'knownHostsPath must not be empty') }).strict(),
    z
      .object({
        fingerprint: z.string().regex(FINGERPRINT, 'fingerprint must look like SHA256:<43 base64 characters> (see ssh-keygen -lf)'),
      })
      .strict(),
  ],
  { error: 'hostKey must be { knownHostsPath } or { fingerprint: "SHA256:…" }' },
)

export const sshHostSchema = z
  .object({
    /** Host name or address. */
    host: z.string().min(1, 'host must not be empty'),
    port: z.number({ error: 'port must be a number' }).int('port must be an integer').min(1, 'port must be 1–65535').max(65535, 'port must be 1–65535').default(22),
    username: z.string().min(1, 'username must not be empty'),
    /** The private key itself (OpenSSH or PEM text). */
    privateKey: z.string().min(1, 'privateKey must not be empty').optional(),
    /** A file holding the private key. */
    privateKeyPath: z.string().min(1, 'privateKeyPath must not be empty').optional(),
    /** Passphrase of an encrypted private key. */
    passphrase: z.string().optional(),
    /** How the server's host key is verified. Required: a host key is never accepted blindly. */
    hostKey: hostKeySchema,
  })
  .strict()
  .refine((h) => (h.privateKey === undefined) !== (h.privateKeyPath === undefined), {
    message: 'exactly one of privateKey and privateKeyPath is required',
  })

export const sshConfigSchema = z
  .object({
    ...executorConfigShape,
    /** Remote base directory for relative workdirs (an absolute path on the remote hosts). */
    cwd: z.string().refine((p) => p.startsWith('/'), 'cwd must be an absolute remote path').optional(),
    /** The machines; each owner is pinned to one of them at its first call. */
    hosts: z.array(sshHostSchema, { error: 'hosts must be a list' }).min(1, 'hosts must list at least one host'),
    /** The shell started on the remote side (a name in the remote PATH or an absolute path). */
    shell: z.string().min(1, 'shell must not be empty').default('bash'),
    /** How long to wait for the TCP connection and SSH handshake (ms). */
    readyTimeoutMs: positiveInt('readyTimeoutMs').default(20_000),
    /** Keepalive probes while connected (ms); a silent peer is declared lost after `keepaliveCountMax` unanswered ones. */
    keepaliveIntervalMs: positiveInt('keepaliveIntervalMs').default(5_000),
    keepaliveCountMax: positiveInt('keepaliveCountMax').default(3),
    /** Connection attempts per call before giving up (1 = no retry). */
    connectAttempts: positiveInt('connectAttempts').default(3),
    /** First delay between attempts; doubles each time up to `maxReconnectDelayMs`. */
    reconnectDelayMs: nonNegativeInt('reconnectDelayMs').default(500),
    maxReconnectDelayMs: nonNegativeInt('maxReconnectDelayMs').default(30_000),
    /**
     * Accepted and ignored: every command of a host runs through the one agent channel of its
     * connection (before the agent, each command had a session channel and this capped them).
     */
    maxSessionsPerConnection: positiveInt('maxSessionsPerConnection').default(10),
    /**
     * A command whose shell exited while other processes of it still run (a background task is over
     * only when none is left) is reported in the executor's log after this long (ms), then after
     * twice as long more, and so on: the pids the remote agent still sees and why they count. A wait
     * that stays silent past an expected report is logged and asked again. 0: neither.
     */
    waitReportMs: nonNegativeInt('waitReportMs').default(10_000),
    /**
     * How long (ms) the wait for a terminated command's processes may still take (its termination
     * answered) before it is given up with a warning: a kill or a disposal never hangs on it.
     */
    stoppedWaitMs: positiveInt('stoppedWaitMs').default(15_000),
  })
  .strict()

export type SshHostConfig = z.output<typeof sshHostSchema>
export type SshHostConfigInput = z.input<typeof sshHostSchema>
export type SshExecutorConfig = z.output<typeof sshConfigSchema>
export type SshExecutorConfigInput = z.input<typeof sshConfigSchema>

export function parseSshConfig(input: unknown): SshExecutorConfig {
  const config = parseConfig(sshConfigSchema, input, 'ssh executor')
  const seen = new Set<string>()
  config.hosts.forEach((h, i) => {
    const id = hostLabel(h)
    if (seen.has(id)) throw sshErrors.invalidConfig(`hosts.${i}: ${id} is listed twice`)
    seen.add(id)
  })
  return config
}

/** `user@host:port`, the name used in every message about a host. */
export function hostLabel(h: Pick<SshHostConfig, 'username' | 'host' | 'port'>): string {
  const host = h.host.includes(':') ? `[${h.host}]` : h.host
  return `${h.username}@${host}:${h.port}`
}

/**
 * Parses `user@host[:port]` (IPv6 in brackets: `user@[::1]:22`), as given on a command line.
 * Returns the parts; throws naming the text when it is malformed.
 */
export function parseSshTarget(text: string): { username: string; host: string; port: number } {
  const match = /^([^@\s]+)@(\[[^\]]+\]|[^:\s[\]]+)(?::(\d+))?$/.exec(text)
  if (!match) throw sshErrors.invalidTarget(text, 'expected user@host[:port]')
  const port = match[3] === undefined ? 22 : Number(match[3])
  if (!(port >= 1 && port <= 65535)) throw sshErrors.invalidTarget(text, 'port must be 1–65535')
  const host = match[2].startsWith('[') ? match[2].slice(1, -1) : match[2]
  return { username: match[1], host, port }
}
