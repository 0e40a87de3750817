import { existsSync } from 'node:fs'
import { isIP } from 'node:net'
import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseSize } from '@deepseek-ai/dsh-bash'
import { checkPattern, normalizeHost } from '@deepseek-ai/dsh-bash-sandbox/rules'
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

/**
 * `--sandbox-mode`, `--network`, the egress flags (`--allow-domain`, `--deny-domain`, `--add-host`:
 * any of them turns proxy mode on) and the read masks (`--deny-read`, `--allow-read`) of the sandbox
 * kind of executors.ts. Flags add to what `--executor-config` set.
 */
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
  const list = (flag: string) => (values[flag] as string[] | undefined) ?? []
  const allow = list('allow-domain').map((pattern) => patternOf('allow-domain', pattern))
  const deny = list('deny-domain').map((pattern) => patternOf('deny-domain', pattern))
  const hosts = Object.fromEntries(list('add-host').map(parseAddHost))
  if (allow.length + deny.length + Object.keys(hosts).length > 0) {
    if (network !== undefined) {
      throw new UsageError(`--network: not with --allow-domain, --deny-domain or --add-host (they turn on egress through the proxy, with the network otherwise off)`)
    }
    const before = typeof config.network === 'object' && config.network !== null ? (config.network as Record<string, unknown>) : {}
    const listOf = (key: string) => (Array.isArray(before[key]) ? (before[key] as string[]) : [])
    const hostsBefore = typeof before.hosts === 'object' && before.hosts !== null ? (before.hosts as Record<string, string>) : {}
    config.network = { ...before, allow: [...listOf('allow'), ...allow], deny: [...listOf('deny'), ...deny], hosts: { ...hostsBefore, ...hosts } }
  }
  const paths = (flag: string) =>
    list(flag).map((path) => {
      if (path.trim() === '') throw new UsageError(`--${flag}: expected a path, got ""`)
      return path === '~' || path.startsWith('~/') ? path : resolve(path)
    })
  const denyRead = paths('deny-read')
  const allowRead = paths('allow-read')
  if (denyRead.length > 0) config.denyRead = [...((config.denyRead as string[] | undefined) ?? []), ...denyRead]
  if (allowRead.length > 0) config.allowRead = [...((config.allowRead as string[] | undefined) ?? []), ...allowRead]
}

function patternOf(flag: string, pattern: string): string {
  try {
    return checkPattern(pattern, `--${flag}`)
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/** `--add-host NAME:IP` (an IPv6 address after the first colon: `db.test:fd00::5`). */
function parseAddHost(value: string): [string, string] {
  const at = value.indexOf(':')
  const name = at < 0 ? undefined : normalizeHost(value.slice(0, at))
  const address = at < 0 ? '' : value.slice(at + 1).replace(/^\[(.*)\]$/, '$1')
  if (name === undefined || isIP(name) || !isIP(address)) throw new UsageError(`--add-host: expected NAME:IP, got ${JSON.stringify(value)}`)
  return [name, address]
}

/** Which of the four limits a kind takes, and where each goes in its config. */
export type LimitName = 'memory' | 'pids' | 'cpu' | 'tmp'

/** A limit flag's value: its number (bytes, processes, cores), or null for `none`; undefined when absent. */
export function limitValue(name: LimitName, value: unknown): number | null | undefined {
  if (value === undefined) return undefined
  const text = String(value).trim()
  const flag = `--limit-${name}`
  if (text === 'none') return null
  if (name === 'pids') {
    const n = /^\d{1,7}$/.test(text) ? Number(text) : NaN
    if (!(n >= 1)) throw new UsageError(`${flag}: expected a whole number of processes (at least 1) or none, got ${JSON.stringify(value)}`)
    return n
  }
  if (name === 'cpu') {
    const n = /^\d{1,4}(\.\d{1,3})?$/.test(text) ? Number(text) : NaN
    if (!(n >= 0.01 && n <= 4096)) throw new UsageError(`${flag}: expected a number of CPU cores such as 1 or 1.5, or none, got ${JSON.stringify(value)}`)
    return n
  }
  const bytes = parseSize(text)
  const least = name === 'memory' ? 16 * 2 ** 20 : 2 ** 20
  if (bytes === undefined || bytes < least) {
    throw new UsageError(`${flag}: expected a size of at least ${name === 'memory' ? '16M' : '1M'} such as 512M or 4G, or none, got ${JSON.stringify(value)}`)
  }
  return bytes
}

/**
 * The limit flags of the kinds whose config has `limits` (local, sandbox, ssh): each given flag sets
 * (or, with `none`, removes) that key of `config.limits`.
 */
export function applyLimitsConfig(values: Record<string, unknown>, config: Record<string, unknown>, names: readonly LimitName[]): void {
  const limits: Record<string, unknown> = { ...((config.limits as Record<string, unknown> | undefined) ?? {}) }
  let touched = false
  for (const name of names) {
    const value = limitValue(name, values[`limit-${name}`])
    if (value === undefined) continue
    touched = true
    if (value === null) delete limits[name]
    else limits[name] = value
  }
  if (touched) config.limits = limits
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
