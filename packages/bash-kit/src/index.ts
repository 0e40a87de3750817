export { OutputCollector, type CollectorOptions, type CollectorRead } from './collector.js'
export {
  NON_INTERACTIVE_ENV,
  DEFAULT_SECRET_PATTERNS,
  MARKER_VARIABLE,
  CGROUP_VARIABLE,
  BASH_ENV_NEXT_VARIABLE,
  buildEnvironment,
  looksSecret,
  secretRules,
  SECRET_PATTERN_SYNTAX,
  type EnvironmentOptions,
} from './env.js'
export {
  assertEnvName,
  executorConfigShape,
  MAX_TIMER_MS,
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
export { ensurePrivateDir, ownerSpillDirName, UNOWNED_SPILL_DIR } from './spill-dirs.js'
export type { ExitFacts, LaunchedCommand, LaunchIdentity } from './launched.js'
export { DelegatingCommand } from './delegating.js'
export { parseSttyModes } from './terminal-modes.js'
export { TaskView } from './task.js'
export { ProcessExecutor, taskStatusText } from './process-executor.js'
export { TerminalView, type TerminalRead, type TerminalViewOptions } from './terminal.js'
export { TaskTable, type TaskTableEntry } from './task-table.js'
export { OutputPair, type OutputPairOptions } from './output-pair.js'
export { SpillMeter, type SpillThreshold } from './spill-meter.js'
export { RunStops, type StopCause, stopOnAbort, stopOnDispose, stopOnTimeout, yieldAfter } from './run-stops.js'
export { type CommandLimits, type CommandLimitsInput, limitsSchema } from './limits.js'
