import { createHash } from 'node:crypto'
import { lstatSync, mkdirSync } from 'node:fs'
import { BASH_ERROR, codedError, messageOf } from '@deepseek-ai/dsh-bash'

/** The directory of commands started without an owner, under an executor's spill directory. */
export const UNOWNED_SPILL_DIR = 'unowned'

/**
 * The name of an owner's spill directory under the executor's spill directory: `owner-<32 hex>`
 * (a SHA-256 prefix of the owner token, so that any token is a safe, fixed-length name that tells
 * nothing about the session), or `unowned` for commands without an owner. Never `pipes` or another
 * name the executors use for themselves.
 */
export function ownerSpillDirName(owner: string | undefined): string {
  if (owner === undefined) return UNOWNED_SPILL_DIR
  return `owner-${createHash('sha256').update(owner, 'utf8').digest('hex').slice(0, 32)}`
}

/**
 * Creates a private directory (0700) unless it exists already as a real directory (not a link);
 * throws naming the path otherwise (`DSH_START_FAILED`: no command can keep its output there).
 */
export function ensurePrivateDir(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 })
    return
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw codedError(BASH_ERROR.startFailed, `cannot create the spill directory ${path}: ${messageOf(error)}`, { cause: error })
  }
  const stat = lstatSync(path)
  if (!stat.isDirectory()) throw codedError(BASH_ERROR.startFailed, `the spill directory ${path} exists and is not a directory`)
}
