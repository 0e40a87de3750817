import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { trackTimers } from '../src/conformance/index.js'
import { pluginTimer } from '../src/index.js'

describe('pluginTimer', () => {
  it('unloading the plugin clears its timer: the callback never runs and no timer of ours is left', async () => {
    const timers = trackTimers()
    try {
      const ctx = new Context()
      let fired = 0
      const fork = ctx.plugin((child: Context) => void pluginTimer(child, 60_000, () => fired++))
      await ctx.lifecycle.flush()
      expect(timers.live()).toHaveLength(1)
      expect(timers.live()[0]).toMatch(/packages\/bash\/src\/util\.ts/)
      fork.dispose()
      // async_hooks reports the destroy of a cleared timer from the next turn of the event loop.
      await new Promise((resolve) => setImmediate(resolve))
      expect(timers.live()).toEqual([])
      expect(fired).toBe(0)
    } finally {
      timers.stop()
    }
  })

  it('fires once and lets go of the context; cancel is idempotent; an unloaded context gets no timer', async () => {
    const ctx = new Context()
    let fired = 0
    let child!: Context
    const fork = ctx.plugin((c: Context) => void (child = c))
    await ctx.lifecycle.flush()
    const before = child.scope.disposables.length
    const cancel = pluginTimer(child, 1, () => fired++)
    expect(child.scope.disposables.length).toBe(before + 1)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(fired).toBe(1)
    expect(child.scope.disposables.length).toBe(before)
    cancel()
    cancel()
    fork.dispose()
    const late = pluginTimer(child, 1, () => fired++)
    await new Promise((resolve) => setTimeout(resolve, 20))
    late()
    expect(fired).toBe(1)
  })
})
