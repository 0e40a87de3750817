import { createHook } from 'node:async_hooks'

/** Where a frame of our packages' code stands (their src, or dist when another package imports them). */
const OUR_FRAME = /\/packages\/[^/]+\/(src|dist)\/(?!conformance\/)/

/**
 * Tracks the timers our packages' code creates from now on (Node's `Timeout` resources, unref'd ones
 * included, which `process.getActiveResourcesInfo()` does not list), until `stop()`. `live()` names
 * each one not yet fired or cleared by the frames of ours that created it (innermost first): a plugin that was unloaded should
 * leave none. Timers of tests, of the suite and of dependencies are not counted.
 */
export function trackTimers(): { live(): string[]; stop(): void } {
  const live = new Map<number, string>()
  const hook = createHook({
    init(asyncId, type) {
      if (type !== 'Timeout') return
      const limit = Error.stackTraceLimit
      Error.stackTraceLimit = 40
      const stack = new Error().stack ?? ''
      Error.stackTraceLimit = limit
      const frames = stack.split('\n').filter((line) => OUR_FRAME.test(line))
      if (frames.length > 0) live.set(asyncId, frames.map((line) => line.trim()).join(' < '))
    },
    destroy(asyncId) {
      live.delete(asyncId)
    },
  })
  hook.enable()
  return { live: () => [...live.values()], stop: () => void hook.disable() }
}
