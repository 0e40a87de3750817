import { posix } from 'node:path'
import { describe, expect, it } from 'vitest'
import { numberedBytes, shellQuote as quote, uniqueMarker as digits } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('foreground results')`. */
export function foregroundTests(suite: SuiteContext): void {
  const { workdir, readSpill, executor, run, seen } = suite
  describe('foreground results', () => {
    it('echo: stdout, exit 0, no flags', async () => {
      const result = await run(await executor(), 'echo hello')
      expect(result).toMatchObject({
        exitCode: 0,
        signal: null,
        timedOut: false,
        aborted: false,
        leftoverProcesses: 0,
        stdout: { text: 'hello\n', truncated: false, droppedBytes: 0, totalBytes: 6 },
        stderr: { text: '', truncated: false, droppedBytes: 0, totalBytes: 0 },
      })
      expect(result.stdout.spillPath).toBeUndefined()
      expect(result.durationMs).toBeGreaterThanOrEqual(0)
    })

    it('stderr is collected apart from stdout', async () => {
      const result = await run(await executor(), 'echo out; echo err >&2')
      expect(result.stdout.text).toBe('out\n')
      expect(result.stderr.text).toBe('err\n')
      expect(result.exitCode).toBe(0)
    })

    it('a non-zero exit resolves with its code', async () => {
      const result = await run(await executor(), 'echo failing; exit 3')
      expect(result).toMatchObject({ exitCode: 3, signal: null, timedOut: false, aborted: false })
      expect(result.stdout.text).toBe('failing\n')
    })

    it('runs in the requested workdir with a fresh shell', async () => {
      const bash = await executor()
      expect((await run(bash, 'pwd -P')).stdout.text).toBe(`${workdir}\n`)
      expect((await run(bash, 'pwd -P', { workdir: '/' })).stdout.text).toBe('/\n')
      await run(bash, 'X_CONFORMANCE=1; cd /')
      expect((await run(bash, 'printf "%s" "${X_CONFORMANCE-unset}"; pwd -P')).stdout.text).toBe(`unset${workdir}\n`)
    })

    it('a missing workdir rejects with "workdir does not exist: <path>" and DSH_START_FAILED', async () => {
      const bash = await executor()
      const missing = posix.join(workdir, `no-such-dir-${digits()}`)
      const failure = run(bash, 'true', { workdir: missing })
      await expect(failure).rejects.toThrow(`workdir does not exist: ${missing}`)
      await expect(failure).rejects.toMatchObject({ code: 'DSH_START_FAILED' })
    })

    it('stdin is empty by default, and a trusted caller can give stdin and env', async () => {
      const bash = await executor()
      expect((await run(bash, 'cat; echo end')).stdout.text).toBe('end\n')
      expect((await run(bash, 'cat', { stdin: 'from stdin\nline 2\n' })).stdout.text).toBe('from stdin\nline 2\n')
      expect((await run(bash, 'od -An -tx1 | tr -d " \\n"', { stdin: new Uint8Array([0, 1, 255]) })).stdout.text).toBe('0001ff')
      const env = { DSH_CONFORMANCE_VAR: 'a b\tc', PATH: '/usr/bin:/bin' }
      expect((await run(bash, 'printf "%s|%s" "$DSH_CONFORMANCE_VAR" "$PATH"', { env })).stdout.text).toBe('a b\tc|/usr/bin:/bin')
    })

    it('UTF-8 multi-byte output arrives intact, even split across writes', async () => {
      const bash = await executor()
      const whole = await run(bash, "printf 'h\\xc3\\xa9llo \\xe2\\x82\\xac \\xf0\\x9f\\x98\\x80\\n'")
      expect(whole.stdout.text).toBe('héllo € 😀\n')
      const split = await run(bash, "printf '\\xe2'; sleep 0.05; printf '\\x82\\xac'; printf '\\xf0\\x9f' >&2; sleep 0.05; printf '\\x98\\x80' >&2")
      expect(split.stdout.text).toBe('€')
      expect(split.stderr.text).toBe('😀')
    })

    it('onOutput receives the live output of a foreground run, whole characters only, without changing the result', async () => {
      const bash = await executor()
      const seen = { stdout: '', stderr: '' }
      let beforeEnd = ''
      const result = await run(bash, "echo first; printf '\\xe2'; sleep 0.3; printf '\\x82\\xac\\n'; echo oops >&2", {
        onOutput: (stream: 'stdout' | 'stderr', text: string) => {
          seen[stream] += text
          if (stream === 'stdout' && beforeEnd === '') beforeEnd = seen.stdout
        },
      })
      expect(seen).toEqual({ stdout: 'first\n€\n', stderr: 'oops\n' })
      expect(beforeEnd.startsWith('first\n')).toBe(true)
      expect(result.stdout.text).toBe('first\n€\n')
      expect(result.stderr.text).toBe('oops\n')
      const quiet = await run(bash, 'echo x', { onOutput: () => { throw new Error('display down') } })
      expect(quiet.stdout.text).toBe('x\n')
    })

    it('an output of exactly maxOutputBytes is kept whole; one byte more is truncated with a complete spill file', async () => {
      const bash = await executor({ maxOutputBytes: 1000 })
      const exact = numberedBytes(1000)
      const atCap = await run(bash, `printf '%s' ${quote(exact)}; printf '%s' ${quote(exact)} >&2`)
      expect(atCap.stdout).toMatchObject({ text: exact, truncated: false, droppedBytes: 0, totalBytes: 1000 })
      expect(atCap.stdout.spillPath).toBeUndefined()
      expect(atCap.stderr).toMatchObject({ text: exact, truncated: false })

      const over = numberedBytes(1001)
      const result = await run(bash, `printf '%s' ${quote(over)}; printf '%s' ${quote(over)} >&2`)
      for (const stream of [result.stdout, result.stderr]) {
        expect(stream).toMatchObject({ text: over.slice(1), truncated: true, droppedBytes: 1, totalBytes: 1001 })
        expect(stream.spillPath).toEqual(expect.any(String))
        expect((await readSpill(stream.spillPath!)).toString('utf8')).toBe(over)
      }
      expect(result.stdout.spillPath).not.toBe(result.stderr.spillPath)
    })
  })
}
