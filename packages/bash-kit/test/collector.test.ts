import * as fs from 'node:fs'
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { OutputCollector, SPILL_BLOCK_BYTES, SPILL_DELAY_MS } from '../src/collector.js'

// Failure injection for the spill file: the collector imports these from node:fs.
// `writes` counts the write system calls (writeSync and writevSync) since the last reset.
const failures = vi.hoisted(() => ({ writeAfter: Infinity as number, close: false, writes: 0 }))
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  let writes = 0
  const fail = () => {
    failures.writes++
    if (++writes > failures.writeAfter) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' })
  }
  return {
    ...real,
    writeSync: ((...args: Parameters<typeof real.writeSync>) => {
      fail()
      return (real.writeSync as (...a: unknown[]) => number)(...args)
    }) as typeof real.writeSync,
    writevSync: ((...args: Parameters<typeof real.writevSync>) => {
      fail()
      return real.writevSync(...args)
    }) as typeof real.writevSync,
    closeSync: ((fd: number) => {
      real.closeSync(fd)
      if (failures.close) throw Object.assign(new Error('EIO: i/o error, close'), { code: 'EIO' })
    }) as typeof real.closeSync,
  }
})

const root = mkdtempSync(join(tmpdir(), 'dsh-collector-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let dir: string
let seq = 0
beforeEach(() => {
  dir = join(root, `case-${++seq}`)
  fs.mkdirSync(dir, { mode: 0o700 })
  failures.writeAfter = Infinity
  failures.close = false
})
afterEach(() => {
  failures.writeAfter = Infinity
  failures.close = false
})

const utf8 = (text: string) => Buffer.from(text, 'utf8')
const spillAt = () => join(dir, 'stream.log')

function collector(maxBytes: number, extra: Partial<ConstructorParameters<typeof OutputCollector>[0]> = {}): OutputCollector {
  return new OutputCollector({ maxBytes, maxSpillBytes: 1 << 20, spillPath: spillAt(), ...extra })
}

/** Reads until nothing new arrives; returns the concatenation and whether any read was lossy. */
function readAll(c: OutputCollector): { text: string; lossy: boolean } {
  let text = ''
  let lossy = false
  for (;;) {
    const read = c.read()
    lossy ||= read.lossy
    if (!read.text) return { text, lossy }
    text += read.text
  }
}

describe('OutputCollector: the in-memory tail', () => {
  it('keeps a stream of exactly maxBytes whole, with no spill file', () => {
    const c = collector(10)
    c.write('0123456789')
    c.end()
    expect(c.result()).toEqual({ text: '0123456789', truncated: false, droppedBytes: 0, totalBytes: 10 })
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('truncates maxBytes + 1 by exactly one byte and spills the whole stream', () => {
    const c = collector(10)
    c.write('01234')
    c.write('56789')
    c.write('X')
    c.end()
    const result = c.result()
    expect(result).toEqual({ text: '123456789X', truncated: true, droppedBytes: 1, totalBytes: 11, spillPath: spillAt() })
    expect(readFileSync(spillAt(), 'utf8')).toBe('0123456789X')
  })

  it('a single chunk larger than the cap keeps its tail and spills it whole', () => {
    const c = collector(10)
    const chunk = 'abcdefghijklmnopqrstuvwxy'
    c.write(chunk)
    c.end()
    expect(c.result()).toMatchObject({ text: 'pqrstuvwxy', truncated: true, droppedBytes: 15, totalBytes: 25 })
    expect(readFileSync(spillAt(), 'utf8')).toBe(chunk)
  })

  it('memory stays bounded: many chunks keep only the tail', () => {
    const c = collector(1000, { maxSpillBytes: 0 })
    const chunk = Buffer.alloc(4096, 'z')
    for (let i = 0; i < 2000; i++) c.write(chunk)
    c.write('END')
    c.end()
    const result = c.result()
    expect(result.text).toHaveLength(1000)
    expect(result.text.endsWith('zzzEND')).toBe(true)
    expect(result.droppedBytes).toBe(2000 * 4096 + 3 - 1000)
    expect(result.spillPath).toBeUndefined()
  })

  it('trims the tail at a character boundary when the cut falls inside a character', () => {
    // '€' is 3 bytes: a 4-byte tail of '€€' starts with the last byte of the first one.
    const c = collector(4)
    c.write('€€')
    c.end()
    expect(c.result()).toMatchObject({ text: '€', truncated: true, droppedBytes: 3, totalBytes: 6 })
    // A tail made only of the end of a 4-byte character keeps nothing of it.
    const d = new OutputCollector({ maxBytes: 2, maxSpillBytes: 0 })
    d.write('😀')
    d.end()
    expect(d.result()).toEqual({ text: '', truncated: true, droppedBytes: 4, totalBytes: 4 })
  })

  it('a character split across chunks arrives intact', () => {
    const c = collector(100)
    const euro = utf8('€')
    c.write(euro.subarray(0, 1))
    c.write(euro.subarray(1, 2))
    c.write(euro.subarray(2))
    c.end()
    expect(c.result().text).toBe('€')
  })

  it('invalid bytes become U+FFFD and NUL bytes never reach the text', () => {
    const c = collector(100)
    c.write(Buffer.from([0x61, 0xff, 0x62, 0x00, 0x63, 0xc3]))
    c.end()
    // The stream ended inside a character (0xc3): that is invalid too.
    expect(c.result().text).toBe('a\uFFFDb\uFFFDc\uFFFD')
    expect(c.result().text).not.toContain('\0')
    expect(c.result().totalBytes).toBe(6)
  })

  it('a leading byte order mark is part of the stream and kept', () => {
    const c = collector(100)
    c.write(Buffer.from([0xef, 0xbb, 0xbf, 0x61]))
    c.end()
    expect(c.result().text).toBe('\uFEFFa')
  })

  it('end() is idempotent and writes after it are ignored', () => {
    const c = collector(4)
    c.write('abcdef')
    c.end()
    c.end()
    c.write('ghi')
    expect(c.ended).toBe(true)
    expect(c.result()).toMatchObject({ text: 'cdef', totalBytes: 6, spillPath: spillAt() })
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdef')
    c.write(Buffer.alloc(0))
    expect(c.totalBytes).toBe(6)
  })

  it('rejects a cap below one byte', () => {
    expect(() => new OutputCollector({ maxBytes: 0, maxSpillBytes: 0 })).toThrow(/maxBytes must be a positive integer/)
    expect(() => new OutputCollector({ maxBytes: 1.5, maxSpillBytes: 0 })).toThrow(/maxBytes/)
  })

  it('keeps text and droppedBytes consistent for random UTF-8 streams (byte-exact tail)', () => {
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    const alphabet = ['a', 'é', '€', '😀', '\n', 'z']
    for (let round = 0; round < 200; round++) {
      let text = ''
      const length = Math.floor(random() * 60)
      for (let i = 0; i < length; i++) text += alphabet[Math.floor(random() * alphabet.length)]
      const bytes = utf8(text)
      const cap = 1 + Math.floor(random() * 40)
      const c = new OutputCollector({ maxBytes: cap, maxSpillBytes: 0 })
      for (let at = 0; at < bytes.length; ) {
        const size = 1 + Math.floor(random() * 7)
        c.write(bytes.subarray(at, at + size))
        at += size
      }
      c.end()
      const result = c.result()
      expect(result.totalBytes).toBe(bytes.length)
      // The text is exactly the stream from droppedBytes on, which starts at a character boundary.
      expect(utf8(result.text).equals(bytes.subarray(result.droppedBytes))).toBe(true)
      expect(result.truncated).toBe(result.droppedBytes > 0)
      expect(bytes.length - result.droppedBytes).toBeLessThanOrEqual(cap)
      // Only a continuation byte or two of a character may be dropped beyond the cap.
      expect(bytes.length - result.droppedBytes).toBeGreaterThanOrEqual(Math.min(bytes.length, cap - 3))
    }
  })
})

describe('OutputCollector: incremental reads', () => {
  it('never repeats or skips a byte while nothing is lost', () => {
    const c = collector(1000)
    let got = ''
    for (let i = 0; i < 50; i++) {
      c.write(`line ${i}\n`)
      if (i % 7 === 0) {
        const read = c.read()
        expect(read.lossy).toBe(false)
        got += read.text
      }
    }
    c.end()
    got += readAll(c).text
    let expected = ''
    for (let i = 0; i < 50; i++) expected += `line ${i}\n`
    expect(got).toBe(expected)
    expect(c.read()).toEqual({ text: '', lossy: false })
  })

  it('delivers a character split across reads once, on the read that completes it', () => {
    const c = collector(100)
    const smile = utf8('😀')
    c.write(Buffer.concat([utf8('a'), smile.subarray(0, 2)]))
    expect(c.read()).toEqual({ text: 'a', lossy: false })
    c.write(smile.subarray(2, 3))
    expect(c.read()).toEqual({ text: '', lossy: false })
    c.write(Buffer.concat([smile.subarray(3), utf8('b')]))
    expect(c.read()).toEqual({ text: '😀b', lossy: false })
  })

  it('a stream that ends inside a character gives U+FFFD on the last read', () => {
    const c = collector(100)
    c.write(Buffer.from([0x61, 0xe2, 0x82]))
    expect(c.read().text).toBe('a')
    c.end()
    expect(c.read().text).toBe('\uFFFD')
    expect(c.read().text).toBe('')
  })

  it('a read across the trim point is lossy, restarts at a character boundary and later reads are not', () => {
    const c = collector(10)
    c.write('abcde')
    expect(c.read()).toEqual({ text: 'abcde', lossy: false })
    c.write('fghij')
    c.write('€€€€') // 12 bytes: 'fghij' and the first bytes fall out of memory
    const read = c.read()
    expect(read.lossy).toBe(true)
    // Kept: the last 10 bytes = 1 continuation byte + '€€€'; the partial character is skipped.
    expect(read.text).toBe('€€€')
    expect(c.spillPath).toBe(spillAt())
    c.write('xyz')
    expect(c.read()).toEqual({ text: 'xyz', lossy: false })
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdefghij€€€€xyz')
  })

  it('a lossy read restarts at a line start: the rest of a cut line never reads as a line of its own', () => {
    // The interleaving of issue 25 (item 10), as the local executor's race test met it under load:
    // `seq`-like lines, 64,000 bytes of memory, and the pipe delivering 16 pages of whole lines
    // (65,502 bytes) per chunk. The reader runs once per chunk, then misses one: the kept tail
    // starts inside line 13014, and its rest `014` used to be delivered right after `12768`.
    let stream = ''
    for (let n = 1; n <= 30_000; n++) stream += `${n}\n`
    const c = collector(64_000)
    const at = (line: number) => stream.indexOf(`\n${line}\n`) + 1
    c.write(stream.slice(0, at(12769)))
    expect(c.read()).toEqual({ text: stream.slice(at(404), at(12769)), lossy: true })
    c.write(stream.slice(at(12769), at(23681)))
    // 130,974 bytes written: memory keeps from byte 66,974, three bytes into `13014\n`.
    expect(stream.slice(at(23681) - 64_000).startsWith('014\n13015\n')).toBe(true)
    expect(c.read()).toEqual({ text: stream.slice(at(13015), at(23681)), lossy: true })
    c.write(stream.slice(at(23681), at(23700)))
    expect(c.read()).toEqual({ text: stream.slice(at(23681), at(23700)), lossy: false })
  })

  it('any interleaving of writes, reads, end, requireSpill and dispose: each read is the next piece of the stream', () => {
    // Seeded: the same 300 interleavings every run. Lines of 3–40 bytes in chunks cut anywhere.
    let seed = 25
    const random = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
    for (let round = 0; round < 300; round++) {
      const c = collector(1 + random(120), { maxSpillBytes: random(2) ? 1 << 20 : 200 })
      let stream = ''
      let line = 0
      let at = 0
      for (let step = 0; step < 60; step++) {
        const action = random(20)
        if (action < 12) {
          let chunk = ''
          for (let k = random(5); k >= 0; k--) chunk += `${line++}:${'x'.repeat(random(36))}\n`
          const cut = random(chunk.length)
          c.write(chunk.slice(0, cut))
          c.write(chunk.slice(cut))
          if (!c.ended) stream += chunk
        } else if (action < 18) {
          const { text, lossy } = c.read()
          if (lossy) {
            // Past what was read; at a line start unless no line starts in the kept tail.
            const restart = stream.length - text.length
            expect(restart).toBeGreaterThan(at)
            if (text.includes('\n')) expect(stream[restart - 1]).toBe('\n')
            at = restart
          }
          expect(stream.slice(at, at + text.length)).toBe(text)
          at += text.length
        } else if (action === 18) {
          c.requireSpill()
        } else {
          random(2) ? c.end() : c.dispose()
        }
      }
      expect(c.totalBytes).toBe(stream.length)
    }
  })

  it('a lossy read keeps the first kept line whole when the cut fell on a line start', () => {
    // 'lost\nkept\nlast' is 14 bytes; the cut falls after byte 5 (9 kept), 4 or 6.
    const reads = (maxBytes: number, chunks: string[]) => {
      const c = collector(maxBytes)
      c.write('a\n')
      expect(c.read()).toEqual({ text: 'a\n', lossy: false })
      for (const chunk of chunks) c.write(chunk)
      return c.read()
    }
    for (const chunks of [['lost\nkept\nlast'], ['lo', 'st\n', 'kept\n', 'last'], ['lost\n', 'kept\nlast']]) {
      // Exactly 'lost\n' fell out of memory: the tail starts at a line start and is kept whole.
      expect(reads(9, chunks)).toEqual({ text: 'kept\nlast', lossy: true })
      // Only 'lost' fell out: the newline left is the end of a cut line, not a line.
      expect(reads(10, chunks)).toEqual({ text: 'kept\nlast', lossy: true })
      // The cut one byte later: 'ept' is the rest of a cut line, dropped with it.
      expect(reads(8, chunks)).toEqual({ text: 'last', lossy: true })
    }
  })

  it('a lossy read discards the pending half of a character whose bytes are gone', () => {
    const c = collector(4)
    c.write(Buffer.from([0xe2])) // first byte of '€'
    expect(c.read()).toEqual({ text: '', lossy: false })
    c.write(Buffer.from([0x82, 0xac]))
    c.write('wxyz') // the whole '€' falls out of memory
    expect(c.read()).toEqual({ text: 'wxyz', lossy: true })
  })

  it('NUL bytes and invalid bytes in reads are replaced like in results', () => {
    const c = collector(100)
    c.write(Buffer.from([0x00, 0x41, 0xff]))
    expect(c.read().text).toBe('\uFFFDA\uFFFD')
  })

  it('reads after dispose() report the unread bytes as lost', () => {
    const c = collector(100)
    c.write('seen')
    c.read()
    c.write('unseen')
    c.dispose()
    expect(c.read()).toEqual({ text: '', lossy: true })
    expect(c.read()).toEqual({ text: '', lossy: false })
  })
})

describe('OutputCollector: the spill file', () => {
  it('is created 0600 only on the first overflow and holds the whole stream from byte 0', () => {
    const c = collector(8)
    c.write('12345678')
    expect(fs.existsSync(spillAt())).toBe(false)
    expect(c.spillPath).toBeUndefined()
    c.write('9')
    expect(c.spillPath).toBe(spillAt())
    expect(statSync(spillAt()).mode & 0o777).toBe(0o600)
    for (let i = 0; i < 100; i++) c.write(`-${i}`)
    // Advertised while being written (for reads), in results only once the stream ended.
    expect(c.result().spillPath).toBeUndefined()
    c.end()
    let expected = '123456789'
    for (let i = 0; i < 100; i++) expected += `-${i}`
    expect(readFileSync(spillAt(), 'utf8')).toBe(expected)
    expect(c.result().spillPath).toBe(spillAt())
  })

  it('never follows or overwrites an existing file at its path; the path is then withheld', () => {
    writeFileSync(spillAt(), 'planted')
    const c = collector(4)
    c.write('abcdefgh')
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('planted')
    expect(c.spillPath).toBeUndefined()
    expect(c.result()).toMatchObject({ text: 'efgh', truncated: true })
    expect(c.result().spillPath).toBeUndefined()
    c.dispose()
    // Not ours: disposal leaves it alone.
    expect(readFileSync(spillAt(), 'utf8')).toBe('planted')
  })

  it('never follows a planted symbolic link', () => {
    const target = join(dir, 'target')
    writeFileSync(target, 'target content')
    symlinkSync(target, spillAt())
    const dangling = join(dir, 'dangling.log')
    symlinkSync(join(dir, 'would-be-created'), dangling)
    const c = collector(4)
    c.write('abcdefgh')
    c.end()
    const d = collector(4, { spillPath: dangling })
    d.write('abcdefgh')
    d.end()
    expect(readFileSync(target, 'utf8')).toBe('target content')
    expect(lstatSync(spillAt()).isSymbolicLink()).toBe(true)
    expect(readlinkSync(spillAt())).toBe(target)
    expect(fs.existsSync(join(dir, 'would-be-created'))).toBe(false)
    expect(c.spillPath).toBeUndefined()
    expect(d.spillPath).toBeUndefined()
  })

  it('a stream longer than maxSpillBytes keeps no spill file', () => {
    // Over the cap at the first overflow: no file is ever created.
    const first = collector(4, { maxSpillBytes: 6 })
    first.write('abcdefgh')
    first.end()
    expect(first.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)

    // Over the cap later: the file is deleted and the path withheld.
    const path = join(dir, 'later.log')
    const later = collector(4, { maxSpillBytes: 10, spillPath: path })
    later.write('abcdef')
    expect(later.spillPath).toBe(path)
    later.write('ghij') // exactly the cap: still complete
    expect(later.spillPath).toBe(path)
    later.write('k')
    expect(later.spillPath).toBeUndefined()
    expect(fs.existsSync(path)).toBe(false)
    later.end()
    expect(later.result()).toMatchObject({ text: 'hijk', truncated: true, droppedBytes: 7, totalBytes: 11 })
    expect(later.result().spillPath).toBeUndefined()
  })

  it('maxSpillBytes 0 or no path: never spills', () => {
    const none = new OutputCollector({ maxBytes: 2, maxSpillBytes: 1000 })
    none.write('abc')
    none.end()
    expect(none.result()).toEqual({ text: 'bc', truncated: true, droppedBytes: 1, totalBytes: 3 })
    const zero = collector(2, { maxSpillBytes: 0 })
    zero.write('abc')
    zero.end()
    expect(zero.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('a directory that cannot be written: the path is withheld', () => {
    const c = collector(2, { spillPath: join(dir, 'missing-dir', 'stream.log') })
    c.write('abc')
    c.end()
    expect(c.spillPath).toBeUndefined()
    expect(c.result()).toEqual({ text: 'bc', truncated: true, droppedBytes: 1, totalBytes: 3 })
    const underFile = join(dir, 'a-file')
    writeFileSync(underFile, '')
    const d = collector(2, { spillPath: join(underFile, 'stream.log') })
    d.write('abc')
    d.end()
    expect(d.result().spillPath).toBeUndefined()
  })

  it('a write that fails midway deletes the file and withholds the path', () => {
    const c = collector(4)
    c.write('abcdef') // opens the file; the chunk waits for the next block write
    expect(c.spillPath).toBe(spillAt())
    failures.writeAfter = 0
    c.write('gh')
    // The block is written (and fails) when anything reads: here the incremental read.
    c.read()
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
    failures.writeAfter = Infinity
    c.write('ij')
    c.end()
    expect(c.result()).toMatchObject({ text: 'ghij', truncated: true })
    expect(c.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('a failure while copying the kept bytes at the first overflow withholds the path', () => {
    const c = collector(4)
    c.write('ab')
    c.write('cd')
    failures.writeAfter = 0
    c.write('e')
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('a close that fails withholds the path and deletes the file', () => {
    const c = collector(4)
    c.write('abcdefgh')
    failures.close = true
    c.end()
    expect(c.spillPath).toBeUndefined()
    expect(c.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('dispose() deletes the spill file unless it is to be kept; it is idempotent', () => {
    const c = collector(2)
    c.write('abc')
    c.end()
    expect(fs.existsSync(spillAt())).toBe(true)
    c.dispose()
    c.dispose()
    expect(fs.existsSync(spillAt())).toBe(false)
    expect(c.spillPath).toBeUndefined()

    const keptPath = join(dir, 'kept.log')
    const kept = collector(2, { spillPath: keptPath, keepSpillFile: true })
    kept.write('abc')
    kept.dispose()
    expect(readFileSync(keptPath, 'utf8')).toBe('abc')
  })

  it('dispose() while the stream is still being written closes and deletes the file', () => {
    const c = collector(2)
    c.write('abcd')
    c.dispose()
    expect(fs.existsSync(spillAt())).toBe(false)
    c.write('more')
    expect(fs.existsSync(spillAt())).toBe(false)
  })
})

describe('OutputCollector: the spill file is written in blocks', () => {
  const lines = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('')

  it('many small chunks (a pipe read each) take a handful of writes, and the file is the whole stream', () => {
    const c = collector(64_000, { maxSpillBytes: 64 << 20 })
    failures.writes = 0
    let stream = ''
    // 1,000,000 lines of `seq` in 4 KiB pieces, as a reader that keeps up with `seq` gets them.
    const all = Buffer.from(lines(1, 1_000_000))
    for (let at = 0; at < all.length; at += 4096) c.write(all.subarray(at, at + 4096))
    stream = all.toString()
    c.end()
    // ~1,700 pieces; one write per SPILL_BLOCK_BYTES (and the first overflow's copy of memory).
    expect(failures.writes).toBeLessThanOrEqual(Math.ceil(all.length / SPILL_BLOCK_BYTES) + 2)
    expect(readFileSync(spillAt(), 'utf8')).toBe(stream)
  })

  it('the file holds every byte written before a read, a readRange or the end, however small', () => {
    const c = collector(4)
    c.write('abcdef')
    c.write('gh')
    // Nothing read yet: the gathered part may still wait.
    expect(c.readRange(2, 4)?.toString()).toBe('cdef')
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdefgh')
    c.write('ij')
    c.read()
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdefghij')
    c.write('k')
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdefghijk')
  })

  it('a quiet stream\'s file is current within SPILL_DELAY_MS without any read', async () => {
    const c = collector(4)
    c.write('abcdef')
    c.write('gh')
    await new Promise((resolve) => setTimeout(resolve, SPILL_DELAY_MS + 50))
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcdefgh')
    c.dispose()
  })

  it('a block write that fails deletes the file and withholds the path; what memory holds stays readable', () => {
    const c = collector(4)
    c.write('abcdef')
    failures.writeAfter = 0
    c.end()
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
    expect(c.result()).toMatchObject({ text: 'cdef', truncated: true, droppedBytes: 2 })
    expect(c.readRange(0, 2)).toBeUndefined()
  })

  it('going over maxSpillBytes with a part still gathered drops the file and writes nothing more', () => {
    const c = collector(4, { maxSpillBytes: 10 })
    c.write('abcdef')
    failures.writes = 0
    c.write('ghijk')
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
    c.end()
    expect(failures.writes).toBe(0)
  })
})

describe('OutputCollector: requireSpill (a reader may cut a stream memory holds whole)', () => {
  it('spills at once when the stream has output: the file holds it from byte 0, and later bytes follow', () => {
    const c = collector(100)
    c.write('first\n')
    c.requireSpill()
    expect(c.spillPath).toBe(spillAt())
    c.write('second\n')
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('first\nsecond\n')
    // Not truncated, yet the result names the file: a budget may still cut it.
    expect(c.result()).toEqual({ text: 'first\nsecond\n', truncated: false, droppedBytes: 0, totalBytes: 13, spillPath: spillAt() })
    expect(statSync(spillAt()).mode & 0o777).toBe(0o600)
  })

  it('an empty stream keeps no file until its first byte', () => {
    const c = collector(100)
    c.requireSpill()
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
    c.write('x')
    expect(c.spillPath).toBe(spillAt())
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('x')
  })

  it('an empty stream that ends without output never gets a file', () => {
    const c = collector(100)
    c.requireSpill()
    c.end()
    expect(c.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('a stream that already ended gets its file complete and closed at once', () => {
    const c = collector(100)
    c.write('done\n')
    c.end()
    c.requireSpill()
    expect(c.result().spillPath).toBe(spillAt())
    expect(readFileSync(spillAt(), 'utf8')).toBe('done\n')
  })

  it('is idempotent, and changes nothing for a stream that spilled already or is over the cap', () => {
    const c = collector(2)
    c.write('abcd')
    c.requireSpill()
    c.requireSpill()
    c.end()
    expect(readFileSync(spillAt(), 'utf8')).toBe('abcd')

    const capped = collector(2, { spillPath: join(dir, 'capped.log'), maxSpillBytes: 3 })
    capped.write('abcd')
    capped.requireSpill()
    capped.end()
    expect(capped.result().spillPath).toBeUndefined()
    expect(fs.existsSync(join(dir, 'capped.log'))).toBe(false)
  })

  it('a required spill still respects maxSpillBytes: past the cap the file is dropped', () => {
    const c = collector(100, { maxSpillBytes: 5 })
    c.write('abc')
    c.requireSpill()
    expect(c.spillPath).toBe(spillAt())
    c.write('def')
    c.end()
    expect(c.result().spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('after dispose() it writes no file (memory no longer holds the stream)', () => {
    const c = collector(100)
    c.write('gone\n')
    c.dispose()
    c.requireSpill()
    expect(c.spillPath).toBeUndefined()
    expect(fs.existsSync(spillAt())).toBe(false)
  })

  it('onWrite sees every accepted chunk, in order, and nothing after end()', () => {
    const seen: string[] = []
    const c = collector(3, { onWrite: (bytes) => seen.push(bytes.toString()) })
    c.write('ab')
    c.write('')
    c.write(utf8('cde'))
    c.end()
    c.write('late')
    expect(seen).toEqual(['ab', 'cde'])
  })
})
