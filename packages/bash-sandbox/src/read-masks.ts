import { statSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'
import { isWithin } from './git.js'
import { type MountEntry, mountAliases, physicalPath } from './privacy.js'

/**
 * Secrets a confined command must not read (the read masks): the places credentials live by
 * convention, and whatever the configuration adds. Each existing one is covered in the sandbox by
 * an unreadable mount: a directory by an empty tmpfs of mode 0000 (0111 when a lifted path inside
 * must stay reachable), remounted read-only so that it cannot be chmod-ed open; a file by a bind of
 * an empty file of mode 0000. A read then fails with EACCES ("Permission denied"), which tells it
 * apart from a file that does not exist; the command has no capability that would override the
 * mode (`--cap-drop ALL`).
 */

/**
 * The default list (`~` is this user's home): SSH keys, cloud and cluster credentials (AWS, Google
 * Cloud, Azure, Kubernetes), GnuPG, registry logins (Docker), netrc and git's stored credentials,
 * the GitHub CLI's token, and dsh-bash's own configuration and state (where `--token-file`s are
 * kept by convention). The token file the server was started with is added by the CLI.
 */
export const DEFAULT_DENY_READ: readonly string[] = Object.freeze([
  '~/.ssh',
  '~/.aws',
  '~/.gnupg',
  '~/.config/gcloud',
  '~/.azure',
  '~/.kube',
  '~/.docker',
  '~/.netrc',
  '~/.git-credentials',
  '~/.config/gh',
  '~/.config/dsh-bash',
  '~/.local/state/dsh-bash',
])

/** One masked path (physical, at one of its mount aliases) and the lifted paths inside it. */
export interface ReadMask {
  path: string
  kind: 'dir' | 'file'
  /** Lifted paths inside (`allowRead`), bound back read-only after the mask; a dir mask is then 0111 (traversable, not listable). */
  inner: string[]
}

/** `~` and `~/x` against `home`; anything else as is. */
export function expandHome(path: string, home: string): string {
  if (path === '~') return home
  return path.startsWith('~/') ? join(home, path.slice(2)) : path
}

/**
 * The masks of one launch: every existing entry of `deny` (expanded, physical, at each path a mount
 * gives it) that `allow` does not lift, shallowest first. An entry inside another mask is left
 * out (covered), unless it lies in a lifted path there. Paths `skip` answers true for (the private
 * /tmp and the executor's hidden directories show nothing of the host's there already) are left out too.
 */
export function readMasks(options: { deny: readonly string[]; allow: readonly string[]; home: string; mounts: MountEntry[]; skip?: (path: string) => boolean }): ReadMask[] {
  const allow = [...new Set(options.allow.map((path) => physicalPath(resolve(expandHome(path, options.home)))))]
  const masks: ReadMask[] = []
  const seen = new Set<string>()
  for (const entry of options.deny) {
    const physical = physicalPath(resolve(expandHome(entry, options.home)))
    if (allow.includes(physical)) continue
    let kind: 'dir' | 'file'
    try {
      kind = statSync(physical).isDirectory() ? 'dir' : 'file'
    } catch {
      // Nothing there now: nothing to read. The next launch looks again.
      continue
    }
    const inner = kind === 'dir' ? allow.filter((path) => path !== physical && isWithin(path, physical) && exists(path)) : []
    for (const alias of mountAliases(physical, options.mounts)) {
      if (seen.has(alias) || options.skip?.(alias)) continue
      seen.add(alias)
      masks.push({ path: alias, kind, inner: inner.map((path) => join(alias, relative(physical, path))) })
    }
  }
  masks.sort((a, b) => a.path.split('/').length - b.path.split('/').length || a.path.localeCompare(b.path))
  return masks.filter((mask) => !masks.some((outer) => outer !== mask && isWithin(mask.path, outer.path) && !outer.inner.some((lifted) => isWithin(mask.path, lifted))))
}

function exists(path: string): boolean {
  try {
    statSync(path)
    return true
  } catch {
    return false
  }
}

/** The start of a workdir refused for lying under a read mask. */
export const MASKED_WORKDIR = 'the workdir is inside a path the sandbox keeps unreadable (deny-read), so no command was run'

/** Throws (`DSH_INVALID_REQUEST`) when `workdirReal` is inside a mask and not inside a path lifted there. */
export function checkWorkdirReadable(workdir: string, workdirReal: string, masks: readonly ReadMask[]): void {
  const mask = masks.find((m) => isWithin(workdirReal, m.path) && !m.inner.some((lifted) => isWithin(workdirReal, lifted)))
  if (!mask) return
  const shown = workdirReal === workdir ? workdir : `${workdir}, which is ${workdirReal}`
  throw codedError(BASH_ERROR.invalidRequest, `${MASKED_WORKDIR}: ${shown} (masked: ${mask.path}; lift it with allowRead, --allow-read)`)
}

const PERMISSION_DENIED = /permission denied|\bEACCES\b|\[Errno 13\]|os error 13/i

/**
 * True when a line of `stderr` shows a refused access ("Permission denied") to a path under a mask:
 * the path as given (absolute), relative to `workdir`, or with `~/` for `home`. Lifted paths do not
 * count. A "Permission denied" naming no masked path is not the masks' doing.
 */
export function showsDeniedRead(stderr: string, masks: readonly ReadMask[], workdir: string, home: string): boolean {
  if (!stderr || masks.length === 0) return false
  for (const line of stderr.split('\n')) {
    if (!PERMISSION_DENIED.test(line)) continue
    for (const mask of masks) {
      const forms = [mask.path]
      const rel = relative(workdir, mask.path)
      if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel)) forms.push(rel)
      if (isWithin(mask.path, home) && mask.path !== home) forms.push(`~/${relative(home, mask.path)}`)
      if (forms.some((form) => mentions(line, form))) return true
    }
  }
  return false
}

/** True when `line` names `path` or something below it as a whole path (not a longer name that starts with it). */
function mentions(line: string, path: string): boolean {
  for (let at = line.indexOf(path); at !== -1; at = line.indexOf(path, at + 1)) {
    const before = at === 0 ? ' ' : line[at - 1]
    const after = line[at + path.length] ?? ' '
    if (/[\s'"`‘“(:=,]/.test(before) && /[\s'"`’”):,/]/.test(after)) return true
  }
  return false
}
