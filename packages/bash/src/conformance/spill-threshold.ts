import { describe, expect, it, vi } from 'vitest'
import { WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/**
 * The conformance tests of `describe('spill threshold')`: with `spillAboveBytes` /
 * `spillAboveLines` (kit config), a launch whose stdout and stderr together exceed the threshold
 * keeps a complete spill file of each stream with output, although memory holds them whole. A front
 * end cutting results to a budget relies on it (every cut names a file); every kit executor gets it
 * from the kit, and this proves it end to end (real processes, real files, the executor's own pipes).
 */
export function spillThresholdTests(suite: SuiteContext): void {
  const { readSpill, executor, run, start } = suite
  // Memory holds far more than the threshold: only the threshold can make these spill.
  const config = { maxOutputBytes: 64_000, spillAboveBytes: 100, spillAboveLines: 5 }
  const seq = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('')

  describe('spill threshold (both streams together, bytes and lines)', () => {
    it('at the threshold nothing spills; one line or one byte over it, each stream with output keeps a complete file', async () => {
      const bash = await executor(config)
      const at = await run(bash, 'seq 1 3; seq 4 5 >&2')
      expect(at.stdout).toMatchObject({ text: seq(1, 3), truncated: false })
      expect(at.stdout.spillPath).toBeUndefined()
      expect(at.stderr.spillPath).toBeUndefined()

      // Six lines: three per stream, each far under memory's bound.
      const lines = await run(bash, 'seq 1 3; seq 4 6 >&2')
      expect(lines.stdout).toMatchObject({ text: seq(1, 3), truncated: false })
      expect(lines.stderr).toMatchObject({ text: seq(4, 6), truncated: false })
      expect((await readSpill(lines.stdout.spillPath!)).toString('utf8')).toBe(seq(1, 3))
      expect((await readSpill(lines.stderr.spillPath!)).toString('utf8')).toBe(seq(4, 6))

      // 100 bytes in one line: at the threshold; 101: over it, on stdout alone.
      const exact = await run(bash, "printf '%0100d' 0")
      expect(exact.stdout.spillPath).toBeUndefined()
      const over = await run(bash, "printf '%0101d' 0")
      expect(over.stdout).toMatchObject({ totalBytes: 101, truncated: false })
      expect((await readSpill(over.stdout.spillPath!)).toString('utf8')).toBe('0'.repeat(101))
      expect(over.stderr.spillPath).toBeUndefined()

      // Stderr alone, and 60 + 60 bytes on the two streams.
      const err = await run(bash, "printf '%0101d' 0 >&2")
      expect((await readSpill(err.stderr.spillPath!)).toString('utf8')).toBe('0'.repeat(101))
      const both = await run(bash, "printf '%060d' 0; printf '%060d' 1 >&2")
      expect((await readSpill(both.stdout.spillPath!)).toString('utf8')).toBe('0'.repeat(60))
      expect((await readSpill(both.stderr.spillPath!)).toString('utf8')).toBe(`${'0'.repeat(59)}1`)
    })

    it('a background task over the threshold names its files in reads, and they end complete', async () => {
      const bash = await executor(config)
      const task = start(bash, 'seq 1 20; seq 21 22 >&2')
      await task.done
      const read = bash.readOutput(task.id)
      expect(read).toMatchObject({ delta: `${seq(1, 20)}[stderr]\n${seq(21, 22)}`, lossy: false })
      expect((await readSpill(read.spillPaths.stdout!)).toString('utf8')).toBe(seq(1, 20))
      expect((await readSpill(read.spillPaths.stderr!)).toString('utf8')).toBe(seq(21, 22))
    })

    // Defined only for executors with terminals (the interactive suite checks the others' refusal).
    const interactive = suite.options.interactive === undefined || suite.options.interactive === true
    ;(interactive ? it : it.skip)('an interactive task under a threshold keeps its raw terminal stream from the first byte', async () => {
      const bash = await executor(config)
      const task = bash.start(bash.resolve({ command: 'echo hi', workdir: suite.workdir, interactive: true }))
      await task.done
      let path: string | undefined
      await vi.waitFor(() => expect((path = bash.readOutput(task.id).spillPaths.stdout)).toBeDefined(), WAIT)
      // The terminal turned \n into \r\n (onlcr): the raw stream, byte for byte.
      expect((await readSpill(path!)).toString('utf8')).toBe('hi\r\n')
    })
  })
}
