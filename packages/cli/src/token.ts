import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { StartupError, UsageError } from './errors.js'

/**
 * Where `dsh-bash mcp --http` gets its bearer token, never from its own command line: every local
 * user reads a command line (`/proc/<pid>/cmdline` is mode 0444, `ps`), and so do the parents that
 * started it (`npm exec … --token T` kept it for the server's whole life, measured) and audit logs.
 * Overwriting the process title (which does clear our own `/proc/<pid>/cmdline` on Linux) comes too
 * late (the token stayed readable 1.0–2.0 s after the exec on this loaded machine, ~1,000 polled
 * reads each time) and cannot reach the parents. A file only its owner can read, or the environment
 * (`/proc/<pid>/environ` is mode 0400, the owner's), can.
 */

/** Why `--token` is refused, with the alternatives (a usage error: exit 2). */
export const TOKEN_FLAG_REFUSED =
  '--token is not accepted: a command line is readable by every local user (/proc/<pid>/cmdline, ps), and a parent such as npx keeps it for the server\'s whole life; put the token in a file only you can read and pass --token-file PATH, or set DSH_BASH_TOKEN'

/** The largest token file read (bytes): a token is one line. */
const MAX_TOKEN_FILE = 4096

/** What a token may hold: printable ASCII without spaces (it goes into an HTTP header as is). */
const TOKEN_CHARS = /^[\x21-\x7e]+$/

export interface ConfiguredToken {
  token: string
  /** Where it came from: `--token-file`, or `$DSH_BASH_TOKEN`. */
  source: 'file' | 'env'
}

/**
 * The token chosen by the person: `--token-file PATH` (wins), else `$DSH_BASH_TOKEN`; undefined
 * when neither is set (the server then generates one and prints it). The variable is removed from
 * this process's environment once read, so no process the server starts (the launcher helper, a
 * command's shell) inherits it. Throws a StartupError naming what is wrong.
 */
export function configuredToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv = process.env): ConfiguredToken | undefined {
  const fromEnv = env.DSH_BASH_TOKEN
  delete env.DSH_BASH_TOKEN
  if (tokenFile !== undefined) return { token: readTokenFile(tokenFile), source: 'file' }
  if (fromEnv === undefined || fromEnv === '') return undefined
  if (!TOKEN_CHARS.test(fromEnv)) throw new StartupError('DSH_BASH_TOKEN: expected printable characters without spaces')
  return { token: fromEnv, source: 'env' }
}

/**
 * Reads a token file: one line (a final line break is dropped) of printable characters. Refused,
 * as ssh refuses a private key: a file any other user can read (they would learn the token) or
 * write (they would choose it), i.e. any group or other permission bit, and a file owned by another
 * user than this one or root (its owner could change both). Checked on the opened descriptor, so
 * the file checked is the file read. A pipe (`--token-file <(pass show dsh)`) is mode 0600 and passes.
 */
export function readTokenFile(path: string): string {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch (error) {
    throw new StartupError(`--token-file: cannot read ${path}: ${(error as Error).message}`)
  }
  try {
    const stat = fstatSync(fd)
    if (stat.isDirectory()) throw new StartupError(`--token-file: ${path} is a directory`)
    if ((stat.mode & 0o077) !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0')
      throw new StartupError(`--token-file: ${path} can be read or written by other users (mode ${mode}): make it private (chmod 600 ${path})`)
    }
    const uid = process.getuid?.()
    if (uid !== undefined && stat.uid !== uid && stat.uid !== 0) {
      throw new StartupError(`--token-file: ${path} belongs to another user (uid ${stat.uid}): it must be yours or root's`)
    }
    const buffer = Buffer.alloc(MAX_TOKEN_FILE + 1)
    let length = 0
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null)
      if (n === 0) break
      length += n
      if (length > MAX_TOKEN_FILE) throw new StartupError(`--token-file: ${path} is larger than ${MAX_TOKEN_FILE} bytes: it must hold the token alone`)
    }
    const text = buffer.subarray(0, length).toString('utf8').replace(/\r?\n$/, '')
    if (text === '') throw new StartupError(`--token-file: ${path} is empty`)
    if (!TOKEN_CHARS.test(text)) throw new StartupError(`--token-file: ${path} must hold one line of printable characters without spaces`)
    return text
  } finally {
    closeSync(fd)
  }
}

/** `--token` on the command line: always refused (see TOKEN_FLAG_REFUSED). */
export function refuseTokenFlag(): never {
  throw new UsageError(TOKEN_FLAG_REFUSED)
}
