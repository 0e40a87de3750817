/**
 * The conformance suite every bash executor must pass (local, sandbox, SSH, …).
 *
 * Usage, in a vitest test file of an executor package:
 *
 * ```ts
 * import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
 * defineBashExecutorConformance('local executor', {
 *   async create(config) {
 *     const ctx = new Context()
 *     const fork = ctx.plugin(LocalExecutor, { graceMs: 300, ...config })
 *     const executor = ctx.bash
 *     return { ctx, executor, dispose: async () => { fork.dispose(); await executor.shutdown() } }
 *   },
 *   countProcesses: async (marker) => pidsWithCmdline(marker).length,
 * })
 * ```
 *
 * The suite asserts facts, never timings: where a hang is what is tested, it asserts that a call
 * returned well before a long timeout. It starts real processes whose argv carries a unique marker
 * (`sleep 1000.<digits>`), and asks `countProcesses` whether any of them survived.
 *
 * This module imports `vitest` (an optional peer dependency); import it from tests only.
 *
 * One file per `describe` block (resolve, foreground, descriptors, timeouts, leftovers, background,
 * task-done, yield, disposal); `suite.ts` wires them; `helpers.ts` holds what executors' own tests
 * reuse (markers, waits, instance tracking).
 */
export { defineBashExecutorConformance } from './suite.js'
export { loadExecutorPlugin } from './load.js'
export { trackTimers } from './timers.js'
export type { ConformanceConfig, ConformanceInstance, ConformanceOptions, ServerProcessOptions } from './types.js'
export {
  delay,
  type InstanceTracker,
  LONG_TIMEOUT_MS,
  numberedBytes,
  PROMPT_MS,
  shellQuote,
  splitMarker,
  trackInstances,
  TRAP_TIMEOUT_MS,
  uniqueMarker,
  WAIT,
} from './helpers.js'
