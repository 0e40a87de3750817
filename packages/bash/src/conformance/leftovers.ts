import { describe, expect, it, vi } from 'vitest'
import { LONG_TIMEOUT_MS, PROMPT_MS, splitMarker as q, uniqueMarker as digits, WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('leftovers and escapees')`. */
export function leftoverTests(suite: SuiteContext): void {
  const { itEscapees, count, create, executor, run, start, seen } = suite
  describe('leftovers and escapees', () => {
    it('`sleep & echo started` returns promptly with one leftover stopped', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `sleep 1000.${q(m)} & echo started`, { timeoutMs: LONG_TIMEOUT_MS })
      expect(result).toMatchObject({ exitCode: 0, signal: null, timedOut: false, aborted: false, leftoverProcesses: 1 })
      expect(result.stdout.text).toBe('started\n')
      expect(result.durationMs).toBeLessThan(PROMPT_MS)
      expect(await count(m)).toBe(0)
    })

    it('a leftover that holds the pipes does not hold the call', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `sleep 1000.${q(m)} & (trap '' TERM; sleep 1000.${q(m)}) & echo started`, {
        timeoutMs: LONG_TIMEOUT_MS,
      })
      expect(result.timedOut).toBe(false)
      expect(result.stdout.text).toBe('started\n')
      expect(result.leftoverProcesses).toBeGreaterThanOrEqual(2)
      expect(result.durationMs).toBeLessThan(PROMPT_MS)
      expect(await count(m)).toBe(0)
    })

    itEscapees('`setsid sleep &` and a double fork leave no survivor after the call', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `setsid sleep 1000.${q(m)} & (setsid sh -c 'sleep 1000.${q(m)} &' &) ; nohup sleep 1000.${q(m)} >/dev/null 2>&1 & echo started`, {
        timeoutMs: LONG_TIMEOUT_MS,
      })
      expect(result.stdout.text).toBe('started\n')
      expect(result.timedOut).toBe(false)
      expect(result.leftoverProcesses).toBeGreaterThanOrEqual(1)
      expect(await count(m)).toBe(0)
    })

    itEscapees('`setsid sleep &` leaves no survivor after a timeout', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `setsid sleep 1000.${q(m)} & sleep 1000.${q(m)}`, { timeoutMs: 300 })
      expect(result.timedOut).toBe(true)
      expect(await count(m)).toBe(0)
    })

    itEscapees('`setsid sleep &` in a background task: the task runs until it is gone, and kill leaves no survivor', async () => {
      const bash = await executor()
      const m = digits()
      const task = start(bash, `setsid sleep 1000.${q(m)} & echo started`)
      let output = ''
      await vi.waitFor(() => {
        output += bash.readOutput(task.id).delta
        expect(output).toBe('started\n')
      }, WAIT)
      await seen(m)
      // The shell has exited, but a process of the task is left: the task is still running.
      expect(bash.get(task.id)!.status).toBe('running')
      expect(await bash.kill(task.id)).toBe(true)
      expect(task.status).toBe('killed')
      expect(await count(m)).toBe(0)
    })

    itEscapees('`setsid sleep &` leaves no survivor after disposal', async () => {
      const instance = await create()
      const m = digits()
      const task = start(instance.executor, `setsid sleep 1000.${q(m)} & echo started`)
      await seen(m)
      await instance.dispose()
      expect(await count(m)).toBe(0)
      expect((await task.done).status).toBe('killed')
    })
  })
}
