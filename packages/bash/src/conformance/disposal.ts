import { describe, expect, it } from 'vitest'
import type { BashExecSpec, BashRunResult } from '../types.js'
import { LONG_TIMEOUT_MS, splitMarker as q, uniqueMarker as digits } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('disposal')`. */
export function disposalTests(suite: SuiteContext): void {
  const { workdir, count, create, executor, run, start, seen } = suite
  describe('disposal', () => {
    it('kills every task and foreground command and waits until no process is left', async () => {
      const instance = await create()
      const bash = instance.executor
      const m = [digits(), digits(), digits(), digits(), digits()]
      const tasks = [
        start(bash, `sleep 1000.${q(m[0])}`),
        start(bash, `sleep 1000.${q(m[1])} & sleep 1000.${q(m[2])} & wait`),
        start(bash, `trap '' TERM; sleep 1000.${q(m[3])}; true`),
      ]
      const foreground = run(bash, `sleep 1000.${q(m[4])}`, { timeoutMs: LONG_TIMEOUT_MS })
      const settled = foreground.then(
        (result: BashRunResult) => ({ result }),
        (error: unknown) => ({ error }),
      )
      for (const marker of m) await seen(marker)
      await instance.dispose()
      for (const marker of m) expect(await count(marker)).toBe(0)
      for (const task of tasks) expect(task.status).toBe('killed')
      // The foreground call ends well before its timeout, rejected: its command did not end by itself.
      const outcome = await settled
      expect(outcome).toEqual({ error: expect.any(Error) })
      expect((outcome as { error: Error }).error.message).toMatch(/disposed/)
      expect((outcome as { error: Error }).error).toMatchObject({ code: 'DSH_EXECUTOR_DISPOSED' })
    })

    it('is idempotent, and the executor refuses new work afterwards', async () => {
      const instance = await create()
      const bash = instance.executor
      const spec: BashExecSpec = bash.resolve({ command: 'true', workdir })
      await instance.dispose()
      await instance.dispose()
      await expect(bash.run(spec)).rejects.toThrow()
      expect(() => bash.start(spec)).toThrow()
    })
  })
}
