/**
 * @deepseek-ai/dsh-bash — `ctx.bash`: the executor seam, its types, errors and conformance suite.
 *
 * Flow at a glance: a caller (tool-bash, the MCP server) turns a request into a spec with
 * `ctx.bash.resolve(request)` (the only place defaults and caps apply), then `run(spec)` for a
 * foreground result or `start(spec)` for a background task, `readOutput` / `write` / `kill` on it;
 * `onTaskDone` listeners hear each task's end. Everything crossing the seam is plain data
 * (types.ts), every deliberate failure a coded error (errors.ts). executor.ts is the abstract base
 * that every executor extends (the kit's ProcessExecutor does); conformance/ is the suite each
 * executor runs (`./conformance`); secret-env.ts, output-uri.ts, logs.ts and util.ts are the few
 * helpers all packages above share. No process is started here.
 */
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
export { type EndStatus, runEndStatus, taskEndStatus } from './status.js'
export { formatSize, parseSize } from './size.js'
