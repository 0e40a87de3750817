import { closeSync, constants, fdatasync, fstatSync, openSync, write } from 'node:fs'
import { mcpErrors } from './errors.js'

/**
 * The audit log's file: one JSON object per line, appended, each line handed to the kernel (and,
 * when `sync`, to the disk) before the caller goes on. Loads nothing but `node:fs`.
 *
 * Why no fsync by default: a line given to write(2) is in the kernel's page cache and survives the
 * server's own death (SIGKILL, a crash, the OOM killer), which is what the audit promises; only an
 * OS crash or a power cut before writeback can lose it. fdatasync cost 4.0 ms per line here (median
 * of 200; write(2) 7 µs), per call, on every call. `sync` (the CLI's `--audit-required`) pays it.
 */

/** How one line is encoded: JSON, plus escapes that keep it one line for every reader. */
export function auditLine(record: object): string {
  // JSON.stringify escapes C0 controls (so no \n, \r or ESC) and lone surrogates. Some readers also
  // break lines at NEL, U+2028 and U+2029 (Python's splitlines, editors), and a person reading the
  // file in a terminal must not meet C1 controls (8-bit CSI) or bidi overrides that reorder what
  // they read. Those become \u escapes too: the same JSON value, byte-safe text.
  return `${JSON.stringify(record).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`
}

/** DEL, C1 controls, soft hyphen, ALM, zero-width and bidi marks, line/paragraph separators, embeddings, overrides, isolates, BOM, interlinear annotation. */
const UNSAFE = /[\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g

export interface AuditFileOptions {
  /** Also fdatasync every line before the append resolves (see the module comment). */
  sync?: boolean
}

interface Pending {
  text: string
  resolve: () => void
  reject: (error: Error) => void
}

/**
 * An open audit file. Appends are queued and written in order; lines waiting while a write is in
 * flight go out together in one write (and one fdatasync), each line whole. A failed append rejects
 * with the reason; the next one still tries (a full disk may clear), and first ends any line the
 * failure left half written, so every later line stays parseable.
 */
export class AuditFile {
  private readonly _fd: number
  private readonly _sync: boolean
  private _queue: Pending[] = []
  /** The pump while it runs (one at a time). */
  private _pumping: Promise<void> | undefined
  /** Part of a line is in the file (a write failed half way): the next write ends it first. */
  private _broken = false
  private _closed = false

  /**
   * Opens (creating it mode 0600) `path` for appending. Refuses a symbolic link, anything but a
   * regular file, a file of another user than this one (or root), and a file with any permission
   * bit for group or others (commands may hold secrets: the audit log is private, as the token file).
   */
  constructor(readonly path: string, options: AuditFileOptions = {}) {
    this._sync = options.sync === true
    let fd: number
    try {
      // O_NOFOLLOW: a link planted where the log should be would have us append to its target.
      // O_NONBLOCK: a FIFO there must not hang the start (refused below).
      fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ELOOP') throw mcpErrors.auditLog(`${path} is a symbolic link: name the file itself`)
      // A FIFO without a reader (O_NONBLOCK) or a device without its driver.
      if (code === 'ENXIO') throw mcpErrors.auditLog(`${path} is not a regular file`)
      throw mcpErrors.auditLog(`cannot open ${path}: ${(error as Error).message}`)
    }
    try {
      const stat = fstatSync(fd)
      if (!stat.isFile()) throw mcpErrors.auditLog(`${path} is not a regular file`)
      const uid = process.getuid?.()
      if (uid !== undefined && stat.uid !== uid && stat.uid !== 0) throw mcpErrors.auditLog(`${path} belongs to another user (uid ${stat.uid}): it must be yours or root's`)
      if ((stat.mode & 0o077) !== 0) {
        const mode = (stat.mode & 0o777).toString(8).padStart(4, '0')
        throw mcpErrors.auditLog(`${path} can be read or written by other users (mode ${mode}): make it private (chmod 600 ${path})`)
      }
    } catch (error) {
      closeSync(fd)
      throw error
    }
    this._fd = fd
  }

  /** Appends one record as a line; resolves once written (and synced, with `sync`). */
  append(record: object): Promise<void> {
    if (this._closed) return Promise.reject(mcpErrors.badState(`the audit log ${this.path} is closed`))
    return new Promise((resolve, reject) => {
      this._queue.push({ text: auditLine(record), resolve, reject })
      this._pumping ??= this._pump().finally(() => (this._pumping = undefined))
    })
  }

  /** Waits for queued lines, then closes the file. Idempotent. */
  async close(): Promise<void> {
    if (this._closed) return
    this._closed = true
    await this._pumping
    try {
      closeSync(this._fd)
    } catch {
      // Already gone: nothing left to write.
    }
  }

  private async _pump(): Promise<void> {
    while (this._queue.length > 0) {
      const batch = this._queue.splice(0)
      // A failure may have left part of a line: end it, so the next line starts on its own.
      const text = (this._broken ? '\n' : '') + batch.map((p) => p.text).join('')
      try {
        await this._writeAll(Buffer.from(text, 'utf8'))
        this._broken = false
        if (this._sync) await new Promise<void>((resolve, reject) => fdatasync(this._fd, (error) => (error ? reject(error) : resolve())))
        for (const p of batch) p.resolve()
      } catch (error) {
        const failure = mcpErrors.auditLog(`cannot write ${this.path}: ${(error as Error).message}`)
        for (const p of batch) p.reject(failure)
      }
    }
  }

  private async _writeAll(buffer: Buffer): Promise<void> {
    let offset = 0
    while (offset < buffer.length) {
      const n = await new Promise<number>((resolve, reject) =>
        write(this._fd, buffer, offset, buffer.length - offset, null, (error, written) => (error ? reject(error) : resolve(written))),
      )
      if (n > 0) this._broken = true
      offset += n
    }
  }
}
