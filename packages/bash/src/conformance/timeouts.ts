import { describe, expect, it } from 'vitest'
import { LONG_TIMEOUT_MS, PROMPT_MS, splitMarker as q, TRAP_TIMEOUT_MS, uniqueMarker as digits } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('timeouts, aborts and signals')`. */
export function timeoutTests(suite: SuiteContext): void {
  const { graceMs, count, executor, run, start, seen } = suite
  describe('timeouts, aborts and signals', () => {
    it('a timeout stops a sleep with SIGTERM and reports timedOut', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `sleep 1000.${q(m)}`, { timeoutMs: 300 })
      expect(result).toMatchObject({ timedOut: true, aborted: false, signal: 'SIGTERM', exitCode: null, timeoutMs: 300, leftoverProcesses: 0 })
      expect(await count(m)).toBe(0)
    })

    it('the default timeout applies, capped by the maximum', async () => {
      const bash = await executor({ timeoutMs: 200, maxTimeoutMs: 300 })
      const m = digits()
      const byDefault = await run(bash, `sleep 1000.${q(m)}`)
      expect(byDefault).toMatchObject({ timedOut: true, timeoutMs: 200 })
      const capped = await run(bash, `sleep 1000.${q(m)}`, { timeoutMs: LONG_TIMEOUT_MS })
      expect(capped).toMatchObject({ timedOut: true, timeoutMs: 300, signal: 'SIGTERM' })
      expect(await count(m)).toBe(0)
    })

    it('a command that traps SIGTERM and exits 0 still reports timedOut', async () => {
      const bash = await executor()
      const m = digits()
      // Long enough for the shell to set its trap first, even on a loaded machine.
      const result = await run(bash, `trap 'echo trapped; exit 0' TERM; sleep 1000.${q(m)} & wait`, { timeoutMs: TRAP_TIMEOUT_MS })
      expect(result).toMatchObject({ timedOut: true, aborted: false, exitCode: 0, signal: null })
      expect(result.stdout.text).toBe('trapped\n')
      expect(await count(m)).toBe(0)
    })

    it('a command that ignores SIGTERM is killed with SIGKILL after the grace period', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `trap '' TERM; sleep 1000.${q(m)}; echo not reached`, { timeoutMs: TRAP_TIMEOUT_MS })
      expect(result).toMatchObject({ timedOut: true, aborted: false, signal: 'SIGKILL', exitCode: null })
      expect(result.stdout.text).toBe('')
      // SIGKILL is only sent once the grace period is over (a lower bound, not a timing guess).
      expect(result.durationMs).toBeGreaterThanOrEqual(TRAP_TIMEOUT_MS + graceMs - 20)
      expect(await count(m)).toBe(0)
    })

    it('an AbortSignal stops the command: aborted, not timedOut', async () => {
      const bash = await executor()
      const m = digits()
      const controller = new AbortController()
      const pending = run(bash, `sleep 1000.${q(m)}`, { signal: controller.signal, timeoutMs: LONG_TIMEOUT_MS })
      await seen(m)
      controller.abort()
      const result = await pending
      expect(result).toMatchObject({ aborted: true, timedOut: false, signal: 'SIGTERM', exitCode: null, leftoverProcesses: 0 })
      expect(result.durationMs).toBeLessThan(PROMPT_MS)
      expect(await count(m)).toBe(0)
    })

    it('an already-aborted signal rejects run() and makes start() throw', async () => {
      const bash = await executor()
      const m = digits()
      const signal = AbortSignal.abort()
      await expect(run(bash, `sleep 1000.${q(m)}`, { signal })).rejects.toThrow()
      expect(() => start(bash, `sleep 1000.${q(m)}`, { signal })).toThrow()
      expect(bash.list()).toEqual([])
      expect(await count(m)).toBe(0)
    })

    it('kill -TERM $$: a signal death of its own is neither timedOut nor aborted', async () => {
      const result = await run(await executor(), 'kill -TERM $$')
      expect(result).toMatchObject({ signal: 'SIGTERM', exitCode: null, timedOut: false, aborted: false })
    })

    it('kill -9 $$ reports SIGKILL', async () => {
      const result = await run(await executor(), 'kill -9 $$')
      expect(result).toMatchObject({ signal: 'SIGKILL', exitCode: null, timedOut: false, aborted: false })
    })
  })
}
