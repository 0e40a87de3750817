export { LocalExecutor, MAX_ARGUMENT_BYTES, type CommandLine } from './executor.js'
export { localConfigSchema, parseLocalConfig, findExecutable, type LocalExecutorConfig, type LocalExecutorConfigInput } from './config.js'
export type { ContainmentKind, ProcessTracker } from './tracker.js'
export { pidsWithCmdline, readStat, isLive } from './proc.js'
