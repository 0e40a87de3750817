import { spawnSync } from 'node:child_process'
import { accessSync, closeSync, constants, openSync, readFileSync, statSync, unlinkSync } from 'node:fs'
import { delimiter, isAbsolute, join, resolve as resolvePath } from 'node:path'
import { type GitProtection, isWithin } from './git.js'
import type { ReadMask } from './read-masks.js'

/**
 * The file descriptor bwrap writes its JSON status to (`--json-status-fd`), a private file: bwrap
 * writes `{ "child-pid": N, … }` once it has cloned the sandbox, and `{ "exit-code": N }` only when
 * the command was really executed. No `exit-code` line means that bwrap itself failed.
 */
export const STATUS_FD = 3

/** Creates a status file (exclusive, 0600) and returns its descriptor, opened for writing. */
export function openStatusFile(path: string): number {
  return openSync(path, 'wx', 0o600)
}

/** The confined modes (danger-full-access runs without bwrap). */
export type ConfinedMode = 'read-only' | 'workspace-write'

/** The descriptor bwrap reads the seccomp program from (`--seccomp`), after the status file. */
export const SECCOMP_FD = 4
/** The first descriptor of the git protections' sources (`--bind-fd`), after the seccomp program. */
export const FIRST_PROTECTION_FD = 5

export interface BwrapPlan {
  mode: ConfinedMode
  /** True: keep the host's network; false: a private network namespace (loopback only). */
  network: boolean
  /** Physical path of the workspace root (bound writable in `workspace-write`). */
  workspaceRoot: string
  /** Git metadata mounts inside the workspace root, applied after its writable bind (see `git.ts`). */
  protections: GitProtection[]
  /** The command's working directory (absolute; it must be visible in the sandbox, see `privacy.ts`). */
  workdir: string
  /**
   * Paths that must show nothing (the executor's private directories, at every path a mount
   * makes them reachable): each is covered by an empty tmpfs after every bind. Those under /tmp
   * outside the workspace root are hidden by the private /tmp already and are left out.
   */
  hidden: string[]
  /**
   * Host directories the command must see, read-only, bound after the masks (the owner's own
   * spill directory, inside a hidden one).
   */
  readOnlyExtras: string[]
  /**
   * True for an interactive command (its own pseudo-terminal as fds 0-2 and controlling terminal):
   * no `--new-session`, so that the terminal stays the command's controlling terminal and Ctrl-C,
   * Ctrl-Z, Ctrl-\ reach it as signals. What `--new-session` guards against (TIOCSTI: pushing
   * input into the controlling terminal, CVE-2017-5226) is refused by the seccomp filter instead,
   * as Flatpak does, and that terminal is the command's own: nothing outside the sandbox reads it.
   */
  terminal?: boolean
  /** Unreadable mounts over secrets (`read-masks.ts`), applied after every other mount. */
  masks?: readonly ReadMask[]
  /** The empty file of mode 0000 bound over each masked file. */
  unreadableFile?: string
  /** Size of the private `/tmp` and `/dev/shm` in bytes (`limits.tmp`); unset: the kernel's default (half the RAM). */
  tmpBytes?: number
  /**
   * Proxy mode (`network` must be false): the bridge (`native/netbridge.c`) and the proxy's Unix
   * socket are bound into the private /tmp, the proxy variables are set, and bwrap gets no
   * `--seccomp`: the bridge applies the program (fd `SECCOMP_FD`) to the command itself (see
   * `bridgeCommand`).
   */
  proxy?: ProxyPlan
}

/** What proxy mode binds into a sandbox. */
export interface ProxyPlan {
  /** The netbridge binary on the host. */
  bridgePath: string
  /** This launch's proxy socket on the host (in the executor's private directory). */
  socketPath: string
  /** Variables set inside (the proxy settings of common tools); see `proxyEnvironment`. */
  env: Readonly<Record<string, string>>
}

/** Where proxy mode puts its two files inside the sandbox (in the private /tmp). */
export const BRIDGE_DIR = '/tmp/.dsh-bash'
export const BRIDGE_IN_SANDBOX = `${BRIDGE_DIR}/netbridge`
export const PROXY_SOCKET_IN_SANDBOX = `${BRIDGE_DIR}/proxy.sock`
/** The port the bridge listens on, on the sandbox's own 127.0.0.1. */
export const PROXY_PORT = 3128

/** The command prefix of proxy mode: the bridge, which runs the rest (`-- <command>`) filtered. */
export function bridgeCommand(): string[] {
  return [BRIDGE_IN_SANDBOX, '--port', String(PROXY_PORT), '--proxy', PROXY_SOCKET_IN_SANDBOX, '--seccomp', String(SECCOMP_FD), '--']
}

/**
 * The proxy settings a sandboxed command gets in proxy mode: the usual variables in both cases
 * (curl, wget, git, pip, Python's requests, Go, Rust's reqwest and cargo, npm, yarn, Node 24's
 * fetch with NODE_USE_ENV_PROXY), SOCKS5 with remote name resolution for ALL_PROXY, and the
 * sandbox's own loopback exempt. `inherited` is the environment the command would get otherwise:
 * git's config variables are added only where it sets none of its own.
 */
export function proxyEnvironment(inherited: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const http = `http://127.0.0.1:${PROXY_PORT}`
  const socks = `socks5h://127.0.0.1:${PROXY_PORT}`
  const noProxy = 'localhost,127.0.0.1,::1'
  const env: Record<string, string> = {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    ALL_PROXY: socks,
    NO_PROXY: noProxy,
    http_proxy: http,
    https_proxy: http,
    all_proxy: socks,
    no_proxy: noProxy,
    npm_config_proxy: http,
    npm_config_https_proxy: http,
    npm_config_noproxy: noProxy,
    YARN_HTTP_PROXY: http,
    YARN_HTTPS_PROXY: http,
    PIP_PROXY: http,
    CARGO_HTTP_PROXY: http,
    NODE_USE_ENV_PROXY: '1',
  }
  if (inherited.GIT_CONFIG_COUNT === undefined) Object.assign(env, { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.proxy', GIT_CONFIG_VALUE_0: http })
  return env
}

export { isWithin }

/**
 * The bwrap arguments for one command (before `--` and the command). Order matters: bwrap applies
 * the operations in sequence, so every bind of a path under /tmp comes after the private `--tmpfs /tmp`,
 * and the git protections come after the writable bind of the workspace.
 */
export function bwrapArgs(plan: BwrapPlan): string[] {
  const args = ['--ro-bind', '/', '/']
  const writable = plan.mode === 'workspace-write'
  const root = plan.workspaceRoot
  const rootUnderTmp = isWithin(root, '/tmp')
  const bindRoot = () => {
    args.push(writable ? '--bind' : '--ro-bind', root, root)
    if (writable) {
      for (const p of plan.protections) {
        if (p.fd === undefined) args.push(p.kind === 'pin' ? '--bind' : '--ro-bind', p.path, p.path)
        else args.push(p.kind === 'pin' ? '--bind-fd' : '--ro-bind-fd', String(p.fd), p.path)
      }
    }
  }
  if (writable && !rootUnderTmp) bindRoot()
  // bwrap leaves /proc/sys writable when it runs as root with no capability to keep (its own check
  // is made without CAP_DAC_OVERRIDE), and many sysctls check only the file mode: cover it.
  args.push('--dev', '/dev', '--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger')
  // The private /tmp and /dev/shm (bwrap's own tmpfs in its /dev, replaced) get the size limit.
  const size = plan.tmpBytes === undefined ? [] : ['--size', String(plan.tmpBytes)]
  if (plan.tmpBytes !== undefined) args.push(...size, '--tmpfs', '/dev/shm')
  args.push(...size, '--tmpfs', '/tmp')
  // Paths under /tmp are hidden by the private /tmp: bind the ones the command needs again.
  if (rootUnderTmp) bindRoot()
  // After every bind that could show them: the executor's private directories, emptied…
  for (const path of plan.hidden) {
    if (!isWithin(path, '/tmp') || isWithin(path, root)) args.push('--tmpfs', path)
  }
  // …but for what the command needs of them.
  for (const extra of plan.readOnlyExtras) args.push('--ro-bind', extra, extra)
  // The secrets, unreadable, after every mount that could show them (read-masks.ts).
  for (const mask of plan.masks ?? []) {
    if (mask.kind === 'file') {
      if (!plan.unreadableFile) throw new Error('a file mask needs the unreadable file')
      args.push('--ro-bind', plan.unreadableFile, mask.path)
      continue
    }
    args.push('--perms', mask.inner.length > 0 ? '0111' : '0000', '--tmpfs', mask.path)
    for (const lifted of mask.inner) args.push('--ro-bind', lifted, lifted)
    args.push('--remount-ro', mask.path)
  }
  if (plan.proxy) {
    if (plan.network) throw new Error('proxy mode needs the private network namespace')
    args.push('--ro-bind', plan.proxy.bridgePath, BRIDGE_IN_SANDBOX, '--ro-bind', plan.proxy.socketPath, PROXY_SOCKET_IN_SANDBOX)
    for (const [name, value] of Object.entries(plan.proxy.env)) args.push('--setenv', name, value)
  }
  // The namespaces (see the README, "Namespaces"): pid, ipc, uts and cgroup always, net when the
  // network is off; no user namespace.
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', ...(plan.terminal ? [] : ['--new-session']), '--cap-drop', 'ALL')
  if (!plan.network) args.push('--unshare-net')
  // In proxy mode the bridge applies the program to the command (it must create Unix sockets itself).
  if (!plan.proxy) args.push('--seccomp', String(SECCOMP_FD))
  args.push('--json-status-fd', String(STATUS_FD), '--chdir', plan.workdir)
  return args
}

/** Finds an executable: an absolute (or relative) path as is, else a name in PATH. Undefined when absent. */
export function lookupExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  const candidates = isAbsolute(name) || name.includes('/') ? [resolvePath(name)] : path.split(delimiter).filter(Boolean).map((dir) => join(dir, name))
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      if (statSync(candidate).isFile()) return candidate
    } catch {
      // Try the next one.
    }
  }
  return undefined
}

/** What bwrap wrote to its status file. */
export interface BwrapStatus {
  /** Host pid of the sandbox's first process (the PID namespace's init). */
  childPid?: number
  /** The command's exit status as bwrap reports it (128+N for a signal death); only when the command ran. */
  exitCode?: number
}

/** Reads a status file; a missing or unreadable file reads as empty. */
export function readStatus(path: string): BwrapStatus {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return {}
  }
  const status: BwrapStatus = {}
  const pid = /"child-pid"\s*:\s*(\d+)/.exec(text)
  if (pid) status.childPid = Number(pid[1])
  const code = /"exit-code"\s*:\s*(-?\d+)/.exec(text)
  if (code) status.exitCode = Number(code[1])
  return status
}

export function removeFile(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // Gone already.
  }
}

/**
 * What bwrap said about a failure, from a stderr prefix: its own messages (`bwrap: …`) joined, else
 * the first three lines; empty when stderr is blank.
 */
export function bwrapSaid(stderr: string): string {
  const own = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('bwrap: '))
    .join('; ')
  return own || stderr.trim().split('\n').slice(0, 3).join('; ')
}

/**
 * Runs bwrap once with the confinement every command gets and `true` inside. Returns undefined when
 * it works, else the reason (bwrap's own message when it printed one).
 */
export function probeBwrap(options: {
  bwrapPath: string
  shellPath: string
  network: boolean
  statusPath: string
  /** Opens a new descriptor of the compiled seccomp filter (see `seccomp-fd.ts`), handed to bwrap as fd 4. */
  openFilter: () => number
  /** Proxy mode: the bridge runs the test command, which checks that the filter is in force (`Seccomp: 2`). */
  proxy?: ProxyPlan
  timeoutMs?: number
}): string | undefined {
  const args = bwrapArgs({
    mode: 'read-only',
    network: options.network,
    workspaceRoot: '/',
    protections: [],
    workdir: '/',
    hidden: [],
    readOnlyExtras: [],
    ...(options.proxy ? { proxy: options.proxy } : {}),
  })
  const test = options.proxy
    ? [...bridgeCommand(), options.shellPath, '--noprofile', '--norc', '-c', 'while read -r k v; do [[ $k == Seccomp: && $v == 2 ]] && exit 0; done < /proc/self/status; exit 3']
    : [options.shellPath, '--noprofile', '--norc', '-c', 'exit 0']
  let fd: number
  try {
    fd = openStatusFile(options.statusPath)
  } catch (error) {
    return `cannot create a status file for bwrap: ${(error as Error).message}`
  }
  let result
  let filterFd: number | undefined
  try {
    filterFd = options.openFilter()
    result = spawnSync(options.bwrapPath, [...args, '--', ...test], {
      stdio: ['ignore', 'ignore', 'pipe', fd, filterFd],
      timeout: options.timeoutMs ?? 15_000,
      encoding: 'utf8',
    })
  } catch (error) {
    removeFile(options.statusPath)
    return `cannot open the seccomp filter for bwrap: ${(error as Error).message}`
  } finally {
    closeSync(fd)
    if (filterFd !== undefined) closeSync(filterFd)
  }
  const status = readStatus(options.statusPath)
  removeFile(options.statusPath)
  if (result.error) return `bwrap could not be run: ${result.error.message}`
  if (result.status === 0 && status.exitCode === 0) return undefined
  const said = bwrapSaid(result.stderr ?? '')
  if (result.signal) return `bwrap was killed by ${result.signal} while creating a test sandbox`
  if (status.exitCode === undefined) {
    return `bwrap cannot create a sandbox here (user namespaces may be disabled): ${said || `exit code ${result.status}`}`
  }
  if (options.proxy && status.exitCode === 3) return 'the network bridge of egress by domain did not put the command under the seccomp program (Seccomp is not 2 in /proc/self/status)'
  return `a test command in the sandbox failed with exit code ${status.exitCode}${said ? `: ${said}` : ''}`
}
