import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { afterAll, describe, expect, it } from 'vitest'
import { OutputPair } from '../src/output-pair.js'
import { endsInsideCharacter, SpillMeter, type SpillThreshold } from '../src/spill-meter.js'

const root = mkdtempSync(join(tmpdir(), 'dsh-spill-meter-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Feeds chunks (stream, text or bytes) to a meter; returns after which chunk (1-based) it fired, or 0. */
function firesAfter(threshold: SpillThreshold, chunks: Array<['stdout' | 'stderr', string | Uint8Array]>): number {
  let fired = 0
  let calls = 0
  let index = 0
  const meter = new SpillMeter(threshold, () => {
    calls++
    fired = index
  })
  for (const [stream, chunk] of chunks) {
    index++
    meter.add(stream, typeof chunk === 'string' ? Buffer.from(chunk) : chunk)
  }
  expect(calls).toBeLessThanOrEqual(1)
  expect(meter.over).toBe(fired > 0)
  return fired
}

describe('SpillMeter: both streams measured as the model reads them', () => {
  it('bytes: exactly the threshold does not fire, one more does (stdout alone, stderr alone, both)', () => {
    expect(firesAfter({ bytes: 10 }, [['stdout', '0123456789']])).toBe(0)
    expect(firesAfter({ bytes: 10 }, [['stdout', '0123456789'], ['stdout', 'x']])).toBe(2)
    expect(firesAfter({ bytes: 10 }, [['stderr', '0123456789x']])).toBe(1)
    expect(firesAfter({ bytes: 10 }, [['stdout', '01234'], ['stderr', '56789']])).toBe(0)
    expect(firesAfter({ bytes: 10 }, [['stdout', '01234'], ['stderr', '56789'], ['stdout', 'x']])).toBe(3)
  })

  it('lines: newlines of both streams plus each unfinished last line', () => {
    expect(firesAfter({ lines: 3 }, [['stdout', 'a\nb\nc\n']])).toBe(0)
    expect(firesAfter({ lines: 3 }, [['stdout', 'a\nb\nc\nd']])).toBe(1)
    // Two unfinished lines, one per stream, are two lines.
    expect(firesAfter({ lines: 3 }, [['stdout', 'a\nb'], ['stderr', 'c']])).toBe(0)
    expect(firesAfter({ lines: 3 }, [['stdout', 'a\nb'], ['stderr', 'c\nd']])).toBe(2)
    // Finishing a line does not add one.
    expect(firesAfter({ lines: 2 }, [['stdout', 'a\nb'], ['stdout', '\n']])).toBe(0)
  })

  it('invalid bytes and NUL count as U+FFFD (3 bytes each), valid characters as their own bytes', () => {
    expect(firesAfter({ bytes: 6 }, [['stdout', 'é€']])).toBe(0) // 2 + 3 bytes
    expect(firesAfter({ bytes: 8 }, [['stdout', new Uint8Array([0, 0, 0])]])).toBe(1) // 9 bytes of text
    expect(firesAfter({ bytes: 9 }, [['stdout', new Uint8Array([0, 0, 0])]])).toBe(0)
    expect(firesAfter({ bytes: 8 }, [['stdout', new Uint8Array([0xff, 0xfe, 0x41])]])).toBe(0) // 3 + 3 + 1
    expect(firesAfter({ bytes: 6 }, [['stdout', new Uint8Array([0xff, 0xfe, 0x41])]])).toBe(1)
  })

  it('a character split across chunks counts once; a stream ending inside one is counted as U+FFFD', () => {
    const euro = Buffer.from('€') // e2 82 ac
    expect(firesAfter({ bytes: 3 }, [['stdout', euro.subarray(0, 1)], ['stdout', euro.subarray(1)]])).toBe(0)
    // One byte of a lead: it may end the stream and read as U+FFFD (3 bytes).
    expect(firesAfter({ bytes: 2 }, [['stdout', euro.subarray(0, 1)]])).toBe(1)
  })

  it('threshold 0 fires on the first byte; an unset field never fires', () => {
    expect(firesAfter({ bytes: 0 }, [['stdout', 'a']])).toBe(1)
    expect(firesAfter({ lines: 0 }, [['stderr', 'a']])).toBe(1)
    expect(firesAfter({}, [['stdout', 'x'.repeat(100_000) + '\n'.repeat(100_000)]])).toBe(0)
    expect(firesAfter({ bytes: 0 }, [['stdout', '']])).toBe(0)
  })
})

describe('OutputPair with a spill threshold', () => {
  let seq = 0
  function pair(spillAbove: SpillThreshold | undefined, maxBytes = 1000) {
    const dir = join(root, `pair-${++seq}`)
    mkdirSync(dir, { mode: 0o700 })
    return new OutputPair({ maxBytes, maxSpillBytes: 1 << 20, dir, label: 'run-1', keepSpillFile: false, ...(spillAbove ? { spillAbove } : {}) }, join)
  }

  it('both streams under the threshold together: no file; over it together: each stream keeps a complete file', async () => {
    const under = pair({ bytes: 10, lines: 10 })
    under.stdout.write('01234')
    under.stderr.write('56789')
    under.end()
    expect(under.spilled).toBe(false)
    expect(under.stdout.result().spillPath).toBeUndefined()
    under.dispose()

    const over = pair({ bytes: 10, lines: 10 })
    over.stdout.write('01234')
    over.stderr.write('56789')
    over.stdout.write('x')
    over.stderr.write('y')
    over.end()
    const out = over.stdout.result()
    const err = over.stderr.result()
    // Memory holds both whole: nothing truncated, and yet both name their complete files.
    expect(out).toMatchObject({ text: '01234x', truncated: false })
    expect(err).toMatchObject({ text: '56789y', truncated: false })
    expect(readFileSync(out.spillPath!, 'utf8')).toBe('01234x')
    expect(readFileSync(err.spillPath!, 'utf8')).toBe('56789y')
    over.dispose()
    expect(existsSync(out.spillPath!)).toBe(false)
  })

  it('a stream still empty when the threshold is crossed spills from its first byte; one that never writes has no file', () => {
    const p = pair({ lines: 2 })
    p.stdout.write('a\nb\nc\n')
    expect(p.stdout.spillPath).toBeDefined()
    expect(p.stderr.spillPath).toBeUndefined()
    p.stderr.write('late\n')
    p.end()
    expect(readFileSync(p.stderr.result().spillPath!, 'utf8')).toBe('late\n')
    p.dispose()

    const quiet = pair({ lines: 2 })
    quiet.stdout.write('a\nb\nc\n')
    quiet.end()
    expect(quiet.stderr.result().spillPath).toBeUndefined()
    quiet.dispose()
  })

  it('a background read and a yield name the files while they are being written', () => {
    const p = pair({ lines: 1 })
    p.stdout.write('1\n2\n')
    expect(p.read()).toEqual({ delta: '1\n2\n', streams: { stdout: '1\n2\n', stderr: '' }, screen: false, lossy: false, spillPaths: { stdout: p.stdout.spillPath } })
    p.stderr.write('e\n')
    const so = p.soFar()
    expect(so.stderr).toMatchObject({ text: 'e\n', truncated: false, spillPath: p.stderr.spillPath })
    p.dispose()
  })

  it('without a threshold a pair spills only on memory overflow (the contract default)', () => {
    const p = pair(undefined, 4)
    p.stdout.write('a\nb\n')
    p.stderr.write('c\nd\n')
    p.end()
    expect(p.spilled).toBe(false)
    p.stdout.write('more')
    const q = pair(undefined, 4)
    q.stdout.write('a\nb\nc')
    q.end()
    expect(q.stdout.result()).toMatchObject({ truncated: true })
    expect(readFileSync(q.stdout.result().spillPath!, 'utf8')).toBe('a\nb\nc')
    p.dispose()
    q.dispose()
  })

  it('collects real streams through the threshold: the files are byte-complete', async () => {
    const p = pair({ bytes: 100, lines: 5 })
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const drain = p.collect({ stdout, stderr }, 1000)
    for (let i = 1; i <= 50; i++) (i % 2 ? stdout : stderr).write(`${i}\n`)
    stdout.end()
    stderr.end()
    await drain()
    p.end()
    const odd = Array.from({ length: 25 }, (_, i) => `${2 * i + 1}\n`).join('')
    const even = Array.from({ length: 25 }, (_, i) => `${2 * i + 2}\n`).join('')
    expect(readFileSync(p.stdout.result().spillPath!, 'utf8')).toBe(odd)
    expect(readFileSync(p.stderr.result().spillPath!, 'utf8')).toBe(even)
    p.dispose()
  })
})

describe('endsInsideCharacter', () => {
  it('tells a complete character from a cut one', () => {
    const emoji = Buffer.from('😀') // 4 bytes
    expect(endsInsideCharacter(Buffer.from('ab'))).toBe(false)
    expect(endsInsideCharacter(emoji)).toBe(false)
    expect(endsInsideCharacter(emoji.subarray(0, 3))).toBe(true)
    expect(endsInsideCharacter(Buffer.from('é'))).toBe(false)
    expect(endsInsideCharacter(Buffer.from('é').subarray(0, 1))).toBe(true)
    // Only continuation bytes: the lead is further back, so it may be cut.
    expect(endsInsideCharacter(emoji.subarray(1, 3))).toBe(true)
    expect(endsInsideCharacter(Buffer.alloc(0))).toBe(false)
  })
})
