import { existsSync, readFileSync, readlinkSync, realpathSync } from 'node:fs'
import { basename, dirname, join, posix, resolve } from 'node:path'
import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'
import { isWithin } from './git.js'

/**
 * What a sandboxed command must not see.
 *
 * The executor's own directories (its private directory: every owner's spill files, long scripts,
 * the prelude, bwrap's status files; the pipe pool's) must never be visible or writable inside a
 * sandbox, except the running command's own owner directory (read-only). This module finds every
 * path at which such a directory can be reached (bind mounts show one directory at several
 * places) and states the rules the transform and the executor apply:
 *
 * - a spill directory inside the workspace root (where `workspace-write` commands write) is refused;
 * - a workdir inside a private directory is refused;
 * - a workdir under the host's /tmp outside the workspace root is refused: the sandbox's /tmp is
 *   private, and showing a piece of the host's would show what the private /tmp hides there (other
 *   executors' private directories, other programs' sockets such as `/tmp/.X11-unix`);
 * - everywhere else each of these paths is covered by an empty tmpfs (`bwrapArgs`'s `hidden`), so a
 *   workdir, the workspace or `/` that contains one shows an empty directory there.
 */

/** One mount of /proc/self/mountinfo. */
export interface MountEntry {
  /** `major:minor` of the mounted file system. */
  device: string
  /** The directory of that file system mounted here (`/` for the whole; a bind mount's source). */
  root: string
  /** Where it is mounted, in this mount namespace. */
  mountPoint: string
}

/** Parses /proc/self/mountinfo (`proc(5)`): fields 3-5; octal escapes (`\040` for a space) decoded. */
export function parseMountinfo(text: string): MountEntry[] {
  const unescape = (field: string) => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)))
  const mounts: MountEntry[] = []
  for (const line of text.split('\n')) {
    const fields = line.split(' ')
    if (fields.length < 5) continue
    mounts.push({ device: fields[2], root: unescape(fields[3]), mountPoint: unescape(fields[4]) })
  }
  return mounts
}

/** This process's mounts; empty when /proc cannot be read (then only the path itself is known). */
export function currentMounts(): MountEntry[] {
  try {
    return parseMountinfo(readFileSync('/proc/self/mountinfo', 'utf8'))
  } catch {
    return []
  }
}

/**
 * Every path at which the directory at the physical path `path` can be reached in this mount
 * namespace: `path` itself first, then the same directory under every other mount of its file
 * system that includes it (a bind mount of it or of a parent, a second mount of the device).
 */
export function mountAliases(path: string, mounts: MountEntry[]): string[] {
  // The mount that holds `path`: the deepest mount point above it, the last mounted when stacked.
  let holder: MountEntry | undefined
  for (const mount of mounts) {
    if (isWithin(path, mount.mountPoint) && (!holder || mount.mountPoint.length >= holder.mountPoint.length)) holder = mount
  }
  const aliases = [path]
  if (!holder) return aliases
  const inFileSystem = posix.join(holder.root, posix.relative(holder.mountPoint, path))
  for (const mount of mounts) {
    if (mount.device !== holder.device || !isWithin(inFileSystem, mount.root)) continue
    const alias = posix.join(mount.mountPoint, posix.relative(mount.root, inFileSystem))
    if (!aliases.includes(alias)) aliases.push(alias)
  }
  return aliases
}

/**
 * The physical path of `path`, which need not exist yet: its deepest existing ancestor resolved
 * (symbolic links, `..`), the rest appended; a dangling symbolic link on the way is followed to
 * where it leads (a directory made there later would land at its target).
 */
export function physicalPath(path: string): string {
  let rest: string[] = []
  let at = resolve(path)
  for (let hops = 0; hops < 40; ) {
    try {
      return join(realpathSync(at), ...rest)
    } catch {
      if (dirname(at) === at) return join(at, ...rest)
      let target: string | undefined
      try {
        target = readlinkSync(at)
      } catch {
        // Not a symbolic link (missing): look at its parent.
      }
      if (target === undefined) {
        rest = [basename(at), ...rest]
        at = dirname(at)
      } else {
        hops++
        at = resolve(dirname(at), target)
      }
    }
  }
  // A loop of links: nothing can be made there; the path as given.
  return path
}

/** The paths of the executor's directories to hide: every alias of each (physical paths), the canonical ones always. */
export function hiddenPaths(dirs: string[], mounts: MountEntry[]): string[] {
  const hidden: string[] = []
  for (const dir of dirs) {
    const physical = physicalPath(dir)
    // An alias that does not exist here is not reachable in the sandbox either (it sees the same
    // tree); the canonical path is kept so that bwrap creates it inside the private /tmp.
    for (const alias of mountAliases(physical, mounts)) {
      if ((alias === physical || existsSync(alias)) && !hidden.includes(alias)) hidden.push(alias)
    }
  }
  return hidden
}

/** The start of a refused workdir. */
export const PRIVATE_WORKDIR = 'the workdir is inside the executor\'s private directory, which sandboxed commands may not see, so no command was run'
/** The start of a refused spill directory. */
export const SPILL_IN_WORKSPACE = 'the spill directory is inside the workspace root, where sandboxed commands can write'

/**
 * Throws when the spill directory `spillParent` (where the executor makes its private directory
 * and pipe directory), at any of its aliases, lies inside the workspace root: a `workspace-write`
 * command could then rewrite the prelude, plant files the executor reads, and read and change
 * every session's output.
 */
export function checkSpillPlacement(spillParent: string, workspaceRoot: string, mounts: MountEntry[]): void {
  const physical = physicalPath(spillParent)
  const inside = mountAliases(physical, mounts).find((alias) => isWithin(alias, workspaceRoot))
  if (inside === undefined) return
  const seen = inside === physical ? physical : `${physical}, reachable as ${inside}`
  throw codedError(
    BASH_ERROR.invalidConfig,
    `invalid sandbox executor config: ${SPILL_IN_WORKSPACE} (${seen}, workspace root ${workspaceRoot}); set spillDir (or TMPDIR) to a directory outside it`,
  )
}

/** Throws (`DSH_INVALID_REQUEST`) when `workdirReal` is inside one of the `hidden` paths. */
export function checkWorkdirPrivacy(workdir: string, workdirReal: string, hidden: string[]): void {
  const inside = hidden.find((path) => isWithin(workdirReal, path))
  if (inside === undefined) return
  const shown = workdirReal === workdir ? workdir : `${workdir}, which is ${workdirReal}`
  throw codedError(BASH_ERROR.invalidRequest, `${PRIVATE_WORKDIR}: ${shown} (private: ${inside})`)
}

/** The start of a refused workdir under the host's /tmp. */
export const TMP_WORKDIR = 'the workdir is under /tmp, which the sandbox replaces with a private, empty one, so no command was run'

/**
 * Throws (`DSH_INVALID_REQUEST`) when `workdirReal` lies under the host's /tmp but outside the
 * workspace root (which the sandbox shows there): the command would run in a directory that does
 * not exist in its private /tmp. `/tmp` itself is the private one, and allowed.
 */
export function checkWorkdirOutsideTmp(workdir: string, workdirReal: string, workspaceRoot: string): void {
  if (workdirReal === '/tmp' || !isWithin(workdirReal, '/tmp') || isWithin(workdirReal, workspaceRoot)) return
  const shown = workdirReal === workdir ? workdir : `${workdir}, which is ${workdirReal}`
  throw codedError(BASH_ERROR.invalidRequest, `${TMP_WORKDIR}: ${shown} (use a directory outside /tmp, or inside the workspace root ${workspaceRoot})`)
}
