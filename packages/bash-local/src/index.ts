export { LocalExecutor, MAX_ARGUMENT_BYTES, type CommandLine } from './executor.js'
export { localConfigSchema, parseLocalConfig, findExecutable, type LocalExecutorConfig, type LocalExecutorConfigInput } from './config.js'
export type { ContainmentKind, ProcessTracker } from './tracker.js'
export { pidsWithCmdline, settledPidsWithCmdline, readStat, isLive } from './proc.js'
