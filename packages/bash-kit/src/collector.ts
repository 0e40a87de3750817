import { closeSync, constants, openSync, readSync, unlinkSync, writevSync } from 'node:fs'
import type { CollectedOutput } from '@deepseek-ai/dsh-bash'
import { decodeAll, decoderOptions, LF, leadingContinuationBytes, restartAfterLoss, scrubNul, writeFully } from './collector-bytes.js'

export interface CollectorOptions {
  /** Bytes of the stream kept in memory (the tail). Must be ≥ 1. */
  maxBytes: number
  /** A stream longer than this keeps no spill file. 0 disables spilling. */
  maxSpillBytes: number
  /** Where the spill file would go (created only on the first overflow). Undefined: never spill. */
  spillPath?: string
  /** Keep the spill file when the collector is disposed. */
  keepSpillFile?: boolean
  /**
   * Called with every chunk this collector accepts (after it is stored), never after `end()`. The
   * output pair measures its two streams together through it (spill-meter.ts). Must not throw.
   */
  onWrite?: (bytes: Buffer) => void
}

/** Spill file states; only `writing` and `closed` advertise the path. */
type SpillState = 'none' | 'writing' | 'closed' | 'over-cap' | 'broken' | 'deleted'

/** Result of an incremental read. */
export interface CollectorRead {
  text: string
  /** Some bytes since the previous read fell out of memory before this read. */
  lossy: boolean
}


/**
 * Spill bytes gathered before one write. A pipe read is 4–64 KiB (`seq 1 1000000`: up to 1,700
 * reads of 4 KiB when the reader keeps up), and a write per read was most of the collector's cost
 * (bench/README.md, "Line-heavy output and bursts").
 */
export const SPILL_BLOCK_BYTES = 1 << 20
/**
 * Longest a gathered part waits for its write (ms), so that the file of a task that went quiet is
 * current soon; anything that reads the file through the collector (`readRange`, `read`, `end`)
 * writes the part first.
 */
export const SPILL_DELAY_MS = 50

/**
 * One output stream: a byte-bounded tail in memory, a spill file holding the whole stream once it
 * overflows, and an incremental reader that never delivers a byte twice.
 *
 * Memory is bounded by `maxBytes` (plus the chunk being appended), and while spilling by
 * `SPILL_BLOCK_BYTES` more (bytes gathered for the file's next write): bytes are stored raw, so a
 * character split across chunks is never mangled, and decoded only when text is asked for.
 */
export class OutputCollector {
  readonly #maxBytes: number
  readonly #maxSpillBytes: number
  readonly #spillPath: string | undefined
  readonly #keepSpill: boolean
  readonly #onWrite: ((bytes: Buffer) => void) | undefined
  /** `requireSpill()` was called: the stream keeps a spill file whatever its size. */
  #spillRequired = false
  /** Kept tail, oldest first. */
  #chunks: Buffer[] = []
  #keptBytes = 0
  /** Total bytes written. */
  #total = 0
  #ended = false
  #spillState: SpillState = 'none'
  #spillFd = -1
  /** Bytes accepted for the spill file but not written yet (oldest first), and their sum. */
  #spillParts: Buffer[] = []
  #spillPartBytes = 0
  /** Writes the gathered part after SPILL_DELAY_MS; unset while nothing waits. */
  #spillTimer: NodeJS.Timeout | undefined
  /** Absolute stream offset of the next byte the reader has not seen. */
  #readOffset = 0
  /**
   * The last byte trimmed from memory was a newline: the kept tail starts at a line start. Only
   * meaningful once bytes were trimmed; never says anything about bytes freed by `dispose()`.
   */
  #tailStartsLine = false
  #readDecoder = new TextDecoder('utf-8', decoderOptions)

  constructor(options: CollectorOptions) {
    if (!(Number.isInteger(options.maxBytes) && options.maxBytes >= 1)) {
      throw new Error(`maxBytes must be a positive integer, got ${options.maxBytes}`)
    }
    this.#maxBytes = options.maxBytes
    this.#maxSpillBytes = Math.max(0, options.maxSpillBytes)
    this.#spillPath = options.spillPath
    this.#keepSpill = options.keepSpillFile === true
    this.#onWrite = options.onWrite
  }

  /** Total bytes written so far. */
  get totalBytes(): number {
    return this.#total
  }

  /** Absolute offset of the first byte still in memory. */
  get #start(): number {
    return this.#total - this.#keptBytes
  }

  /** Appends a chunk. Writes after `end()` are ignored. */
  write(chunk: Buffer | Uint8Array | string): void {
    if (this.#ended) return
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)
    if (bytes.length === 0) return
    const overflowing = this.#keptBytes + bytes.length > this.#maxBytes
    if ((overflowing || this.#spillRequired) && this.#spillState === 'none') {
      // First overflow (or first byte of a required spill): nothing has been dropped yet, so memory
      // still holds the stream from byte 0.
      this.#openSpill(this.#total + bytes.length)
    }
    this.#total += bytes.length
    this.#spillWrite(bytes)
    this.#chunks.push(bytes)
    this.#keptBytes += bytes.length
    if (this.#keptBytes > this.#maxBytes) this.#trim()
    this.#onWrite?.(bytes)
  }

  /**
   * From now on the stream keeps a spill file whatever its size: at once when it has output (memory
   * still holds all of it: a stream that was ever trimmed has spilled already), else from its first
   * byte. For a reader that may cut a stream memory holds whole (a result budget over both streams):
   * the cut can then name a file holding all of it. Idempotent; nothing for a stream whose spill
   * file is over the cap, broken or deleted.
   */
  requireSpill(): void {
    this.#spillRequired = true
    // A file must start at byte 0: never from a memory that no longer holds it (after dispose()).
    if (this.#spillState !== 'none' || this.#total === 0 || this.#start !== 0) return
    this.#openSpill(this.#total)
    // A stream that already ended gets its file complete at once.
    if (this.#ended) this.#closeSpill()
  }

  /** Marks the end of the stream and closes the spill file. Idempotent. */
  end(): void {
    if (this.#ended) return
    this.#ended = true
    this.#closeSpill()
  }

  #closeSpill(): void {
    this.#flushSpill()
    if (this.#spillState !== 'writing') return
    try {
      closeSync(this.#spillFd)
      this.#spillState = 'closed'
    } catch {
      // A close that fails may have lost data (NFS, quota): the copy is not known to be intact.
      this.#spillState = 'broken'
      this.#unlinkSpill()
    }
    this.#spillFd = -1
  }

  get ended(): boolean {
    return this.#ended
  }

  /** The path of the spill file while it is intact (being written or closed); else undefined. */
  get spillPath(): string | undefined {
    return this.#spillState === 'writing' || this.#spillState === 'closed' ? this.#spillPath : undefined
  }

  /** The collected stream so far: whole, or its tail trimmed at a character boundary. */
  result(): CollectedOutput {
    const kept = this.#slice(this.#start)
    const truncated = this.#start > 0
    const skip = truncated ? leadingContinuationBytes(kept) : 0
    const text = decodeAll(skip ? kept.subarray(skip) : kept)
    const out: CollectedOutput = {
      text,
      truncated,
      droppedBytes: truncated ? this.#start + skip : 0,
      totalBytes: this.#total,
    }
    // A stream that overflowed has a spill file (unless over the cap or broken), and so has one
    // whose spill was required (`requireSpill`) although memory holds it whole: a reader that cuts
    // it names the file. Only a finished stream's file is complete.
    const path = this.#ended ? this.spillPath : undefined
    if (path) out.spillPath = path
    return out
  }

  /**
   * Output since the previous read. Characters split across reads are delivered whole, on the read
   * that completes them (or as U+FFFD when the stream ended in the middle of one).
   *
   * A read that finds unread bytes gone (lossy) restarts at the first line start of the kept tail:
   * the rest of a line whose beginning fell out of memory is dropped with it. Delivered, it reads
   * as a line of its own: `13014` cut to `014` read as `14` right after `12768`, output that seemed
   * to go backwards (issue 25, item 10). Only a tail with no line start in it (one line longer than
   * memory) restarts at a character boundary instead.
   */
  read(): CollectorRead {
    // Whoever reads the output may open the file next: it holds everything read so far.
    this.#flushSpill()
    let lossy = false
    let bytes: Buffer
    if (this.#readOffset < this.#start) {
      lossy = true
      bytes = this.#slice(this.#start)
      // The decoder's pending state belongs to bytes that are gone: start over.
      this.#readDecoder = new TextDecoder('utf-8', decoderOptions)
      bytes = bytes.subarray(this.#tailStartsLine ? 0 : restartAfterLoss(bytes))
    } else {
      bytes = this.#slice(this.#readOffset)
    }
    this.#readOffset = this.#total
    let text = this.#readDecoder.decode(bytes, { stream: !this.#ended })
    if (this.#ended) this.#readDecoder = new TextDecoder('utf-8', decoderOptions)
    text = scrubNul(text)
    return { text, lossy }
  }

  /**
   * Bytes `offset`…`offset + length` of the complete stream so far, from the spill file when there
   * is an intact one, else from memory when it still holds the stream from its first byte;
   * undefined when neither has it (the stream overflowed without a file). Clamped to what exists.
   */
  readRange(offset: number, length: number): Buffer | undefined {
    const end = Math.min(this.#total, offset + length)
    if (offset >= end) return this.#spillState === 'writing' || this.#spillState === 'closed' || this.#start === 0 ? Buffer.alloc(0) : undefined
    if (this.#spillState === 'writing' || this.#spillState === 'closed') return this.#readFile(offset, end - offset)
    if (this.#start !== 0) return undefined
    return Buffer.from(this.#slice(0).subarray(offset, end))
  }

  /** Reads from the spill file (its gathered part written first, so it holds `#total` bytes). */
  #readFile(offset: number, length: number): Buffer | undefined {
    this.#flushSpill()
    if (this.#spillState !== 'writing' && this.#spillState !== 'closed') return undefined
    let fd = -1
    try {
      // Our own file in our private directory; O_NOFOLLOW in case anything replaced it with a link.
      fd = openSync(this.#spillPath!, constants.O_RDONLY | constants.O_NOFOLLOW)
      const out = Buffer.alloc(length)
      let got = 0
      while (got < length) {
        const n = readSync(fd, out, got, length - got, offset + got)
        if (n === 0) break
        got += n
      }
      return got === length ? out : out.subarray(0, got)
    } catch {
      return undefined
    } finally {
      if (fd >= 0) closeSync(fd)
    }
  }

  /** Frees memory and deletes the spill file unless configured to keep it. Idempotent. */
  dispose(): void {
    this.end()
    this.#chunks = []
    this.#keptBytes = 0
    if (!this.#keepSpill && (this.#spillState === 'closed' || this.#spillState === 'writing')) {
      this.#unlinkSpill()
      this.#spillState = 'deleted'
    }
  }

  #openSpill(totalAfterWrite: number): void {
    if (!this.#spillPath || this.#maxSpillBytes <= 0 || totalAfterWrite > this.#maxSpillBytes) {
      this.#spillState = 'over-cap'
      return
    }
    try {
      // 'wx' is O_CREAT|O_EXCL: never opens an existing file and never follows a planted link.
      this.#spillFd = openSync(this.#spillPath, 'wx', 0o600)
      this.#spillState = 'writing'
    } catch {
      this.#breakSpill()
      return
    }
    // What memory holds, in one write (a failure breaks the file there).
    this.#spillParts = [...this.#chunks]
    this.#spillPartBytes = this.#keptBytes
    this.#flushSpill()
  }

  #spillWrite(bytes: Buffer): void {
    if (this.#spillState !== 'writing') return
    if (this.#total > this.#maxSpillBytes) {
      // Over the cap the file could never be complete: drop it rather than advertise a partial copy.
      this.#breakSpill('over-cap')
      return
    }
    this.#spillParts.push(bytes)
    this.#spillPartBytes += bytes.length
    if (this.#spillPartBytes >= SPILL_BLOCK_BYTES) this.#flushSpill()
    else if (!this.#spillTimer) {
      this.#spillTimer = setTimeout(() => {
        this.#spillTimer = undefined
        this.#flushSpill()
      }, SPILL_DELAY_MS)
      this.#spillTimer.unref?.()
    }
  }

  /** Writes the gathered part (one writev for all of it, when the kernel takes it whole). */
  #flushSpill(): void {
    if (this.#spillTimer) {
      clearTimeout(this.#spillTimer)
      this.#spillTimer = undefined
    }
    const parts = this.#spillParts
    if (parts.length === 0) return
    this.#spillParts = []
    this.#spillPartBytes = 0
    if (this.#spillState !== 'writing') return
    try {
      let written = writevSync(this.#spillFd, parts)
      // A short write: the rest part by part.
      for (const part of parts) {
        if (written >= part.length) {
          written -= part.length
          continue
        }
        writeFully(this.#spillFd, written > 0 ? part.subarray(written) : part)
        written = 0
      }
    } catch {
      this.#breakSpill()
    }
  }

  #breakSpill(state: 'broken' | 'over-cap' = 'broken'): void {
    this.#spillParts = []
    this.#spillPartBytes = 0
    if (this.#spillTimer) {
      clearTimeout(this.#spillTimer)
      this.#spillTimer = undefined
    }
    if (this.#spillFd >= 0) {
      try {
        closeSync(this.#spillFd)
      } catch {
        // Already unusable; the file is deleted below.
      }
      this.#spillFd = -1
    }
    if (this.#spillState === 'writing') this.#unlinkSpill()
    this.#spillState = state
  }

  #unlinkSpill(): void {
    if (!this.#spillPath) return
    try {
      unlinkSync(this.#spillPath)
    } catch {
      // Gone already.
    }
  }

  /** Drops bytes from the front until at most maxBytes are kept. */
  #trim(): void {
    let excess = this.#keptBytes - this.#maxBytes
    while (excess > 0) {
      const first = this.#chunks[0]
      if (first.length <= excess) {
        this.#chunks.shift()
        this.#keptBytes -= first.length
        excess -= first.length
        if (excess === 0) this.#tailStartsLine = first[first.length - 1] === LF
      } else {
        this.#tailStartsLine = first[excess - 1] === LF
        // Keep a view while it uses most of its memory; copy only when the view would pin a buffer
        // much larger than what it keeps. Copying every time cost ~1 s of CPU per GB of output
        // (one 64 KB copy per pipe read), and only the first chunk is ever partial, so memory
        // stays within maxBytes plus one underlying buffer.
        const rest = first.subarray(excess)
        this.#chunks[0] = rest.length * 2 < rest.buffer.byteLength ? Buffer.from(rest) : rest
        this.#keptBytes -= excess
        excess = 0
      }
    }
  }

  /** Kept bytes from absolute offset `from` (≥ start) to the end. */
  #slice(from: number): Buffer {
    const skip = from - this.#start
    if (skip <= 0 && this.#chunks.length === 1) return this.#chunks[0]
    const all = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#keptBytes)
    if (this.#chunks.length > 1) this.#chunks = [all]
    return skip > 0 ? all.subarray(skip) : all
  }
}
