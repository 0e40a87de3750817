import { Context } from 'cordis'
import type { BashExecutor } from '../executor.js'
import type { ConformanceInstance } from './types.js'

/**
 * Loads an executor plugin on a fresh root context (for tests and benchmarks). Rejects with the
 * plugin's own error when it fails to load. `dispose()` unloads it and waits for its shutdown.
 */
export async function loadExecutorPlugin<E extends BashExecutor>(
  plugin: new (ctx: Context, config: never) => E,
  config: object,
): Promise<ConformanceInstance & { executor: E }> {
  const ctx = new Context()
  let error: unknown
  ctx.on('internal/error', (e: unknown) => {
    error = e
  })
  const fork = ctx.plugin(plugin as never, config as never)
  const executor = ctx.get('bash') as E | undefined
  if (!executor) throw error ?? new Error(`the executor plugin ${plugin.name} did not load`)
  let disposed: Promise<void> | undefined
  return {
    ctx,
    executor,
    dispose() {
      disposed ??= (async () => {
        fork.dispose()
        await executor.shutdown()
      })()
      return disposed
    },
  }
}
