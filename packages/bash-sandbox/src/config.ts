import { z } from 'zod'
import { BASH_ERROR, codedError, isSandboxMode, SANDBOX_MODES, type SandboxModeName, widerModes as widerAmong } from '@deepseek-ai/dsh-bash'
import { parseConfig } from '@deepseek-ai/dsh-bash-kit'
import { localConfigSchema } from '@deepseek-ai/dsh-bash-local'
import { isIP } from 'node:net'
import { checkPattern, normalizeHost } from './egress-rules.js'

// The modes are defined once, in the seam (dsh-bash's sandbox-modes.ts).
export { isSandboxMode, SANDBOX_MODES, type SandboxModeName } from '@deepseek-ai/dsh-bash'

const modeList = SANDBOX_MODES.join(', ')

/** The modes strictly wider than `mode`, narrowest first. */
export function widerModes(mode: SandboxModeName): SandboxModeName[] {
  return widerAmong(mode, SANDBOX_MODES)
}

/** A host pattern list entry, normalized (`checkPattern`); the message names the key. */
const patternList = (key: string) =>
  z.array(z.string({ error: `${key} must be a list of host patterns` })).transform((patterns, ctx) => {
    const out: string[] = []
    for (const pattern of patterns) {
      try {
        out.push(checkPattern(pattern, key))
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message })
        return z.NEVER
      }
    }
    return out
  })

/** `{ allow, deny, hosts }` of proxy mode, normalized. */
const egressSchema = z
  .object({
    allow: patternList('network.allow').default([]),
    deny: patternList('network.deny').default([]),
    /** Names the proxy resolves to a fixed address, as Docker's `--add-host` (`{ "db.test": "10.0.0.5" }`). */
    hosts: z
      .record(z.string(), z.string())
      .default({})
      .transform((hosts, ctx) => {
        const out: Record<string, string> = {}
        for (const [name, address] of Object.entries(hosts)) {
          const host = normalizeHost(name)
          if (host === undefined || isIP(host) || !isIP(address)) {
            ctx.addIssue({ code: 'custom', message: `network.hosts: expected NAME: IP address, got ${JSON.stringify(name)}: ${JSON.stringify(address)}` })
            return z.NEVER
          }
          out[host] = address
        }
        return out
      }),
  })
  .strict()

export type EgressConfig = z.output<typeof egressSchema>

/** A path of the read masks: absolute or `~/…`. */
const pathEntry = (key: string) =>
  z
    .string({ error: `${key} must be a list of paths` })
    .refine((path) => path.startsWith('/') || path === '~' || path.startsWith('~/'), { message: `${key}: expected an absolute path or ~/…` })

/**
 * The sandbox executor's settings: the local executor's (`cwd`, `timeoutMs`, `shell`, …) plus the
 * confinement. `containment` leaves out `pgroup`: bwrap starts the command in a new session, where
 * a process group cannot follow it.
 */
export const sandboxConfigSchema = z
  .object({
    ...localConfigSchema.shape,
    containment: z
      .enum(['auto', 'cgroup', 'marker'], { error: 'containment must be one of auto, cgroup, marker' })
      .default('auto'),
    /** The default mode of every command; a request may ask for another one (see `resolve`). */
    mode: z.enum(SANDBOX_MODES, { error: `mode must be one of ${modeList}` }).default('workspace-write'),
    /** The directory `workspace-write` makes writable. Default: the executor's `cwd` (else the process's). */
    workspaceRoot: z.string().min(1, 'workspaceRoot must not be empty').optional(),
    /**
     * The network of confined commands: `false` (default), a private network namespace with its own
     * loopback only; `true`, the host's network; or egress by domain through the executor's proxy
     * (`{ allow, deny, hosts }`: see the README, "Egress by domain"): still a private namespace, and
     * only the proxy leads out.
     */
    network: z
      .union([z.boolean(), egressSchema], { error: 'network must be true, false or { allow, deny, hosts }' })
      .default(false),
    /**
     * Paths confined commands must not read, on top of the default list (`DEFAULT_DENY_READ`):
     * absolute, or `~/…` (this user's home). Each is covered by an unreadable mount in every
     * confined mode (see the README, "Secrets").
     */
    denyRead: z.array(pathEntry('denyRead')).default([]),
    /** Paths lifted from the read masks: an entry of the list (default or not) or a path inside one. */
    allowRead: z.array(pathEntry('allowRead')).default([]),
    /** The bwrap binary: an absolute path, or a name looked up in PATH. Default `bwrap` from PATH. */
    bwrapPath: z.string().min(1, 'bwrapPath must not be empty').optional(),
  })
  .strict()

export type SandboxExecutorConfig = z.output<typeof sandboxConfigSchema>
export type SandboxExecutorConfigInput = z.input<typeof sandboxConfigSchema>

/** The keys the sandbox adds to the local executor's config. */
export const SANDBOX_KEYS = ['mode', 'workspaceRoot', 'network', 'bwrapPath', 'denyRead', 'allowRead'] as const

/** Validates the config; a bad value is an Error naming the key (`invalid sandbox executor config: …`). */
export function parseSandboxConfig(input: unknown): SandboxExecutorConfig {
  return parseConfig(sandboxConfigSchema, input, 'sandbox executor')
}

/** The validated request mode, or an Error naming the accepted modes. */
export function checkRequestedMode(value: unknown): SandboxModeName {
  if (isSandboxMode(value)) return value
  throw codedError(BASH_ERROR.invalidRequest, `invalid sandboxMode: expected one of ${modeList}, got ${JSON.stringify(value ?? null)}`)
}

/** How the network of confined commands works: none, the host's, or the proxy's. */
export function networkKind(network: SandboxExecutorConfig['network']): 'off' | 'on' | 'proxy' {
  return network === true ? 'on' : network === false ? 'off' : 'proxy'
}
