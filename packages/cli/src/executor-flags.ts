import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { UsageError } from './errors.js'

/** The flags that configure the sandbox, SSH and container executors without a JSON config. */
export const executorFlagSpec = {
  'sandbox-mode': { type: 'string' },
  network: { type: 'string' },
  ssh: { type: 'string', multiple: true },
  'ssh-key': { type: 'string' },
  'known-hosts': { type: 'string' },
  image: { type: 'string' },
  engine: { type: 'string' },
} as const

const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access']

/**
 * Folds `--sandbox-mode`, `--network`, `--ssh`, `--ssh-key`, `--known-hosts`, `--image` and
 * `--engine` into the executor config (they win over `--executor-config`). Each flag is refused
 * with any other executor.
 */
export function applyExecutorFlags(executor: string, values: Record<string, unknown>, config: Record<string, unknown>): void {
  const mode = values['sandbox-mode'] as string | undefined
  const network = values.network as string | undefined
  const hosts = (values.ssh as string[] | undefined) ?? []
  const key = values['ssh-key'] as string | undefined
  const knownHosts = values['known-hosts'] as string | undefined
  const only = (flag: string, kind: string) => {
    if (executor !== kind) throw new UsageError(`--${flag}: only used with --executor ${kind}`)
  }

  if (mode !== undefined) {
    only('sandbox-mode', 'sandbox')
    if (!SANDBOX_MODES.includes(mode)) throw new UsageError(`--sandbox-mode: expected one of ${SANDBOX_MODES.join(', ')}, got ${JSON.stringify(mode)}`)
    config.mode = mode
  }
  if (network !== undefined) {
    only('network', 'sandbox')
    if (network !== 'on' && network !== 'off') throw new UsageError(`--network: expected on or off, got ${JSON.stringify(network)}`)
    config.network = network === 'on'
  }
  if (key !== undefined) only('ssh-key', 'ssh')
  if (knownHosts !== undefined) only('known-hosts', 'ssh')
  if (hosts.length > 0) {
    only('ssh', 'ssh')
    const targets = hosts.map(parseSshTarget)
    const keyPath = key !== undefined ? resolve(key) : defaultKey()
    if (!keyPath) throw new UsageError('--ssh-key: required (no ~/.ssh/id_ed25519, id_ecdsa or id_rsa found)')
    if (!existsSync(keyPath)) throw new UsageError(`--ssh-key: no such file ${JSON.stringify(key ?? keyPath)}`)
    const knownHostsPath = knownHosts !== undefined ? resolve(knownHosts) : join(homedir(), '.ssh', 'known_hosts')
    if (!existsSync(knownHostsPath)) {
      throw new UsageError(`--known-hosts: no such file ${JSON.stringify(knownHosts ?? knownHostsPath)} (host keys are never accepted blindly)`)
    }
    config.hosts = targets.map((target) => ({ ...target, privateKeyPath: keyPath, hostKey: { knownHostsPath } }))
  } else if (executor === 'ssh' && config.hosts === undefined) {
    throw new UsageError('--ssh: required with --executor ssh (user@host[:port], repeatable)')
  } else if (key !== undefined || knownHosts !== undefined) {
    throw new UsageError(`--${key !== undefined ? 'ssh-key' : 'known-hosts'}: goes with --ssh`)
  }
  applyContainerFlags(executor, values, config)
}

/** `--image IMAGE` (required with --executor container, unless the config names one) and `--engine URL`. */
function applyContainerFlags(executor: string, values: Record<string, unknown>, config: Record<string, unknown>): void {
  const image = values.image as string | undefined
  const engine = values.engine as string | undefined
  for (const [flag, value] of [['image', image], ['engine', engine]] as const) {
    if (value === undefined) continue
    if (executor !== 'container') throw new UsageError(`--${flag}: only used with --executor container`)
    if (value.trim() === '') throw new UsageError(`--${flag}: expected a value, got ""`)
  }
  if (image !== undefined) config.image = image
  if (engine !== undefined) config.engine = engine
  if (executor === 'container' && config.image === undefined) {
    throw new UsageError('--image: required with --executor container (an image already on the engine: it is never pulled)')
  }
}

/** `user@host[:port]`; IPv6 hosts in brackets: `user@[::1]:2222`. */
export function parseSshTarget(value: string): { username: string; host: string; port: number } {
  const match = /^([^@\s:]+)@(\[[0-9a-fA-F:.]+\]|[^:@[\]\s]+)(?::(\d{1,5}))?$/.exec(value)
  const port = match?.[3] === undefined ? 22 : Number(match[3])
  if (!match || port < 1 || port > 65535) throw new UsageError(`--ssh: expected user@host[:port], got ${JSON.stringify(value)}`)
  const host = match[2].startsWith('[') ? match[2].slice(1, -1) : match[2]
  return { username: match[1], host, port }
}

function defaultKey(): string | undefined {
  for (const name of ['id_ed25519', 'id_ecdsa', 'id_rsa']) {
    const path = join(homedir(), '.ssh', name)
    if (existsSync(path)) return path
  }
  return undefined
}
