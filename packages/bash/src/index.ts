export * from './types.js'
export type { TerminalModes } from './terminal-modes.js'
export { BashExecutor } from './executor.js'
export { isSandboxMode, modesUpTo, SANDBOX_MODES, type SandboxModeName, widerModes } from './sandbox-modes.js'
export {
  BASH_ERROR,
  type BashErrorCode,
  codedError,
  hasCode,
  interactiveUnsupportedError,
  noFullOutputError,
  notInteractiveError,
  taskFinishedError,
  unknownTaskError,
} from './errors.js'
export { isDirectory, messageOf, pluginTimer, sleep } from './util.js'
export { FULL_OUTPUT_URI_PREFIX, fullOutputUri, parseFullOutputUri } from './output-uri.js'
export { DEFAULT_SECRET_PATTERNS, SECRET_PATTERN_SYNTAX, secretRules } from './secret-env.js'
export { type LogLine, recordLogs, routeLogs } from './logs.js'
