/**
 * The seccomp filter every confined command gets (`bwrap --seccomp FD`): a classic-BPF program,
 * built here byte for byte, that refuses with EPERM
 *
 * - the kernel keyring calls `add_key`, `request_key` and `keyctl`: a user namespace does not
 *   separate the user keyring here (measured: a key added in `bwrap --unshare-user` was listed in
 *   the host's /proc/keys), so only a filter keeps commands out of the host's keyrings;
 * - `io_uring_setup`, `io_uring_enter`, `io_uring_register`: io_uring performs socket and file
 *   operations without the system calls this filter inspects;
 * - `socket` of any address family but an allowed few (an allow-list, not a deny-list: the kernel
 *   has some 45 families, several of them not network-namespaced, and asking for one may load its
 *   module): with the network off only AF_INET, AF_INET6 and AF_NETLINK, which the private network
 *   namespace confines to its own loopback and its own interfaces; with the network on AF_UNIX
 *   too. Everything else fails, notably AF_VSOCK (not namespaced: it reaches the hypervisor's
 *   services from any namespace), AF_UNIX with the network off (a socket *file* on the read-only
 *   host file system, `/run/docker.sock`, D-Bus, an SSH agent, can still be connected to),
 *   AF_PACKET, AF_BLUETOOTH (init namespace only: reachable with the network on), AF_ALG. `socketpair`
 *   stays allowed for AF_UNIX only (it connects to nothing outside the command; no other family
 *   that supports it is needed);
 * - the terminal ioctls `TIOCSTI` (push bytes into a terminal's input, as if typed) and
 *   `TIOCLINUX` (the console's selection can be pasted the same way): the sandbox has no
 *   controlling terminal already (`bwrap --new-session`), which the kernel requires for TIOCSTI
 *   without CAP_SYS_ADMIN, but an interactive command's terminal is inherited as fds 0-2, and a
 *   kernel with `dev.tty.legacy_tiocsti=1` (this one) allows it: refused here too, whatever the
 *   kernel (the command word is compared on its low 32 bits, as the kernel reads it).
 *
 * and kills any process that makes a system call of another architecture (x32 system calls,
 * 32-bit programs): their numbers differ, so the filter could not check them.
 */

/** `struct seccomp_data` offsets. */
const NR_OFFSET = 0
const ARCH_OFFSET = 4
const ARG0_OFFSET = 16 // low 32 bits of args[0] (little-endian)
const ARG1_OFFSET = 24 // low 32 bits of args[1]

const BPF_LD_W_ABS = 0x20
const BPF_JEQ_K = 0x15
const BPF_JGE_K = 0x35
const BPF_RET_K = 0x06

const SECCOMP_RET_KILL_PROCESS = 0x80000000
const SECCOMP_RET_ERRNO = 0x00050000
const SECCOMP_RET_ALLOW = 0x7fff0000
const EPERM = 1
/** Address families (`linux/socket.h`, the same on every architecture). */
const AF_UNIX = 1
const AF_INET = 2
const AF_INET6 = 10
const AF_NETLINK = 16
/** Terminal ioctls that inject input (asm-generic values, the same on x86_64 and arm64). */
const TIOCSTI = 0x5412
const TIOCLINUX = 0x541c
/** x32 system calls on x86_64 carry this bit in their number. */
const X32_SYSCALL_BIT = 0x40000000

interface ArchTable {
  /** AUDIT_ARCH_* */
  audit: number
  keyring: number[]
  ioUring: number[]
  socket: number
  socketpair: number
  ioctl: number
  /** True on x86_64, where x32 calls share the architecture value. */
  x32Bit: boolean
}

/** System call numbers of the architectures Node.js runs on here. */
const ARCHES: Record<string, ArchTable> = {
  x64: { audit: 0xc000003e, keyring: [248, 249, 250], ioUring: [425, 426, 427], socket: 41, socketpair: 53, ioctl: 16, x32Bit: true },
  arm64: { audit: 0xc00000b7, keyring: [217, 218, 219], ioUring: [425, 426, 427], socket: 198, socketpair: 199, ioctl: 29, x32Bit: false },
}

export interface FilterOptions {
  /**
   * Whether the command keeps the host's network. Off: `socket` only for AF_INET, AF_INET6 and
   * AF_NETLINK (a private network namespace holds them); on: AF_UNIX too.
   */
  network: boolean
  /** `process.arch` by default. */
  arch?: string
}

type Instruction = { code: number; k: number; jt?: string; jf?: string; label?: string }

/**
 * The filter as the bytes of a `struct sock_filter[]` (8 bytes per instruction, little-endian).
 * Throws for an architecture it has no system call table for.
 */
export function buildSeccompFilter(options: FilterOptions): Buffer {
  const arch = options.arch ?? process.arch
  const table = ARCHES[arch]
  if (!table) throw new Error(`no seccomp filter for the ${arch} architecture (supported: ${Object.keys(ARCHES).join(', ')})`)
  const program: Instruction[] = [
    { code: BPF_LD_W_ABS, k: ARCH_OFFSET },
    { code: BPF_JEQ_K, k: table.audit, jt: 'native', jf: 'kill' },
    { label: 'native', code: BPF_LD_W_ABS, k: NR_OFFSET },
  ]
  if (table.x32Bit) program.push({ code: BPF_JGE_K, k: X32_SYSCALL_BIT, jt: 'kill', jf: 'next' })
  for (const nr of [...table.keyring, ...table.ioUring]) program.push({ code: BPF_JEQ_K, k: nr, jt: 'deny', jf: 'next' })
  program.push({ code: BPF_JEQ_K, k: table.ioctl, jt: 'ioctl', jf: 'next' })
  program.push({ code: BPF_JEQ_K, k: table.socket, jt: 'socket', jf: 'next' })
  program.push({ code: BPF_JEQ_K, k: table.socketpair, jt: 'socketpair', jf: 'allow' })
  // The family is an int: the kernel reads the low 32 bits of args[0], and so does the filter.
  const families = options.network ? [AF_INET, AF_INET6, AF_NETLINK, AF_UNIX] : [AF_INET, AF_INET6, AF_NETLINK]
  program.push(
    { label: 'allow', code: BPF_RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'ioctl', code: BPF_LD_W_ABS, k: ARG1_OFFSET },
    { code: BPF_JEQ_K, k: TIOCSTI, jt: 'deny', jf: 'next' },
    { code: BPF_JEQ_K, k: TIOCLINUX, jt: 'deny', jf: 'allow-ioctl' },
    { label: 'allow-ioctl', code: BPF_RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'socket', code: BPF_LD_W_ABS, k: ARG0_OFFSET },
    ...families.map((family, i): Instruction => ({ code: BPF_JEQ_K, k: family, jt: 'allow-socket', jf: i === families.length - 1 ? 'deny' : 'next' })),
    { label: 'socketpair', code: BPF_LD_W_ABS, k: ARG0_OFFSET },
    { code: BPF_JEQ_K, k: AF_UNIX, jt: 'allow-socket', jf: 'deny' },
    { label: 'allow-socket', code: BPF_RET_K, k: SECCOMP_RET_ALLOW },
    { label: 'deny', code: BPF_RET_K, k: SECCOMP_RET_ERRNO | EPERM },
    { label: 'kill', code: BPF_RET_K, k: SECCOMP_RET_KILL_PROCESS },
  )
  return assemble(program)
}

/** Resolves the symbolic jumps (`next`: the following instruction) and encodes the program. */
function assemble(program: Instruction[]): Buffer {
  const at = new Map<string, number>()
  program.forEach((ins, index) => ins.label && at.set(ins.label, index))
  const out = Buffer.alloc(program.length * 8)
  program.forEach((ins, index) => {
    const offset = (target: string | undefined): number => {
      if (target === undefined || target === 'next') return 0
      const to = at.get(target)
      if (to === undefined || to <= index) throw new Error(`seccomp assembler: bad jump target ${target}`)
      const distance = to - index - 1
      if (distance > 255) throw new Error('seccomp assembler: jump too far')
      return distance
    }
    out.writeUInt16LE(ins.code, index * 8)
    out.writeUInt8(offset(ins.jt), index * 8 + 2)
    out.writeUInt8(offset(ins.jf), index * 8 + 3)
    out.writeUInt32LE(ins.k >>> 0, index * 8 + 4)
  })
  return out
}
