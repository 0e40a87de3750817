import { describe, expect, it } from 'vitest'
import { BASH_ERROR } from '../errors.js'
import type { BashExecutor } from '../executor.js'
import type { ByteRange, FullOutputRef } from '../types.js'
import type { SuiteContext } from './suite-context.js'

/**
 * The conformance tests of `describe('complete output by range')`: a cut result's complete output
 * is readable through the seam (`readFullOutput`), whole and by byte range, by id and by the path
 * the result named, on every executor, wherever the command ran, and only by its owner.
 */
export function fullOutputTests(suite: SuiteContext): void {
  const { executor, run, start } = suite
  const seq = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${from + i}\n`).join('')
  const all: ByteRange = { offset: 0, length: Number.MAX_SAFE_INTEGER }
  const text = (bash: BashExecutor, ref: FullOutputRef, range: ByteRange, owner: string | undefined) =>
    Buffer.from(bash.readFullOutput(ref, range, owner).data).toString('utf8')
  /** The one error for unknown, evicted and foreign outputs alike. */
  const refused = (bash: BashExecutor, ref: FullOutputRef, owner: string | undefined) => {
    try {
      bash.readFullOutput(ref, all, owner)
    } catch (error) {
      return { code: (error as { code?: string }).code, message: (error as Error).message }
    }
    return 'read'
  }

  describe('complete output by range (readFullOutput)', () => {
    it('a cut foreground run: whole and by ranges, by its id and by the path it named; only its owner reads it', async () => {
      const bash = await executor({ maxOutputBytes: 1000 })
      const expected = seq(1, 20_000)
      const result = await run(bash, 'seq 1 20000', { owner: 'owner-a' })
      expect(result.stdout.truncated).toBe(true)
      expect(result.id).toMatch(/^run-\d+$/)
      const id = result.id!
      const whole = bash.readFullOutput({ id }, all, 'owner-a')
      expect(whole).toMatchObject({ id, stream: 'stdout', size: expected.length, complete: true, run: { exitCode: 0, signal: null, timedOut: false } })
      expect(Buffer.from(whole.data).toString('utf8')).toBe(expected)
      expect(text(bash, { path: result.stdout.spillPath! }, { offset: 1000, length: 500 }, 'owner-a')).toBe(expected.slice(1000, 1500))
      expect(text(bash, { id, stream: 'stdout' }, { offset: expected.length - 6, length: 100 }, 'owner-a')).toBe('20000\n')
      expect(text(bash, { id }, { offset: expected.length + 10, length: 100 }, 'owner-a')).toBe('')
      expect(bash.fullOutputs('owner-a')).toContainEqual({ id, stream: 'stdout', size: expected.length, complete: true })

      // Another owner, no owner, an unknown id and a path that is not one: the same refusal.
      const unknown = refused(bash, { id: 'run-999999' }, 'owner-a')
      expect(unknown).toEqual({ code: BASH_ERROR.noFullOutput, message: 'no complete output of "run-999999" (stdout) is kept for this session' })
      expect(refused(bash, { id }, 'owner-b')).toEqual({ code: BASH_ERROR.noFullOutput, message: `no complete output of "${id}" (stdout) is kept for this session` })
      expect(refused(bash, { id }, undefined)).toEqual({ code: BASH_ERROR.noFullOutput, message: `no complete output of "${id}" (stdout) is kept for this session` })
      expect(refused(bash, { path: result.stdout.spillPath! }, 'owner-b')).toMatchObject({ code: BASH_ERROR.noFullOutput })
      expect(refused(bash, { path: '/etc/passwd' }, 'owner-a')).toEqual({ code: BASH_ERROR.noFullOutput, message: 'no complete output of "/etc/passwd" is kept for this session' })
      expect(bash.fullOutputs('owner-b').map((o) => o.id)).not.toContain(id)

      // A run whose output was not cut keeps no copy.
      const small = await run(bash, 'echo small', { owner: 'owner-a' })
      expect(refused(bash, { id: small.id! }, 'owner-a')).toMatchObject({ code: BASH_ERROR.noFullOutput })
    })

    it('a background task: both streams, complete once it ended; its facts ride along', async () => {
      const bash = await executor({ maxOutputBytes: 1000 })
      const task = start(bash, 'seq 1 20000; seq 1 500 >&2; exit 3', { owner: 'owner-a' })
      await task.done
      const out = bash.readFullOutput({ id: task.id, stream: 'stdout' }, all, 'owner-a')
      expect(out).toMatchObject({ id: task.id, stream: 'stdout', complete: true, task: { id: task.id, status: 'completed', exitCode: 3 } })
      expect(Buffer.from(out.data).toString('utf8')).toBe(seq(1, 20_000))
      expect(text(bash, { id: task.id, stream: 'stderr' }, all, 'owner-a')).toBe(seq(1, 500))
      expect(refused(bash, { id: task.id }, 'owner-b')).toMatchObject({ code: BASH_ERROR.noFullOutput })
    })

    it('an unowned launch is readable by every caller, as its task is', async () => {
      const bash = await executor({ maxOutputBytes: 1000 })
      const result = await run(bash, 'seq 1 5000')
      expect(text(bash, { id: result.id! }, { offset: 0, length: 10 }, 'anyone')).toBe(seq(1, 5))
      expect(text(bash, { id: result.id! }, { offset: 0, length: 10 }, undefined)).toBe(seq(1, 5))
    })
  })
}
