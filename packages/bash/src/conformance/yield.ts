import { describe, expect, it, vi } from 'vitest'
import { LONG_TIMEOUT_MS, splitMarker as q, uniqueMarker as digits, WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('yield to the background (spec.yieldAfterMs)')`. */
export function yieldTests(suite: SuiteContext): void {
  const { count, create, executor, run, start, seen } = suite
  describe('yield to the background (spec.yieldAfterMs)', () => {
    it('rejects a yield time that is not a positive number', async () => {
      const bash = await executor()
      for (const yieldAfterMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
        expect(() => bash.resolve({ command: 'true', yieldAfterMs }), String(yieldAfterMs)).toThrow(/^invalid yieldAfterMs: expected a positive number/)
      }
      expect(bash.resolve({ command: 'true', yieldAfterMs: 500 }).yieldAfterMs).toBe(500)
      expect(Object.keys(bash.resolve({ command: 'true' }))).not.toContain('yieldAfterMs')
    })

    it('a command that ends before the yield time is an ordinary result and no task', async () => {
      const bash = await executor()
      const result = await run(bash, 'echo hi; exit 3', { yieldAfterMs: LONG_TIMEOUT_MS / 2, timeoutMs: LONG_TIMEOUT_MS })
      expect(result).toMatchObject({ exitCode: 3, timedOut: false })
      expect(result.stdout.text).toBe('hi\n')
      expect(result.yieldedTo).toBeUndefined()
      expect(bash.list()).toEqual([])
    })

    it('returns the output so far and goes on as a task of the same owner; reads continue without repeat or gap', async () => {
      const bash = await executor()
      const done: string[] = []
      bash.onTaskDone((task) => done.push(`${task.id}:${task.status}`))
      // No gate file: a read-only sandbox could not create one. The sleep only has to outlast the yield time.
      const command = `for i in $(seq 1 200); do echo "early $i"; done; sleep 2; seq 1 300 | sed 's/^/late /'`
      const result = await run(bash, command, { yieldAfterMs: 300, owner: 'session-y', timeoutMs: LONG_TIMEOUT_MS })
      expect(result.yieldedTo).toBe('bash-1')
      expect(result).toMatchObject({ exitCode: null, signal: null, timedOut: false, aborted: false, leftoverProcesses: 0 })
      expect(result.stdout.truncated).toBe(false)
      const task = bash.get('bash-1')!
      expect(task.status).toBe('running')
      expect(task.command).toBe(command)
      expect(bash.ownerOf('bash-1')).toBe('session-y')
      expect(task.startedAt).toBeLessThanOrEqual(Date.now() - 300)
      let text = result.stdout.text
      text += bash.readOutput('bash-1').delta
      expect(await task.done).toBe(task)
      expect(task).toMatchObject({ status: 'completed', exitCode: 0, signal: null })
      const last = bash.readOutput('bash-1')
      expect(last.lossy).toBe(false)
      text += last.delta
      let expected = ''
      for (let i = 1; i <= 200; i++) expected += `early ${i}\n`
      for (let i = 1; i <= 300; i++) expected += `late ${i}\n`
      expect(text).toBe(expected)
      await vi.waitFor(() => expect(done).toEqual(['bash-1:completed']), WAIT)
    })

    it('its timeout still counts from its start and kills the whole task', async () => {
      const bash = await executor()
      const m = digits()
      const result = await run(bash, `sleep 1000.${q(m)} & sleep 1000.${q(m)}`, { yieldAfterMs: 200, timeoutMs: 1500 })
      expect(result.yieldedTo).toBe('bash-1')
      const task = bash.get('bash-1')!
      await task.done
      expect(task.status).toBe('killed')
      expect(task.reason).toBe('timed out after 1500ms')
      expect(await count(m)).toBe(0)
    })

    it('kill stops it (not the timeout), an abort after the yield does not, and disposal kills it silently', async () => {
      const instance = await create()
      const bash = instance.executor
      const done: string[] = []
      bash.onTaskDone((task) => done.push(`${task.id}:${task.status}`))
      const [m1, m2] = [digits(), digits()]
      const controller = new AbortController()
      const first = await run(bash, `sleep 1000.${q(m1)} & sleep 1000.${q(m1)}`, { yieldAfterMs: 200, timeoutMs: LONG_TIMEOUT_MS, signal: controller.signal })
      expect(first.yieldedTo).toBe('bash-1')
      controller.abort()
      await seen(m1)
      expect(bash.get('bash-1')!.status).toBe('running')
      expect(await bash.kill('bash-1')).toBe(true)
      expect(bash.get('bash-1')).toMatchObject({ status: 'killed' })
      expect(bash.get('bash-1')!.reason).toBeUndefined()
      expect(await count(m1)).toBe(0)
      await vi.waitFor(() => expect(done).toEqual(['bash-1:killed']), WAIT)
      const second = await run(bash, `sleep 1000.${q(m2)}`, { yieldAfterMs: 200, timeoutMs: LONG_TIMEOUT_MS })
      expect(second.yieldedTo).toBe('bash-2')
      await seen(m2)
      await instance.dispose()
      expect(bash.get('bash-2')?.status ?? 'killed').toBe('killed')
      expect(await count(m2)).toBe(0)
      expect(done).toEqual(['bash-1:killed'])
    })
  })
}
