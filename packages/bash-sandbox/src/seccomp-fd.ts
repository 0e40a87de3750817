import { closeSync, constants, openSync, unlinkSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'

/** `O_TMPFILE` (Linux: `__O_TMPFILE | O_DIRECTORY`; Node.js has no constant for it). */
const O_TMPFILE = 0o20000000 | constants.O_DIRECTORY

/**
 * The seccomp program, held by a descriptor that was never reachable by a path a command could
 * write to: a file without a name (`O_TMPFILE`, `O_EXCL`: it can never be linked into a
 * directory), written once and then held read-only. Each launch gets a fresh read-only descriptor
 * of it (`open`), reopened through `/proc/self/fd` (the server's own, outside every sandbox's PID
 * namespace), so that each bwrap reads it from the start.
 *
 * Why not a file by path (as before): with the spill directory inside the workspace, a command
 * overwrote it with an allow-all program, and every later command ran without the filter.
 * Why not a sealed memfd: Node.js cannot call `memfd_create`; a nameless file held only by this
 * process is as unreachable, with the file mode (0400) on top for processes without
 * CAP_DAC_OVERRIDE.
 */
export class SeccompProgram {
  private constructor(private fd: number | undefined) {}

  /**
   * Writes `program` into a nameless file in `dir` (a private directory). Where the file system
   * has no `O_TMPFILE`, the file is created under a random name and unlinked at once (the
   * directory is private: no command sees it).
   */
  static create(program: Buffer, dir: string): SeccompProgram {
    let writable: number
    try {
      writable = openSync(dir, O_TMPFILE | constants.O_RDWR | constants.O_EXCL, 0o400)
    } catch {
      const path = join(dir, `dsh-bash-seccomp-${randomBytes(8).toString('hex')}`)
      writable = openSync(path, 'wx+', 0o400)
      unlinkSync(path)
    }
    try {
      let written = 0
      while (written < program.length) written += writeSync(writable, program, written, program.length - written, written)
      // From now on only a read-only descriptor is kept.
      return new SeccompProgram(openSync(`/proc/self/fd/${writable}`, constants.O_RDONLY))
    } finally {
      closeSync(writable)
    }
  }

  /** A new read-only descriptor of the program, at offset 0: the caller closes it (or hands it over). */
  open(): number {
    if (this.fd === undefined) throw new Error('the seccomp program was released')
    return openSync(`/proc/self/fd/${this.fd}`, constants.O_RDONLY)
  }

  /** Closes the kept descriptor (the executor's disposal). */
  release(): void {
    if (this.fd === undefined) return
    closeSync(this.fd)
    this.fd = undefined
  }
}
