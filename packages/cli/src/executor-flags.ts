import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { SANDBOX_MODES } from '@deepseek-ai/dsh-bash/sandbox-modes'
import { UsageError } from './errors.js'
import { didYouMean, fileFlag } from './flags.js'

// The flag handlers of the executor kinds that need more than a line; the table is executors.ts.


/** The value of a string flag, refused when empty (`--image: expected a value, got ""`). */
export function nonEmpty(flag: string, value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${flag}: expected a value, got ${JSON.stringify(value)}`)
  return value
}

/** `--sandbox-mode` and `--network` (the sandbox kind of executors.ts). */
export function applySandboxFlags(values: Record<string, unknown>, config: Record<string, unknown>): void {
  const mode = values['sandbox-mode'] as string | undefined
  const network = values.network as string | undefined
  if (mode !== undefined) {
    if (!(SANDBOX_MODES as readonly string[]).includes(mode)) throw new UsageError(`--sandbox-mode: expected one of ${SANDBOX_MODES.join(', ')}, got ${JSON.stringify(mode)}${didYouMean(mode, SANDBOX_MODES)}`)
    config.mode = mode
  }
  if (network !== undefined) {
    if (network !== 'on' && network !== 'off') throw new UsageError(`--network: expected on or off, got ${JSON.stringify(network)}`)
    config.network = network === 'on'
  }
}

/** `--ssh` (required unless the config names hosts), `--ssh-key`, `--known-hosts` (the ssh kind). */
export function applySshFlags(values: Record<string, unknown>, config: Record<string, unknown>): void {
  const hosts = (values.ssh as string[] | undefined) ?? []
  const key = values['ssh-key'] as string | undefined
  const knownHosts = values['known-hosts'] as string | undefined
  if (hosts.length > 0) {
    const targets = hosts.map(parseSshTarget)
    const keyPath = key !== undefined ? fileFlag('--ssh-key', key) : defaultKey()
    if (!keyPath) throw new UsageError('--ssh-key: required (no ~/.ssh/id_ed25519, id_ecdsa or id_rsa found)')
    const knownHostsPath = knownHosts !== undefined ? resolve(knownHosts) : join(homedir(), '.ssh', 'known_hosts')
    if (!existsSync(knownHostsPath)) {
      throw new UsageError(`--known-hosts: no such file ${JSON.stringify(knownHosts ?? knownHostsPath)} (host keys are never accepted blindly)`)
    }
    fileFlag('--known-hosts', knownHostsPath)
    config.hosts = targets.map((target) => ({ ...target, privateKeyPath: keyPath, hostKey: { knownHostsPath } }))
  } else if (config.hosts === undefined) {
    throw new UsageError('--ssh: required with --executor ssh (user@host[:port], repeatable)')
  } else if (key !== undefined || knownHosts !== undefined) {
    throw new UsageError(`--${key !== undefined ? 'ssh-key' : 'known-hosts'}: goes with --ssh`)
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
