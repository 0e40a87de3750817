import { Context } from 'cordis'
import { describe, expect, it, vi } from 'vitest'
import type { BashTask } from '../types.js'
import { delay, splitMarker as q, uniqueMarker as digits, WAIT } from './helpers.js'
import type { SuiteContext } from './suite-context.js'

/** The conformance tests of `describe('onTaskDone')`. */
export function taskDoneTests(suite: SuiteContext): void {
  const { count, create, executor, start, seen } = suite
  describe('onTaskDone', () => {
    it('fires exactly once per task, completed or killed', async () => {
      const bash = await executor()
      const seenIds: string[] = []
      bash.onTaskDone((task) => seenIds.push(`${task.id}:${task.status}`))
      const m = digits()
      const a = start(bash, 'true')
      const b = start(bash, 'exit 3')
      const c = start(bash, `sleep 1000.${q(m)}`)
      await Promise.all([a.done, b.done])
      await seen(m)
      await bash.kill(c.id)
      await bash.kill(c.id)
      await bash.kill(a.id)
      bash.readOutput(a.id)
      // A later task's notice is a barrier: anything duplicated would have arrived by now.
      const barrier = new Promise<void>((resolve) => bash.onTaskDone((task) => task.id === 'bash-4' && resolve()))
      start(bash, 'true')
      await barrier
      expect(seenIds.sort()).toEqual(['bash-1:completed', 'bash-2:completed', 'bash-3:killed', 'bash-4:completed'])
    })

    it('many tasks ending at once: each notice arrives exactly once', async () => {
      const bash = await executor()
      const seenIds: string[] = []
      bash.onTaskDone((task) => seenIds.push(task.id))
      const tasks = Array.from({ length: 20 }, (_, i) => start(bash, i % 2 ? 'true' : 'exit 1'))
      await Promise.all(tasks.map((task) => task.done))
      await vi.waitFor(() => expect(seenIds).toHaveLength(20), WAIT)
      expect(new Set(seenIds).size).toBe(20)
      expect([...seenIds].sort()).toEqual(tasks.map((task) => task.id).sort())
    })

    it('the listener sees the ended task; the returned function unregisters it', async () => {
      const bash = await executor()
      const first: BashTask[] = []
      const off = bash.onTaskDone((task) => first.push(task))
      const all: string[] = []
      bash.onTaskDone((task) => all.push(task.id))
      const task = start(bash, 'echo x')
      await vi.waitFor(() => expect(first).toHaveLength(1), WAIT)
      expect(first[0]).toBe(task)
      expect(first[0].status).toBe('completed')
      expect(first[0].endedAt).toEqual(expect.any(Number))
      off()
      await start(bash, 'true').done
      await vi.waitFor(() => expect(all).toEqual(['bash-1', 'bash-2']), WAIT)
      expect(first).toHaveLength(1)
    })

    it('a throwing listener harms no other listener', async () => {
      const bash = await executor()
      const logged = vi.spyOn(console, 'error').mockImplementation(() => {})
      try {
        bash.onTaskDone(() => {
          throw new Error('listener failure (expected by the test)')
        })
        bash.onTaskDone(async () => {
          throw new Error('async listener failure (expected by the test)')
        })
        const got: string[] = []
        bash.onTaskDone((task) => got.push(task.id))
        const task = start(bash, 'true')
        await task.done
        await vi.waitFor(() => expect(got).toEqual([task.id]), WAIT)
        const second = start(bash, 'true')
        await vi.waitFor(() => expect(got).toEqual([task.id, second.id]), WAIT)
      } finally {
        logged.mockRestore()
      }
    })

    it('a listener registered by a plugin is gone after that plugin unloads', async () => {
      const { ctx, executor: bash } = await create()
      const fromPlugin: string[] = []
      const fromRoot: string[] = []
      const fork = ctx.plugin({
        name: 'conformance-listener',
        inject: ['bash'],
        apply(pluginCtx: Context) {
          pluginCtx.bash.onTaskDone((task) => fromPlugin.push(task.id))
        },
      })
      bash.onTaskDone((task) => fromRoot.push(task.id))
      const first = start(bash, 'true')
      await vi.waitFor(() => expect(fromRoot).toEqual([first.id]), WAIT)
      expect(fromPlugin).toEqual([first.id])
      fork.dispose()
      const second = start(bash, 'true')
      await vi.waitFor(() => expect(fromRoot).toEqual([first.id, second.id]), WAIT)
      expect(fromPlugin).toEqual([first.id])
    })

    it('no listener fires for tasks killed by disposal', async () => {
      const instance = await create()
      const bash = instance.executor
      const calls: string[] = []
      bash.onTaskDone((task) => calls.push(task.id))
      const [m1, m2] = [digits(), digits()]
      const a = start(bash, `sleep 1000.${q(m1)}`)
      const b = start(bash, `trap '' TERM; sleep 1000.${q(m2)}; true`)
      await seen(m1)
      await seen(m2)
      await instance.dispose()
      await Promise.all([a.done, b.done])
      expect(a.status).toBe('killed')
      expect(b.status).toBe('killed')
      await delay(50)
      expect(calls).toEqual([])
      expect(await count(m1)).toBe(0)
      expect(await count(m2)).toBe(0)
    })
  })
}
