import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spillThreshold } from '@deepseek-ai/dsh-tool-bash'
import { MCP_DEFAULTS } from '../src/args.js'
import { bash, call, type StdioServer, startStdio, waitFor } from './helpers.js'

/**
 * The MCP promise "never loses output", through the real `dsh-bash mcp` process and the SDK
 * client: a result is either the whole output, or it names a file (or two) holding the complete
 * stream(s). Swept around every threshold that decides it: the spill threshold (budget minus the
 * markers' reserve), the budget itself and the executor's memory bound, in bytes and in lines, on
 * stdout alone, stderr alone and both; for foreground results, background reads, interactive reads
 * and a yielded call.
 */

const budget = { bytes: MCP_DEFAULTS.maxResultBytes, lines: MCP_DEFAULTS.maxResultLines }
const threshold = spillThreshold(budget)

const CUT = /^\[output truncated; full output: ([^\]\n]+)\]$/
const DROPPED = /^\[some output was dropped from memory; full output: ([^\]\n]+)\]$/

/** `seq 1 n` as text. */
const seq = (from: number, to: number) => (to < from ? '' : `${Array.from({ length: to - from + 1 }, (_, i) => from + i).join('\n')}\n`)
/** Exactly `size` bytes of 10-byte numbered lines (`000000001\n` …), the last one possibly cut. */
const sized = (size: number) => seq(1, Math.ceil(size / 10)).split('\n').map((n) => n.padStart(9, '0')).join('\n').slice(0, size)
const sizedCommand = (size: number) => `seq -f '%09g' 1 ${Math.ceil(size / 10) + 1} | head -c ${size}`

interface Case {
  name: string
  command: string
  stdout: string
  stderr: string
}

/** Output of `total` lines or bytes: on stdout, on stderr, or split between both. */
function cases(kind: 'lines' | 'bytes', total: number): Case[] {
  const make = (n: number) => (kind === 'lines' ? { text: seq(1, n), command: `seq 1 ${n}` } : { text: sized(n), command: sizedCommand(n) })
  const all = make(total)
  const half = Math.floor(total / 2)
  const first = make(half)
  const second = kind === 'lines' ? { text: seq(half + 1, total), command: `seq ${half + 1} ${total}` } : make(total - half)
  return [
    { name: `${kind} ${total} on stdout`, command: all.command, stdout: all.text, stderr: '' },
    { name: `${kind} ${total} on stderr`, command: `${all.command} >&2`, stdout: '', stderr: all.text },
    { name: `${kind} ${total} split on both`, command: `${first.command}; ${second.command} >&2`, stdout: first.text, stderr: second.text },
  ]
}

/** The contract's uncut foreground text. */
function plain(c: Case): string {
  let text = c.stdout
  if (c.stderr !== '') text += `${text !== '' && !text.endsWith('\n') ? '\n' : ''}[stderr]\n${c.stderr}`
  return text === '' ? '(no output)' : text
}

/**
 * The invariant for one result: uncut, it is the whole output; cut, every path it names is a file
 * holding one complete stream, no marker says `(unavailable)`, and each stream is either named or
 * whole in the text.
 */
function checkForeground(c: Case, text: string): 'whole' | 'cut' {
  const head = text.split('\n')
  const markers: string[] = []
  while (CUT.test(head[markers.length] ?? '')) markers.push(CUT.exec(head[markers.length])![1])
  if (markers.length === 0) {
    expect(text, c.name).toBe(plain(c))
    return 'whole'
  }
  expect(markers, `${c.name}: ${head[0]}`).not.toContain('(unavailable)')
  const named = { stdout: false, stderr: false }
  for (const path of markers) {
    const stream = path.endsWith('-stdout.log') ? 'stdout' : 'stderr'
    expect(path.endsWith(`-${stream}.log`), path).toBe(true)
    expect(readFileSync(path, 'utf8'), `${c.name}: ${path}`).toBe(c[stream])
    named[stream] = true
  }
  if (!named.stdout) expect(text, c.name).toContain(c.stdout)
  if (!named.stderr) expect(text, c.name).toContain(c.stderr)
  expect(Buffer.byteLength(text), c.name).toBeLessThanOrEqual(budget.bytes)
  expect(text.split('\n').length, c.name).toBeLessThanOrEqual(budget.lines)
  return 'cut'
}

/** Reads a background task until it ends; returns every read's text (the first block of each result). */
async function readToEnd(server: StdioServer, id: string): Promise<string[]> {
  const reads: string[] = []
  for (;;) {
    const { texts, isError } = await call(server.client, 'bash_output', { task_id: id })
    expect(isError).toBe(false)
    reads.push(texts[0])
    if (!texts[0].endsWith('[status: running]')) return reads
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * A background (or interactive) task's reads: each is its delta whole, or a cut naming the files;
 * the files hold the complete streams (`raw` maps a file's bytes to the output, e.g. a terminal's
 * \r\n). Returns whether any read was cut. Whole reads must add up to the output when none was cut
 * (several reads only for stdout-only output: a read's `[stderr]` section starts again in each).
 */
function checkReads(name: string, reads: string[], expected: { stdout: string; stderr: string }, raw = (t: string) => t): boolean {
  let cut = false
  let joined = ''
  for (const read of reads) {
    const first = read.split('\n')[0]
    const status = read.lastIndexOf('\n[status: ')
    if (DROPPED.test(first)) {
      cut = true
      const paths = DROPPED.exec(first)![1]
      expect(paths, `${name}: ${first}`).not.toBe('(unavailable)')
      for (const path of paths.split(', ')) {
        const stream = path.endsWith('-stdout.log') ? 'stdout' : 'stderr'
        expect(raw(readFileSync(path, 'utf8')), `${name}: ${path}`).toBe(expected[stream])
      }
    } else {
      const body = status === -1 ? '' : read.slice(0, status + 1)
      if (body !== '(no new output)\n') joined += body
    }
    expect(Buffer.byteLength(read), name).toBeLessThanOrEqual(budget.bytes)
    expect(read.split('\n').length, name).toBeLessThanOrEqual(budget.lines)
  }
  if (!cut) {
    const stderr = expected.stderr === '' ? '' : `${expected.stdout !== '' && !expected.stdout.endsWith('\n') ? '\n' : ''}[stderr]\n${expected.stderr}`
    // A read's output and its status line are joined by a newline that is not the output's when the
    // read stopped inside a line (the next read continues it): over several reads, compare without
    // newlines (the content and its order still must match byte for byte).
    if (reads.length === 1) expect(joined, name).toBe(expected.stdout + stderr)
    else expect(joined.replaceAll('\n', ''), name).toBe((expected.stdout + stderr).replaceAll('\n', ''))
  }
  return cut
}

describe('dsh-bash mcp: a result the budget cuts names a file holding all of it', () => {
  let server: StdioServer

  beforeAll(async () => {
    server = await startStdio()
  })
  afterAll(async () => {
    await server?.close()
  })

  it('the thresholds are the budget minus the markers\' reserve', () => {
    expect(budget).toEqual({ bytes: 10_000, lines: 1_900 })
    expect(threshold).toEqual({ bytes: 8_976, lines: 1_884 })
  })

  const lineSizes = [threshold.lines - 1, threshold.lines, threshold.lines + 1, budget.lines - 1, budget.lines, budget.lines + 1, 2_000, 3_000]
  const byteSizes = [threshold.bytes - 1, threshold.bytes, threshold.bytes + 1, budget.bytes - 1, budget.bytes, budget.bytes + 1, 10_001 + 9_000]
  const sweep = [...lineSizes.flatMap((n) => cases('lines', n)), ...byteSizes.flatMap((n) => cases('bytes', n))]

  it(`foreground: ${sweep.length} outputs around the thresholds, each whole or with complete files`, async () => {
    const outcomes: string[] = []
    for (const c of sweep) {
      const { texts, isError } = await bash(server.client, c.command)
      expect(isError, c.name).toBe(false)
      outcomes.push(`${c.name}: ${checkForeground(c, texts[0])}`)
    }
    // The sweep does cross the budget: the first size is never cut, the last always (not vacuous).
    expect(outcomes).toContain(`lines ${threshold.lines - 1} on stdout: whole`)
    expect(outcomes).toContain('lines 3000 split on both: cut')
    expect(outcomes).toContain(`bytes ${budget.bytes + 1} on stderr: cut`)
    // The lead's case: 8,893 bytes in 2,000 lines, cut for its lines.
    expect(outcomes).toContain('lines 2000 on stdout: cut')
  })

  it('background: the full read after the end is whole or cut naming complete files', async () => {
    const outcomes: boolean[] = []
    for (const c of [...cases('lines', 3_000), ...cases('lines', threshold.lines + 1), ...cases('bytes', budget.bytes + 1), ...cases('lines', threshold.lines - 1)]) {
      const started = await bash(server.client, c.command, { run_in_background: true })
      const id = /^started background task (\S+)$/.exec(started.texts[0])![1]
      // The completion notice (a logging message) says it ended: one read then holds everything.
      await waitFor(`the notice of ${id}`, () => server.logs.some((log) => log.startsWith(`background bash task ${id} finished`)))
      const reads = await readToEnd(server, id)
      expect(reads, c.name).toHaveLength(1)
      outcomes.push(checkReads(c.name, reads, c))
    }
    expect(outcomes.slice(0, 3)).toEqual([true, true, true])
    expect(outcomes.slice(-3)).toEqual([false, false, false])
  })

  it('background: deltas read while the task prints are whole or cut naming complete files', async () => {
    let anyCut = false
    // Bursts the polls see apart: a second burst of 2,000 short lines is one delta over the line
    // budget while the whole stream (4,200 bytes) stays far under memory's bound; then a stream over
    // memory's bound, and one that is never cut.
    const bursts: Array<[string, number, string, number]> = [['a', 100, 'b', 2_000], ['a', 1_000, 'bbbbbbbbb', 2_000], ['a', 200, 'b', 300]]
    for (const [x, first, y, second] of bursts) {
      const command = `yes ${x} | head -n ${first}; sleep 0.3; yes ${y} | head -n ${second}; sleep 0.3`
      const started = await bash(server.client, command, { run_in_background: true })
      const id = /^started background task (\S+)$/.exec(started.texts[0])![1]
      const expected = `${x}\n`.repeat(first) + `${y}\n`.repeat(second)
      anyCut = checkReads(`deltas of ${command}`, await readToEnd(server, id), { stdout: expected, stderr: '' }) || anyCut
    }
    expect(anyCut).toBe(true)
  })

  it('interactive reads (the terminal view) cut only with the raw stream in a file', async () => {
    let anyCut = false
    // 2,500 short lines: over the line budget, the raw stream (7,500 bytes) under memory's bound.
    for (const [command, expected] of [['yes | head -n 2500', 'y\n'.repeat(2_500)], ['seq 1 3000', seq(1, 3_000)], ['seq 1 100', seq(1, 100)]]) {
      const started = await bash(server.client, command, { run_in_background: true, interactive: true })
      const id = /^started background task (\S+)$/.exec(started.texts[0])![1]
      const reads = await readToEnd(server, id)
      // The raw stream has the terminal's \r\n (onlcr).
      anyCut = checkReads(`interactive ${command}`, reads, { stdout: expected, stderr: '' }, (raw) => raw.replaceAll('\r\n', '\n')) || anyCut
    }
    expect(anyCut).toBe(true)
  })

  it('a spill file that cannot exist (over maxSpillBytes) says (unavailable), the contract\'s text', async () => {
    const capped = await startStdio(['--executor-config', '{"maxSpillBytes":5000}'])
    try {
      const { texts } = await bash(capped.client, 'seq 1 2000')
      expect(texts[0].startsWith('[output truncated; full output: (unavailable)]\n')).toBe(true)
      expect(texts[0].endsWith('\n1999\n2000\n')).toBe(true)
    } finally {
      await capped.close()
    }
  })

  it('a call that yields: the output so far is whole or names the files, which end complete', async () => {
    const yielding = await startStdio(['--yield-after', '1'])
    try {
      const { texts } = await bash(yielding.client, 'seq 1 3000; sleep 3')
      const text = texts[0]
      const id = /continues as background task (\S+):/.exec(text)?.[1]
      expect(id, text.slice(-200)).toBeDefined()
      const paths = text.split('\n').filter((line) => CUT.test(line)).map((line) => CUT.exec(line)![1])
      expect(paths).not.toContain('(unavailable)')
      const reads = await readToEnd(yielding, id!)
      expect(reads[reads.length - 1].endsWith('[status: completed, exit code: 0]')).toBe(true)
      if (paths.length === 0) {
        // Little was printed by the yield (a loaded machine): the yield's text and the reads carry it all.
        const body = text.slice(0, text.lastIndexOf('[still running'))
        checkReads('yielded', [`${body === '(no output)\n' ? '(no new output)\n' : body}[status: running]`, ...reads], { stdout: seq(1, 3000), stderr: '' })
      } else {
        expect(paths).toHaveLength(1)
        expect(readFileSync(paths[0], 'utf8')).toBe(seq(1, 3000))
      }
    } finally {
      await yielding.close()
    }
  })
})
