import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'

/**
 * The egress proxy's decisions: which host names a sandboxed command may reach, and which addresses
 * it may never reach unless named explicitly.
 *
 * Patterns: `example.com` matches that name only; `*.example.com` matches every name below it
 * (`a.example.com`, `a.b.example.com`), not `example.com` itself; an IP address matches itself.
 * Names compare case-insensitively, without a trailing dot. A rule set allows a host when no deny
 * pattern matches it and (when the allow list is not empty) an allow pattern does: deny wins. With
 * several rule sets (the server's, a session's), each must allow it: a session narrows, never widens.
 */

/** One list pair, as configured. */
export interface EgressRuleSet {
  /** Allowed host patterns; empty: every host not denied. */
  allow: readonly string[]
  /** Denied host patterns; they win over `allow`. */
  deny: readonly string[]
  /** Whose lists these are, for the refusal text (`the server's`, `the session's`). */
  owner: string
}

/** Why a host was refused. */
export interface Refusal {
  /** The text after "denied: " in the proxy's 403 (names the rule or the list). */
  reason: string
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

/** The name as the rules compare it (lower case, no trailing dot, no IPv6 brackets); undefined when it is no host name or address. */
export function normalizeHost(host: string): string | undefined {
  let name = host.trim().toLowerCase()
  if (name.startsWith('[') && name.endsWith(']')) name = name.slice(1, -1)
  if (isIP(name)) return name
  if (name.endsWith('.')) name = name.slice(0, -1)
  if (name.length === 0 || name.length > 253) return undefined
  return name.split('.').every((label) => LABEL.test(label)) ? name : undefined
}

/** Throws `<what>: expected a host name, *.domain or an IP address, got "<pattern>"` for a bad pattern; else returns it normalized. */
export function checkPattern(pattern: string, what: string): string {
  const wildcard = pattern.startsWith('*.')
  const name = normalizeHost(wildcard ? pattern.slice(2) : pattern)
  if (name === undefined || (wildcard && isIP(name))) throw new Error(`${what}: expected a host name, *.domain or an IP address, got ${JSON.stringify(pattern)}`)
  return wildcard ? `*.${name}` : name
}

/** True when `pattern` (normalized) matches the normalized `host`. */
export function matches(pattern: string, host: string): boolean {
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1))
  return pattern === host
}

/** Checks `host` (normalized) against every rule set; the first refusal, or undefined when all allow it. */
export function refusal(host: string, sets: readonly EgressRuleSet[]): Refusal | undefined {
  for (const set of sets) {
    const denied = set.deny.find((pattern) => matches(pattern, host))
    if (denied !== undefined) return { reason: `${set.owner} deny rule ${denied} matches it` }
    if (set.allow.length > 0 && !set.allow.some((pattern) => matches(pattern, host))) {
      return { reason: `it is not in ${set.owner} allow list (${set.allow.join(', ')})` }
    }
  }
  return undefined
}

/** True when an exact (non-wildcard) allow pattern of every set that has an allow list names `host`. */
export function namedExactly(host: string, sets: readonly EgressRuleSet[]): boolean {
  const withAllow = sets.filter((set) => set.allow.length > 0)
  return withAllow.length > 0 && withAllow.every((set) => set.allow.includes(host))
}

/**
 * Why an address must not be reached unless a rule names it (an exact allow rule for that address,
 * or `--add-host` giving it): the host's own services (loopback, this machine's own interface
 * addresses), link-local (cloud metadata at 169.254.169.254, fd00:ec2::254), unspecified,
 * multicast and broadcast. Undefined for an ordinary address. DNS never leads to these: a name an
 * attacker controls could resolve to 127.0.0.1 (DNS rebinding).
 */
export function protectedAddress(address: string, ownAddresses: ReadonlySet<string> = hostAddresses()): string | undefined {
  const family = isIP(address)
  if (family === 4) return protectedV4(address, ownAddresses)
  if (family !== 6) return 'not an IP address'
  const words = ipv6Words(address)
  if (!words) return 'not an IP address'
  // ::ffff:a.b.c.d and 64:ff9b::a.b.c.d (NAT64) carry an IPv4 address: judged as that address.
  const mapped = words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff
  const nat64 = words[0] === 0x64 && words[1] === 0xff9b && words.slice(2, 6).every((w) => w === 0)
  if (mapped || nat64) {
    const v4 = `${words[6] >> 8}.${words[6] & 255}.${words[7] >> 8}.${words[7] & 255}`
    return protectedV4(v4, ownAddresses)
  }
  if (words.every((w) => w === 0)) return 'the unspecified address'
  if (words.slice(0, 7).every((w) => w === 0) && words[7] === 1) return 'loopback'
  if ((words[0] & 0xffc0) === 0xfe80) return 'link-local'
  if ((words[0] & 0xff00) === 0xff00) return 'multicast'
  if (words[0] === 0xfd00 && words[1] === 0x0ec2 && words.slice(2, 7).every((w) => w === 0) && words[7] === 0x254) return 'cloud metadata'
  if (ownAddresses.has(canonicalV6(words))) return "this machine's own address"
  return undefined
}

function protectedV4(address: string, ownAddresses: ReadonlySet<string>): string | undefined {
  const [a, b] = address.split('.').map(Number)
  if (a === 127) return 'loopback'
  if (a === 0) return 'the unspecified network'
  if (a === 169 && b === 254) return 'link-local (cloud metadata)'
  if (a >= 224) return a === 255 ? 'broadcast' : 'multicast or reserved'
  if (address === '100.100.100.200') return 'cloud metadata'
  if (ownAddresses.has(address)) return "this machine's own address"
  return undefined
}

/** The eight 16-bit words of an IPv6 address (a zone index dropped), or undefined. */
function ipv6Words(address: string): number[] | undefined {
  let text = address.split('%')[0]
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (tail) {
    const [a, b, c, d] = tail[1].split('.').map(Number)
    text = `${text.slice(0, -tail[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, rest] = text.split('::')
  const left = head ? head.split(':') : []
  const right = rest === undefined ? [] : rest ? rest.split(':') : []
  const fill = rest === undefined ? 0 : 8 - left.length - right.length
  const words = [...left, ...Array(Math.max(0, fill)).fill('0'), ...right].map((w) => parseInt(w, 16))
  return words.length === 8 && words.every((w) => w >= 0 && w <= 0xffff) ? words : undefined
}

function canonicalV6(words: number[]): string {
  return words.map((w) => w.toString(16)).join(':')
}

/** This machine's own interface addresses (IPv4 as is, IPv6 as eight full words). */
export function hostAddresses(): Set<string> {
  const own = new Set<string>()
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) {
      if (entry.family === 'IPv4') own.add(entry.address)
      else {
        const words = ipv6Words(entry.address)
        if (words) own.add(canonicalV6(words))
      }
    }
  }
  return own
}
