import { createHash, createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { sshErrors } from './errors.js'

/** `SHA256:<unpadded base64>` of a raw public key blob, as `ssh-keygen -l` prints it. */
export function fingerprintOf(blob: Buffer): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`
}

/** The key type named at the start of a public key blob (`ssh-ed25519`, …). */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return 'unknown'
  const length = blob.readUInt32BE(0)
  if (length > blob.length - 4 || length > 64) return 'unknown'
  return blob.subarray(4, 4 + length).toString('latin1')
}

/** One usable line of a known_hosts file. */
interface KnownHostEntry {
  marker: '' | '@revoked' | '@cert-authority'
  patterns: string
  keyType: string
  blob: Buffer
}

/** The verdict on a host key. */
export type HostKeyVerdict = { ok: true } | { ok: false; reason: string }

/** How a host's key is verified: against a pinned fingerprint or a known_hosts file. */
export interface HostKeyPolicy {
  /** Host key algorithms to offer, when the policy knows which keys are acceptable. */
  algorithms(): string[] | undefined
  verify(blob: Buffer): HostKeyVerdict
}

export class FingerprintPolicy implements HostKeyPolicy {
  private readonly expected: string

  constructor(fingerprint: string) {
    this.expected = fingerprint.replace(/=+$/, '')
  }

  algorithms(): undefined {
    return undefined
  }

  verify(blob: Buffer): HostKeyVerdict {
    const got = fingerprintOf(blob)
    if (got === this.expected) return { ok: true }
    return {
      ok: false,
      reason: `the host key (${keyTypeOf(blob)} ${got}) does not match the pinned fingerprint ${this.expected}; refusing to connect`,
    }
  }
}

/**
 * Verifies against an OpenSSH known_hosts file (plain or hashed host names, `[host]:port` for
 * ports other than 22, comma lists, `*`/`?` wildcards, `!` negation, `@revoked`). The file is read
 * at every connection, so edits apply to the next one. `@cert-authority` lines are ignored
 * (certificates are not supported).
 */
export class KnownHostsPolicy implements HostKeyPolicy {
  constructor(
    private readonly path: string,
    private readonly host: string,
    private readonly port: number,
  ) {}

  private entries(): KnownHostEntry[] {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (error) {
      throw sshErrors.knownHostsUnreadable(this.path, (error as Error).message)
    }
    const names = this.port === 22 ? [this.host] : [`[${this.host}]:${this.port}`]
    const found: KnownHostEntry[] = []
    for (const raw of text.split('\n')) {
      const line = raw.trim()
      if (line === '' || line.startsWith('#')) continue
      const fields = line.split(/\s+/)
      let marker: KnownHostEntry['marker'] = ''
      if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields.shift() as KnownHostEntry['marker']
      if (fields.length < 3) continue
      const [patterns, keyType, base64] = fields
      if (!names.some((name) => hostMatches(patterns, name))) continue
      const blob = Buffer.from(base64, 'base64')
      if (blob.length === 0) continue
      found.push({ marker, patterns, keyType, blob })
    }
    return found
  }

  algorithms(): string[] | undefined {
    let entries: KnownHostEntry[]
    try {
      entries = this.entries().filter((e) => e.marker === '')
    } catch {
      return undefined // verify() reports the unreadable file.
    }
    const algos: string[] = []
    for (const entry of entries) {
      for (const algo of ALGORITHMS_FOR_KEY_TYPE[entry.keyType] ?? []) if (!algos.includes(algo)) algos.push(algo)
    }
    return algos.length > 0 ? algos : undefined
  }

  verify(blob: Buffer): HostKeyVerdict {
    let entries: KnownHostEntry[]
    try {
      entries = this.entries()
    } catch (error) {
      return { ok: false, reason: (error as Error).message }
    }
    const described = `${keyTypeOf(blob)} ${fingerprintOf(blob)}`
    if (entries.some((e) => e.marker === '@revoked' && e.blob.equals(blob))) {
      return { ok: false, reason: `the host key (${described}) is marked @revoked in ${this.path}; refusing to connect` }
    }
    const plain = entries.filter((e) => e.marker === '')
    if (plain.some((e) => e.blob.equals(blob))) return { ok: true }
    if (plain.length > 0) {
      return {
        ok: false,
        reason:
          `the host key has CHANGED: the server offered ${described}, but ${this.path} lists another key ` +
          `(${plain.map((e) => `${e.keyType} ${fingerprintOf(e.blob)}`).join(', ')}); refusing to connect ` +
          '(possible man-in-the-middle attack; if the key was really replaced, update known_hosts)',
      }
    }
    return {
      ok: false,
      reason: `the host is unknown: ${this.path} has no key for it (the server offered ${described}); refusing to connect (add it with ssh-keyscan after checking the fingerprint)`,
    }
  }
}

/** ssh2 host key algorithm names for a known_hosts key type. */
const ALGORITHMS_FOR_KEY_TYPE: Record<string, string[]> = {
  'ssh-ed25519': ['ssh-ed25519'],
  'ecdsa-sha2-nistp256': ['ecdsa-sha2-nistp256'],
  'ecdsa-sha2-nistp384': ['ecdsa-sha2-nistp384'],
  'ecdsa-sha2-nistp521': ['ecdsa-sha2-nistp521'],
  'ssh-rsa': ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'],
}

/** OpenSSH host pattern list matching: the name matches a positive pattern and no negated one. */
export function hostMatches(patterns: string, name: string): boolean {
  if (patterns.startsWith('|1|')) return hashedMatches(patterns, name)
  let matched = false
  for (const pattern of patterns.split(',')) {
    if (pattern.startsWith('!')) {
      if (globMatches(pattern.slice(1), name)) return false
    } else if (globMatches(pattern, name)) {
      matched = true
    }
  }
  return matched
}

function hashedMatches(entry: string, name: string): boolean {
  const [, , salt, hash] = entry.split('|')
  if (!salt || !hash) return false
  const digest = createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64')
  return digest === hash
}

function globMatches(pattern: string, name: string): boolean {
  const regex = new RegExp(
    `^${pattern
      .split('')
      .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[\\^$.|+()[\]{}]/g, '\\$&')))
      .join('')}$`,
    'i',
  )
  return regex.test(name)
}
