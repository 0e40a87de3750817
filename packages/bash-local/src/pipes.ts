import { execFile, spawnSync } from 'node:child_process'
import { closeSync, constants, fstatSync, mkdtempSync, openSync, rmSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { Socket } from 'node:net'
import type { Readable } from 'node:stream'

/**
 * Why FIFOs: Node's `spawn` with stdio 'pipe' gives the child AF_UNIX socketpairs, and Linux cannot
 * open a socket through /dev/fd, so `echo x > /dev/stderr`, `tee /dev/stdout` or `exec 3>/dev/stdout`
 * fail with ENXIO. Node has no pipe(2) and no mkfifo(3), so the pipes are FIFOs made by the
 * `mkfifo` program, in batches (one process per batch; measured here, load ~4: 7.1 ms for the 2 FIFOs
 * of one command, 10.1 ms for 32, 12.8 ms for 64, i.e. 0.4 ms per command at 64), opened at
 * once (the read end O_RDONLY|O_NONBLOCK first, so that opening the write end does not block) and
 * unlinked at once: a pooled pipe is two open descriptors and no name, so nothing can open it later
 * by path, and nothing is left on disk. Node opens both ends with O_CLOEXEC, so a pooled pipe never
 * leaks into another child.
 */

/** One pipe: the executor reads `readFd`; the command writes `writeFd` (its stdout or stderr). */
export interface PipeEnds {
  /** Read end, opened non-blocking; wrap it with `pipeReader`. */
  readonly readFd: number
  /** Write end, blocking; given to the child, then closed by the executor. */
  readonly writeFd: number
}

/** FIFOs made per `mkfifo` run (one command takes two). */
const BATCH = 64
/** Below this many pooled pipes, the next batch is made in the background (so at most ~88 are pooled: 176 descriptors). */
const LOW_WATER = 24
/**
 * With a maker (the launcher helper), batches cost the loop no fork, so the pool is kept fuller
 * ahead of bursts: at most ~112 pooled (224 descriptors).
 */
const LOW_WATER_WITH_MAKER = 48
/** FIFOs adopted per loop turn when a maker made them. */
const ADOPT_SLICE = 16

/**
 * Makes the FIFOs at `paths` with the `mkfifo` program, outside this event loop (the launcher
 * helper); resolves once the run is over, rejects with its error (some FIFOs may exist all the same).
 */
export type FifoMaker = (mkfifo: string, paths: string[]) => Promise<void>

/**
 * A pool of real pipes for commands' stdout and stderr. The first batch is made when the pool is
 * created; later ones in the background (`execFile`) when fewer than LOW_WATER are left, so that
 * the event loop rarely waits for `mkfifo`: only a `take()` that finds the pool empty (a burst
 * faster than the background batch) makes one on the spot (~13 ms).
 */
export class FifoPipePool {
  readonly #dir: string
  readonly #mkfifo: string
  #pool: PipeEnds[] = []
  #seq = 0
  /** The batch being made, if any; resolves to how many pipes it added. */
  #refill?: Promise<number>
  /** Why the last batch gave nothing. */
  #lastFailure = ''
  #disposed = false
  #maker?: FifoMaker

  private constructor(dir: string, mkfifo: string) {
    this.#dir = dir
    this.#mkfifo = mkfifo
  }

  /**
   * Creates the pool in a new private directory (0700, random name `dsh-bash-pipes-XXXXXX`) under
   * `parent` and makes its first batch; returns the reason instead when FIFOs cannot be made or
   * opened here. The directory is a sibling of the spill directory, not inside it: a sandbox that
   * shows the spill directory (or an owner's) to a command does not show the FIFOs while they have
   * a name (between `mkfifo` and their unlinking), and under /tmp the sandbox's private /tmp hides it.
   */
  static create(parent: string, mkfifo: string | undefined): { pool?: FifoPipePool; reason?: string } {
    if (!mkfifo) return { reason: 'the mkfifo program was not found in PATH' }
    let dir: string
    try {
      dir = mkdtempSync(join(parent, 'dsh-bash-pipes-'))
    } catch (error) {
      return { reason: `cannot create a directory for pipes under ${parent}: ${(error as Error).message}` }
    }
    const pool = new FifoPipePool(dir, mkfifo)
    const paths = pool.#batchPaths()
    const result = spawnSync(mkfifo, ['-m', '600', '--', ...paths], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
    if (pool.#adopt(paths) === 0) {
      pool.dispose()
      const why = result.error?.message ?? (result.stderr?.trim() || `exit code ${result.status}`)
      return { reason: `cannot make a pipe with ${mkfifo}: ${why}` }
    }
    return { pool }
  }

  /**
   * Hands batch making to `maker` (the launcher helper): from now on this event loop never forks
   * `mkfifo`, and a `take()` that finds the pool empty waits for the batch in flight. When the maker
   * fails, the pool falls back to making the batch here.
   */
  useMaker(maker: FifoMaker): void {
    this.#maker = maker
  }

  /** The pool's private directory (empty but for FIFOs being made). */
  get dir(): string {
    return this.#dir
  }

  /** Pipes ready in the pool (for tests). */
  get size(): number {
    return this.#pool.length
  }

  /**
   * A fresh pipe: from the pool, or, when it is empty, from the maker's batch (or one made on the
   * spot without a maker). Rejects when
   * none can be made (the pool is disposed, or mkfifo fails).
   */
  async take(): Promise<PipeEnds> {
    for (;;) {
      if (this.#disposed) throw new Error('the pipe pool is disposed')
      const pipe = this.#pool.pop()
      if (pipe) {
        if (this.#pool.length < (this.#maker ? LOW_WATER_WITH_MAKER : LOW_WATER)) void this.#makeBatch()
        return pipe
      }
      // Empty (a burst). With a maker, wait for the batch in flight (or a new one): the loop never
      // forks. (This lost the output of the command that had taken the pool's last pipe once, when
      // the waiting launches were spawned in-loop from the batch's callback and blocked the loop past
      // drainMs: the drain window's timer then fired before the pipes were read. OutputPair's drain
      // now lets the poll phase run before it gives up.) Without a maker, a batch is made on the
      // spot (~13 ms of blocked loop), as the background batch would fork here all the same.
      if (this.#maker) {
        const added = await this.#makeBatch()
        if (added > 0 || this.#pool.length > 0 || this.#disposed) continue
      }
      if (this.#fillSync() === 0) {
        throw new Error(`cannot make a pipe with ${this.#mkfifo}: ${this.#lastFailure || 'the pool is disposed'}`)
      }
    }
  }

  /** Closes every pooled pipe and removes the directory. Idempotent. */
  dispose(): void {
    this.#disposed = true
    for (const pipe of this.#pool.splice(0)) closePipe(pipe)
    rmSync(this.#dir, { recursive: true, force: true })
  }

  #batchPaths(): string[] {
    return Array.from({ length: BATCH }, () => join(this.#dir, `p${++this.#seq}`))
  }

  /** Makes a batch now (blocking: 12.8 ms for 64 here); returns how many pipes it added. */
  #fillSync(): number {
    const paths = this.#batchPaths()
    const result = spawnSync(this.#mkfifo, ['-m', '600', '--', ...paths], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
    const added = this.#adopt(paths)
    if (added === 0) this.#lastFailure = result.error?.message ?? (result.stderr?.trim() || `exit code ${result.status}`)
    return added
  }

  /** The batch in flight, or a new one; resolves to how many pipes it added. Never rejects. */
  #makeBatch(): Promise<number> {
    if (this.#disposed) return Promise.resolve(0)
    this.#refill ??= new Promise<number>((resolve) => {
      const paths = this.#batchPaths()
      // Adopts the batch `slice` FIFOs per loop turn (all at once: no turn is waited for). A pool
      // disposed meanwhile removes what was made for it instead (its directory is gone or going).
      const adoptBatch = async (failure: string | undefined, slice: number) => {
        let added = 0
        for (let i = 0; i < paths.length; i += slice) {
          if (i > 0) await new Promise<void>((next) => setImmediate(next))
          const part = paths.slice(i, i + slice)
          if (this.#disposed) for (const path of part) unlinkQuietly(path)
          else added += this.#adopt(part)
        }
        this.#refill = undefined
        if (added === 0 && !this.#disposed) this.#lastFailure = failure || 'no FIFO was made'
        resolve(added)
      }
      if (this.#maker) {
        // Opening and unlinking 64 FIFOs is ~0.1 ms each here: adopted in slices, one per loop
        // turn, so that a batch never holds the loop for more than a couple of milliseconds.
        this.#maker(this.#mkfifo, paths).then(
          () => adoptBatch(undefined, ADOPT_SLICE),
          (error: unknown) => {
            // The helper is gone or failed: this pool makes its batches itself from now on.
            this.#maker = undefined
            return adoptBatch((error as Error).message, ADOPT_SLICE)
          },
        )
        return
      }
      execFile(this.#mkfifo, ['-m', '600', '--', ...paths], (error, _stdout, stderr) => void adoptBatch(String(stderr).trim() || error?.message, paths.length))
    })
    return this.#refill
  }

  /** Opens and unlinks each FIFO that exists; returns how many joined the pool. */
  #adopt(paths: string[]): number {
    let opened = 0
    for (const path of paths) {
      let readFd = -1
      try {
        readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK)
        // mkfifo refuses an existing path, so this is ours; checked all the same (never a planted file).
        if (!fstatSync(readFd).isFIFO()) throw new Error('not a FIFO')
        const writeFd = openSync(path, constants.O_WRONLY)
        this.#pool.push({ readFd, writeFd })
        opened++
      } catch {
        if (readFd >= 0) closeQuietly(readFd)
      } finally {
        unlinkQuietly(path)
      }
    }
    return opened
  }
}

/** The read end of a pipe as a stream (libuv polls it: reads never block the event loop). Destroying it closes the descriptor. */
export function pipeReader(readFd: number): Readable {
  return new Socket({ fd: readFd, readable: true, writable: false })
}

/** Closes both ends. */
export function closePipe(pipe: PipeEnds): void {
  closeQuietly(pipe.readFd)
  closeQuietly(pipe.writeFd)
}

export function closeQuietly(fd: number): void {
  try {
    closeSync(fd)
  } catch {
    // Already closed.
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // Never made, or gone already.
  }
}
