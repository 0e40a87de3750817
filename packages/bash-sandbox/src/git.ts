import { closeSync, constants as fsConstants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve as resolvePath, sep } from 'node:path'

/**
 * Which git metadata `workspace-write` keeps read-only, and how (see the README, "Git metadata").
 *
 * Design: every piece of git metadata that can make git run code is read-only as a whole, by
 * mounts that cannot be moved: a read-only bind of the whole gitdir (hooks, config,
 * config.worktree, commondir, info/, worktrees/*, modules/*), of every `.git` *file* that points
 * git somewhere (a linked worktree's, a submodule's), and an empty read-only directory where such a
 * `.git` is missing (so that none can be created). A bind mount cannot be renamed or removed
 * (EBUSY), and each directory between the workspace root and a protected path is *pinned* by a
 * writable bind of itself, so that no parent can be renamed away with the protection inside it.
 */

/**
 * One entry of the plan, applied by bwrap in order after the writable bind of the workspace root:
 * `pin`, a writable bind of a directory onto itself (it can no longer be renamed or removed);
 * `read-only`, a read-only bind of an existing path onto itself. `fd`, when set, is the descriptor
 * number (in bwrap) of the source, opened and checked by the executor (`--bind-fd`): a path that a
 * running command swaps for a symbolic link meanwhile cannot redirect the mount to a host path.
 */
export interface GitProtection {
  kind: 'pin' | 'read-only'
  path: string
  fd?: number
}

/** What the workspace's git metadata needs: existing paths to keep read-only, missing ones to guard. */
export interface GitPlan {
  /** Existing files and directories to bind read-only. */
  readOnly: string[]
  /** Paths of `.git` entries that do not exist: an empty read-only directory is put there. */
  missing: string[]
}

/** Gitdirs nested deeper than this (submodules of submodules …) are not searched. */
const MAX_GIT_DEPTH = 4
/** At most this many paths per workspace (read-only and missing together). */
export const MAX_GIT_PATHS = 64

/** True when `path` is `dir` or inside it (both absolute, normalized). */
export function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

const strictlyWithin = (path: string, dir: string) => path !== dir && isWithin(path, dir)

/**
 * Finds the git metadata of the workspace `root` (a physical path). Only paths strictly inside the
 * root matter: everything else is read-only anyway. Reads only what is itself read-only inside the
 * sandbox (the gitdirs and `.git` files), plus `.gitmodules`, which can only add paths.
 */
export function findGitMetadata(root: string): GitPlan {
  const readOnly = new Set<string>()
  const missing = new Set<string>()
  /** `guard`: a missing path gets a guard (only for paths named by read-only metadata). */
  const add = (found: string | undefined, guard = true) => {
    // A mount follows a symbolic link: protect its target (a dangling link is left alone).
    const path = found && isSymlink(found) ? real(found, false) : found
    if (!path || !strictlyWithin(path, root) || readOnly.size + missing.size >= MAX_GIT_PATHS) return
    if (exists(path)) readOnly.add(path)
    else if (guard) missing.add(path)
  }
  /** A work tree's `.git` entry (dir, file or missing) and the gitdir it leads to. */
  const workTree = (dir: string, depth: number) => {
    const dotGit = join(dir, '.git')
    if (!strictlyWithin(dotGit, root)) return
    let stat
    try {
      stat = lstatSync(dotGit)
    } catch {
      add(dotGit)
      return
    }
    if (stat.isDirectory()) {
      add(dotGit)
      gitdir(dotGit, depth)
    } else if (stat.isFile()) {
      add(dotGit)
      const target = gitfileTarget(dotGit)
      if (target) {
        add(target)
        gitdir(target, depth)
      }
    } else if (stat.isSymbolicLink()) {
      // The link itself cannot be protected (a mount follows it): protect where it leads.
      const target = real(dotGit)
      if (target) {
        add(target)
        gitdir(target, depth)
      }
    }
  }
  /** What a gitdir points to: its common dir, its linked worktrees, its submodules' work trees, hooksPath. */
  const gitdir = (dir: string, depth: number) => {
    const common = readLine(join(dir, 'commondir'))
    if (common) add(real(resolvePath(dir, common)))
    const hooksPath = configValue(join(dir, 'config'), 'core', 'hookspath')
    if (hooksPath && !hooksPath.startsWith('~')) add(real(resolvePath(dirname(dir), hooksPath)))
    for (const name of list(join(dir, 'worktrees'))) {
      const pointer = readLine(join(dir, 'worktrees', name, 'gitdir'))
      // `gitdir` holds the path of the linked worktree's `.git` file.
      if (pointer && isAbsolute(pointer)) {
        const parent = real(dirname(pointer))
        if (parent) workTree(parent, depth + 1)
      }
    }
    if (depth >= MAX_GIT_DEPTH) return
    for (const module of submoduleGitdirs(join(dir, 'modules'))) {
      const worktree = configValue(join(module, 'config'), 'core', 'worktree')
      if (!worktree) continue
      const tree = real(resolvePath(module, worktree))
      if (tree && strictlyWithin(tree, root)) {
        add(join(tree, '.git'))
        gitdir(module, depth + 1)
      }
    }
  }
  workTree(root, 0)
  // Submodules named by `.gitmodules` (which the command can edit: it only adds protections, and
  // never a guard, which would create directories on the host where it says).
  for (const path of gitmodulesPaths(join(root, '.gitmodules'))) {
    const tree = real(resolvePath(root, path))
    if (tree && strictlyWithin(tree, root)) add(join(tree, '.git'), false)
  }
  const ordered = (set: Set<string>) => [...set].sort()
  // A path inside another read-only path is covered by it.
  const ro = ordered(readOnly).filter((path, _, all) => !all.some((other) => strictlyWithin(path, other)))
  const miss = ordered(missing).filter((path) => !ro.some((other) => strictlyWithin(path, other)))
  return { readOnly: ro, missing: miss }
}

/**
 * The mounts for a plan whose missing paths were created (as empty directories): pins of the
 * directories between the root and each protected path (shallowest first), then the read-only
 * binds. Pins inside a read-only path are left out (it cannot be renamed from inside anyway).
 */
export function gitMounts(root: string, protectedPaths: string[]): GitProtection[] {
  const pins = new Set<string>()
  for (const path of protectedPaths) {
    for (let dir = dirname(path); strictlyWithin(dir, root); dir = dirname(dir)) {
      if (!protectedPaths.some((other) => isWithin(dir, other))) pins.add(dir)
    }
  }
  const byDepth = (a: string, b: string) => a.split(sep).length - b.split(sep).length || a.localeCompare(b)
  return [
    ...[...pins].sort(byDepth).map((path): GitProtection => ({ kind: 'pin', path })),
    ...[...protectedPaths].sort(byDepth).map((path): GitProtection => ({ kind: 'read-only', path })),
  ]
}

function exists(path: string): boolean {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

function real(path: string, allowMissing = true): string | undefined {
  try {
    return realpathSync(path)
  } catch {
    if (!allowMissing) return undefined
    // A path that does not exist yet: resolve its deepest existing ancestor, so that a missing
    // work tree is still found (and guarded).
    for (let dir = dirname(path); dirname(dir) !== dir; dir = dirname(dir)) {
      try {
        return join(realpathSync(dir), relative(dir, path))
      } catch {
        // Go up.
      }
    }
    return undefined
  }
}

/** Git metadata files are small; more than this is not read (nor is anything but a regular file). */
const MAX_METADATA_BYTES = 1024 * 1024

/**
 * Reads a metadata file the way a command cannot exploit: a FIFO placed there (`.gitmodules` is
 * writable) must not block the server, a huge file must not fill its memory. Throws when unreadable.
 */
function readMetadata(path: string): string {
  const fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK)
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw new Error(`${path} is not a regular file`)
    const buffer = Buffer.allocUnsafe(Math.min(stat.size, MAX_METADATA_BYTES))
    let length = 0
    for (let n; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0; ) length += n
    return buffer.subarray(0, length).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

function readLine(path: string): string | undefined {
  try {
    const line = readMetadata(path).split('\n')[0].trim()
    return line || undefined
  } catch {
    return undefined
  }
}

/** The target of a `.git` file (`gitdir: <path>`, relative to the file's directory). */
function gitfileTarget(file: string): string | undefined {
  try {
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(readMetadata(file))
    return match ? real(resolvePath(dirname(file), match[1])) : undefined
  } catch {
    return undefined
  }
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir).sort()
  } catch {
    return []
  }
}

/** Submodule gitdirs under `modules/` (a name may be nested: `modules/a/b`). */
function submoduleGitdirs(modules: string): string[] {
  const out: string[] = []
  const walk = (dir: string, depth: number) => {
    for (const name of list(dir)) {
      const path = join(dir, name)
      if (exists(join(path, 'HEAD'))) out.push(path)
      else if (depth < 3) walk(path, depth + 1)
    }
  }
  walk(modules, 0)
  return out
}

/** A value from a git config file (`[section]` then `key = value`); a simple reader, last one wins. */
export function configValue(file: string, section: string, key: string): string | undefined {
  let text: string
  try {
    text = readMetadata(file)
  } catch {
    return undefined
  }
  let current = ''
  let value: string | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    const header = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]/.exec(line)
    if (header) {
      current = header[1].toLowerCase()
      continue
    }
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*)$/.exec(line)
    if (entry && current === section && entry[1].toLowerCase() === key) value = unquote(entry[2])
  }
  return value
}

function unquote(value: string): string {
  const trimmed = value.replace(/\s+[#;].*$/, '').trim()
  return trimmed.startsWith('"') && trimmed.endsWith('"') ? trimmed.slice(1, -1) : trimmed
}

function gitmodulesPaths(file: string): string[] {
  let text: string
  try {
    text = readMetadata(file)
  } catch {
    return []
  }
  const out: string[] = []
  for (const raw of text.split('\n')) {
    const entry = /^\s*path\s*=\s*(.+?)\s*$/.exec(raw)
    if (entry) out.push(unquote(entry[1]))
  }
  return out.slice(0, MAX_GIT_PATHS)
}
