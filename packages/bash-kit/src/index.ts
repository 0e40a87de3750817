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
