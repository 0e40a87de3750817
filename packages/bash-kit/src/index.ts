/**
 * @deepseek-ai/dsh-bash-kit — the executor machinery every backend shares: `ProcessExecutor`.
 *
 * Flow at a glance: a backend subclasses `ProcessExecutor` (process-executor.ts) and implements one
 * method, `launch(spec, identity)`, returning a `LaunchedCommand` (launched.ts). The kit does the
 * rest: `resolve` (config.ts: defaults, caps, env names), the environment (env.ts: scrubbed,
 * non-interactive), a foreground run's stops (run-stops.ts: timeout, abort, dispose, yield), both
 * streams into collectors (output-pair.ts → collector.ts, spill files under spill-dirs.ts, spill
 * threshold by spill-meter.ts), interactive tasks through a headless terminal (terminal.ts),
 * background tasks by id (task-table.ts, task.ts), kill, eviction and disposal. Wrappers of a
 * launched command extend `DelegatingCommand` (delegating.ts). Public names: README, pinned by
 * test/exports.test.ts.
 */
export { OutputCollector, type CollectorOptions, type CollectorRead } from './collector.js'
export {
  NON_INTERACTIVE_ENV,
  DEFAULT_SECRET_PATTERNS,
  MARKER_VARIABLE,
  CGROUP_VARIABLE,
  BASH_ENV_NEXT_VARIABLE,
  buildEnvironment,
  looksSecret,
  type EnvironmentOptions,
} from './env.js'
export {
  assertEnvName,
  executorConfigShape,
  executorConfigSchema,
  nonNegativeInt,
  parseConfig,
  positiveInt,
  resolveRequest,
  type ExecutorConfig,
  type ExecutorConfigInput,
} from './config.js'
export { closeInheritedFds } from './fds.js'
export { fillScript, readScript } from './script-file.js'
export { ownerSpillDirName } from './spill-dirs.js'
export type { ExitFacts, LaunchedCommand, LaunchIdentity } from './launched.js'
export { DelegatingCommand } from './delegating.js'
export { parseSttyModes } from './terminal-modes.js'
export { ProcessExecutor } from './process-executor.js'
export { TerminalView, type TerminalRead, type TerminalViewOptions } from './terminal.js'
export { type CommandLimits, type CommandLimitsInput, limitsSchema } from './limits.js'
