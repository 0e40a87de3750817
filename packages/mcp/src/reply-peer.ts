import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

/**
 * Who is on the other end of a loopback TCP connection, as the kernel records it. Node has no
 * SO_PEERCRED (and a Unix socket's peer cannot be found through /proc at all: /proc/net/unix lists
 * no peer), but a TCP connection between two local sockets appears twice in /proc/net/tcp{,6}: the
 * row of the client's socket carries the uid that created it and its inode, and the processes
 * holding that inode are found through /proc/<pid>/fd. Nothing here is taken from the client's word.
 */

/** The connection as this server sees it (a `net.Socket`'s addresses). */
export interface ConnectionEnds {
  localAddress?: string
  localPort?: number
  remoteAddress?: string
  remotePort?: number
}

/** The peer: the uid and socket inode of its end, and the processes that hold that socket. */
export interface Peer {
  uid: number
  inode: number
  pids: number[]
}

/**
 * The kernel's record of the client's end of `ends`, or undefined when no local socket is that end
 * (the client is on another machine, or its socket is gone).
 */
export function findPeer(ends: ConnectionEnds): Peer | undefined {
  const want = { address: normalize(ends.remoteAddress), port: ends.remotePort, peerAddress: normalize(ends.localAddress), peerPort: ends.localPort }
  if (want.port === undefined || want.peerPort === undefined) return undefined
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10) continue
      const local = parseEndpoint(fields[1])
      const remote = parseEndpoint(fields[2])
      if (!local || !remote) continue
      if (local.port !== want.port || remote.port !== want.peerPort) continue
      if (local.address !== want.address || remote.address !== want.peerAddress) continue
      const inode = Number(fields[9])
      return { uid: Number(fields[7]), inode, pids: inode > 0 ? holdersOf(inode) : [] }
    }
  }
  return undefined
}

/**
 * The processes holding the socket that listens on 127.0.0.1:`port` (from /proc/net/tcp's LISTEN
 * row), or undefined when none is found: what `dsh-bash reply` checks before it trusts a desk file.
 */
export function listenersOf(port: number): number[] | undefined {
  let text: string
  try {
    text = readFileSync('/proc/net/tcp', 'utf8')
  } catch {
    return undefined
  }
  for (const line of text.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/)
    if (fields.length < 10 || fields[3] !== '0A') continue
    const local = parseEndpoint(fields[1])
    if (local?.port !== port || local.address !== '127.0.0.1') continue
    const inode = Number(fields[9])
    return inode > 0 ? holdersOf(inode) : undefined
  }
  return undefined
}

/** The processes with an open descriptor on socket `inode` (those this process may look into). */
function holdersOf(inode: number): number[] {
  const target = `socket:[${inode}]`
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${entry}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${entry}/fd/${fd}`) === target) {
          pids.push(Number(entry))
          break
        }
      } catch {
        // Closed meanwhile.
      }
    }
  }
  return pids
}

/** `0100007F:1F90` (tcp) or 32 hex digits + port (tcp6) → address and port. */
function parseEndpoint(text: string): { address: string; port: number } | undefined {
  const [hex, portHex] = text.split(':')
  if (!hex || !portHex) return undefined
  const port = parseInt(portHex, 16)
  // Each 32-bit word is in the host's byte order (little-endian on every Linux this runs on).
  const bytes: number[] = []
  for (let w = 0; w < hex.length; w += 8) {
    const word = hex.slice(w, w + 8)
    for (let b = 6; b >= 0; b -= 2) bytes.push(parseInt(word.slice(b, b + 2), 16))
  }
  if (bytes.length === 4) return { address: bytes.join('.'), port }
  if (bytes.length !== 16) return undefined
  // IPv4-mapped (::ffff:a.b.c.d) reads as the IPv4 address, as Node may name it either way.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return { address: bytes.slice(12).join('.'), port }
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16))
  return { address: groups.join(':'), port }
}

/** An address as `parseEndpoint` writes it: IPv4 dotted, IPv6 as eight unpadded hex groups. */
function normalize(address: string | undefined): string | undefined {
  if (address === undefined) return undefined
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1]
  if (!address.includes(':')) return address
  const [head, tail = ''] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left
  return groups.map((g) => parseInt(g, 16).toString(16)).join(':')
}

/** The environment variable the local executor's marker containment gives every command (bash-kit's MARKER_VARIABLE). */
export const EXECUTOR_MARKER = 'DSH_BASH_TASK'

/** A command cgroup of a local executor: `<the server's cgroup>/dsh-bash-<server pid>-<random>/<label>-<n>` (bash-local's CgroupManager). */
const EXECUTOR_CGROUP = /(^|\/)dsh-bash-\d+-[a-z0-9]+\//

/**
 * Why process `pid` counts as a command a dsh-bash server runs, or undefined when nothing says so:
 * it descends from `serverPid` (strictly); it is in a local executor's command cgroup (any server's: the
 * kernel keeps it there through `setsid`, double forks and a cleared environment); or it carries the
 * executor's marker variable (the `marker` containment's; any server's). A process whose /proc
 * entries cannot be read counts too: it cannot be told apart.
 */
export function commandOfServer(pid: number, serverPid = process.pid): string | undefined {
  let cgroup: string
  try {
    cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
  } catch {
    return `cannot read /proc/${pid}`
  }
  const unified = cgroup.split('\n').find((line) => line.startsWith('0::'))
  if (unified && EXECUTOR_CGROUP.test(`${unified.slice(3)}/`.replace(/\/+$/, '/'))) return `process ${pid} is in a command cgroup of a dsh-bash executor`
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
    if (environ.split('\0').some((entry) => entry.startsWith(`${EXECUTOR_MARKER}=`))) return `process ${pid} carries ${EXECUTOR_MARKER}, the mark of a dsh-bash command`
  } catch {
    return `cannot read /proc/${pid}/environ`
  }
  // Up the parent chain, from the parent (the server itself is no command of its own: a library
  // host may answer through its own desk); a loop guard against a chain that changes while read.
  let current = parentOf(pid)
  for (let hops = 0; hops < 4096 && current !== undefined && current > 1; hops++) {
    if (current === serverPid) return `process ${pid} was started by this server`
    current = parentOf(current)
  }
  return undefined
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name in parentheses may hold spaces and parentheses: the fields follow its last `)`.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(rest[1])
  } catch {
    return undefined
  }
}
