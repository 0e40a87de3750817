import { spawnSync } from 'node:child_process'
import { accessSync, closeSync, constants, existsSync, openSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs'
import { delimiter, isAbsolute, join, resolve as resolvePath, sep } from 'node:path'

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

export interface BwrapPlan {
  mode: ConfinedMode
  /** True: keep the host's network; false: a private network namespace (loopback only). */
  network: boolean
  /** Physical path of the workspace root (bound writable in `workspace-write`). */
  workspaceRoot: string
  /** Protected paths inside the workspace root, bound read-only over the writable root (see `gitProtections`). */
  protections: Protection[]
  /** The command's working directory (absolute). */
  workdir: string
  /** Physical path of the working directory. */
  workdirReal: string
  /** Host directories the private /tmp would hide that the command must see, read-only (the spill directory). */
  readOnlyExtras: string[]
}

/** A path kept read-only inside a writable workspace. */
export type Protection = { kind: 'bind'; path: string } | { kind: 'empty-dir'; path: string }

/** True when `path` is `dir` or inside it (both absolute, normalized). */
export function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

/**
 * The bwrap arguments for one command (before `--` and the command). Order matters: bwrap applies
 * the operations in sequence, so every bind of a path under /tmp comes after the private `--tmpfs /tmp`,
 * and the read-only protections come after the writable bind of the workspace.
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
        if (p.kind === 'bind') args.push('--ro-bind', p.path, p.path)
        else args.push('--tmpfs', p.path, '--remount-ro', p.path)
      }
    }
  }
  if (writable && !rootUnderTmp) bindRoot()
  // bwrap leaves /proc/sys writable when it runs as root with no capability to keep (its own check
  // is made without CAP_DAC_OVERRIDE), and many sysctls check only the file mode: cover it.
  args.push('--dev', '/dev', '--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger')
  args.push('--tmpfs', '/tmp')
  // Paths under /tmp are hidden by the private /tmp: bind the ones the command needs again.
  if (rootUnderTmp) bindRoot()
  const workdirVisible = plan.workdirReal === '/tmp' || !isWithin(plan.workdirReal, '/tmp') || (rootUnderTmp && isWithin(plan.workdirReal, root))
  if (!workdirVisible) args.push('--ro-bind', plan.workdirReal, plan.workdirReal)
  for (const extra of plan.readOnlyExtras) {
    if (isWithin(extra, '/tmp') || isWithin(extra, root)) args.push('--ro-bind', extra, extra)
  }
  args.push('--unshare-pid', '--new-session', '--cap-drop', 'ALL')
  if (!plan.network) args.push('--unshare-net')
  args.push('--json-status-fd', String(STATUS_FD), '--chdir', plan.workdir)
  return args
}

/** Gitdirs nested deeper than this (submodules of submodules …) are not searched. */
const MAX_GIT_DEPTH = 4
/** At most this many protections per workspace. */
const MAX_PROTECTIONS = 64

/**
 * The paths of the workspace's git metadata that must stay read-only even in `workspace-write`:
 * they make git run code (`hooks/*`, `core.hooksPath`, `core.fsmonitor`, filters, aliases). For the
 * gitdir of the root (a `.git` directory, or the `gitdir:` of a `.git` file when it lies inside
 * the root) and of its submodules (`modules/*`): `hooks` (an empty read-only directory when it is
 * missing, so that it cannot be created), `config` and `config.worktree` when present.
 */
export function gitProtections(root: string): Protection[] {
  const out: Protection[] = []
  const dotGit = join(root, '.git')
  let gitdir: string | undefined
  try {
    const stat = statSync(dotGit)
    if (stat.isDirectory()) gitdir = realpathSync(dotGit)
    else if (stat.isFile()) {
      const match = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'))
      if (match) gitdir = realpathSync(resolvePath(root, match[1]))
    }
  } catch {
    return out
  }
  if (gitdir && isWithin(gitdir, root)) protectGitdir(gitdir, 0, out)
  return out
}

function protectGitdir(gitdir: string, depth: number, out: Protection[]): void {
  if (out.length >= MAX_PROTECTIONS) return
  const hooks = join(gitdir, 'hooks')
  if (isDirectory(hooks)) out.push({ kind: 'bind', path: hooks })
  else if (!existsSync(hooks)) out.push({ kind: 'empty-dir', path: hooks })
  for (const name of ['config', 'config.worktree']) {
    if (existsSync(join(gitdir, name))) out.push({ kind: 'bind', path: join(gitdir, name) })
  }
  if (depth >= MAX_GIT_DEPTH) return
  const modules = join(gitdir, 'modules')
  if (!isDirectory(modules)) return
  for (const entry of safeReaddir(modules)) {
    const sub = join(modules, entry)
    // A submodule's gitdir has a HEAD; a directory without one only groups nested names (`a/b`).
    if (isDirectory(sub) && existsSync(join(sub, 'HEAD'))) protectGitdir(sub, depth + 1, out)
    else if (isDirectory(sub)) for (const nested of safeReaddir(sub)) {
      const deeper = join(sub, nested)
      if (isDirectory(deeper) && existsSync(join(deeper, 'HEAD'))) protectGitdir(deeper, depth + 1, out)
    }
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

function safeReaddir(path: string): string[] {
  try {
    return readdirSync(path).sort()
  } catch {
    return []
  }
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
  timeoutMs?: number
}): string | undefined {
  const args = bwrapArgs({
    mode: 'read-only',
    network: options.network,
    workspaceRoot: '/',
    protections: [],
    workdir: '/',
    workdirReal: '/',
    readOnlyExtras: [],
  })
  let fd: number
  try {
    fd = openStatusFile(options.statusPath)
  } catch (error) {
    return `cannot create a status file for bwrap: ${(error as Error).message}`
  }
  let result
  try {
    result = spawnSync(options.bwrapPath, [...args, '--', options.shellPath, '--noprofile', '--norc', '-c', 'exit 0'], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
      timeout: options.timeoutMs ?? 15_000,
      encoding: 'utf8',
    })
  } finally {
    closeSync(fd)
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
  return `a test command in the sandbox failed with exit code ${status.exitCode}${said ? `: ${said}` : ''}`
}
