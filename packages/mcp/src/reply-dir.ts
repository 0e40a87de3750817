import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * Where servers leave the address of their reply desk for `dsh-bash reply`: one private directory
 * per user. Node only (this module is loaded by `dsh-bash reply` too, which must start fast).
 */

/** The desk's HTTP path, on its own port and on the MCP HTTP server. */
export const REPLY_PATH = '/dsh-bash/replies'

/** Overrides the directory (tests, or a person who keeps several apart). */
export const RUNTIME_DIR_VARIABLE = 'DSH_BASH_RUNTIME_DIR'

/** The file a server writes: `reply-<pid>-<port>.json`. */
export const DESK_FILE = /^reply-\d+-\d+\.json$/

/** What a desk file holds. */
export interface DeskAddress {
  /** The server's process id. */
  pid: number
  /** Its desk listens on 127.0.0.1:<port>. */
  port: number
  /** The bearer key of the desk (256 random bits). */
  key: string
}

/**
 * `$DSH_BASH_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/dsh-bash` (systemd's per-user runtime directory,
 * mode 0700), else `<tmpdir>/dsh-bash-<uid>`.
 */
export function replyDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env[RUNTIME_DIR_VARIABLE]) return env[RUNTIME_DIR_VARIABLE]!
  if (env.XDG_RUNTIME_DIR) return join(env.XDG_RUNTIME_DIR, 'dsh-bash')
  return join(tmpdir(), `dsh-bash-${process.getuid?.() ?? 'user'}`)
}

/**
 * Throws unless `dir` is a real directory (not a symbolic link) owned by this user, with no
 * permission for anyone else: another user who made it first (in /tmp anyone can) could read the
 * desks' keys or plant a desk of their own. With `create`, a missing one is made (mode 0700).
 */
export function checkPrivateDirectory(dir: string, create: boolean): void {
  let stat
  try {
    stat = lstatSync(dir)
  } catch {
    if (!create) throw new Error(`no dsh-bash server of yours has a reply desk on this machine (${dir} does not exist)`)
    try {
      mkdirSync(dir, { mode: 0o700 })
    } catch (error) {
      throw new Error(`cannot create ${dir}: ${(error as Error).message}`)
    }
    stat = lstatSync(dir)
  }
  if (!stat.isDirectory() || stat.isSymbolicLink()) throw new Error(`${dir} is not a directory; set ${RUNTIME_DIR_VARIABLE} to a private directory`)
  const uid = process.getuid?.()
  if (uid !== undefined && stat.uid !== uid) throw new Error(`${dir} belongs to another user (uid ${stat.uid}); set ${RUNTIME_DIR_VARIABLE} to a private directory`)
  if ((stat.mode & 0o077) !== 0) {
    throw new Error(`${dir} can be used by other users (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}): make it private (chmod 700 ${dir})`)
  }
}

/** The desks listed in `dir` (checked: private); files that are not ours or not private are skipped. */
export function readDesks(dir: string): DeskAddress[] {
  checkPrivateDirectory(dir, false)
  const desks: DeskAddress[] = []
  for (const name of readdirSync(dir)) {
    if (!DESK_FILE.test(name)) continue
    const desk = readDeskFile(join(dir, name))
    if (desk) desks.push(desk)
  }
  return desks
}

function readDeskFile(path: string): DeskAddress | undefined {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return undefined
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile() || (stat.mode & 0o077) !== 0 || stat.uid !== (process.getuid?.() ?? stat.uid) || stat.size > 4096) return undefined
    const buffer = Buffer.alloc(stat.size)
    readSync(fd, buffer, 0, stat.size, 0)
    const data = JSON.parse(buffer.toString('utf8')) as Partial<DeskAddress>
    if (!Number.isInteger(data.pid) || !Number.isInteger(data.port) || typeof data.key !== 'string') return undefined
    return { pid: data.pid!, port: data.port!, key: data.key }
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
