export * from './types.js'
export type { TerminalModes } from './terminal-modes.js'
export { BashExecutor } from './executor.js'
export {
  BASH_ERROR,
  type BashErrorCode,
  codedError,
  hasCode,
  interactiveUnsupportedError,
  notInteractiveError,
  taskFinishedError,
  unknownTaskError,
} from './errors.js'
export { isDirectory, messageOf, pluginTimer, sleep } from './util.js'
export { type LogLine, recordLogs, routeLogs } from './logs.js'
export { formatSize, parseSize } from './size.js'
