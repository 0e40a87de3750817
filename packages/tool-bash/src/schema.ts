import { z } from 'zod'
import { type ExecutorCapabilities, SANDBOX_MODES } from '@deepseek-ai/dsh-bash'
import { toolBashErrors } from './errors.js'
import { askUserShape, checkInputChoice } from './secret-input.js'
import { checkUntil } from './until.js'

const bashShape = {
  command: z.string().describe('The bash script to run (bash -c).'),
  description: z.string().describe('What the command does, in 5-10 words, active voice (shown to the user).'),
  timeoutMs: z.number().optional().describe('Timeout in milliseconds for a foreground call (default and maximum set by the host).'),
  workdir: z.string().optional().describe("Working directory; relative paths resolve against the session's workspace. Default: the workspace."),
  run_in_background: z.boolean().optional().describe('Start the command in the background and return a task id at once (no timeout).'),
  interactive: z
    .boolean()
    .optional()
    .describe('Run it in a terminal (120x40) so that you can type into it with bash_input. Requires run_in_background: true.'),
}

/** The two parameters of a confining executor, required together; `modes`: those a call may ask for. */
function escalationShape(modes: readonly [string, ...string[]]) {
  return {
    sandbox_permissions: z.enum(modes).optional().describe('Ask the user to run this one call with a wider sandbox mode. Requires "justification".'),
    justification: z.string().optional().describe('Why this call needs the wider sandbox mode (shown to the user).'),
  }
}

/** The `bash` parameters. Unknown keys (`env`, `stdin`, …) are stripped: they never reach the executor. */
export const bashParameters = z.object(bashShape)

/** The `bash` parameters when the executor confines with every mode of `SANDBOX_MODES`: two more, required together. */
export const sandboxedBashParameters = z.object({ ...bashShape, ...escalationShape(SANDBOX_MODES.slice(1) as [string, ...string[]]) })

/**
 * The `bash` parameters an executor's capabilities allow: `interactive` only where it runs
 * terminals; `sandbox_permissions` (its modes wider than its narrowest) and `justification` only
 * where it confines with more than one mode.
 */
export function bashParametersFor(capabilities: Pick<ExecutorCapabilities, 'sandboxModes' | 'interactive'>) {
  const { interactive, ...plain } = bashShape
  const wider = capabilities.sandboxModes.slice(1)
  return z.object({
    ...(capabilities.interactive ? { ...plain, interactive } : plain),
    ...(wider.length > 0 ? escalationShape(wider as [string, ...string[]]) : {}),
  })
}

export const taskParameters = z.object({
  task_id: z.string().describe('The id of a background task, e.g. "bash-1".'),
})

/** Longest `text` of one bash_input call (bytes). */
export const MAX_INPUT_BYTES = 64 * 1024
/** bash_input's default and longest wait (ms); bash_output's longest (its default is 0). */
export const DEFAULT_INPUT_WAIT_MS = 3_000
export const MAX_INPUT_WAIT_MS = 30_000
export const MAX_WAIT_MS = MAX_INPUT_WAIT_MS

const untilShape = {
  until: z
    .string()
    .optional()
    .describe('With wait_ms: return as soon as a line of new output matches this JavaScript regular expression (e.g. "^READY$", "listening on port \\d+").'),
}

/** `bash_output`: a task id, and optionally how long to wait for output, or a byte range of the complete output. */
export const outputParameters = z.object({
  task_id: z
    .string()
    .describe('The id of a background task, e.g. "bash-1". With "offset": also the PATH of an "[output truncated; full output: PATH]" line.'),
  wait_ms: z
    .number()
    .optional()
    .describe(`Wait up to this many ms (at most ${MAX_WAIT_MS}) for the task to end, for new output (returned once it has been quiet for a moment), or for a line matching "until". Default 0: return at once.`),
  ...untilShape,
  offset: z
    .number()
    .optional()
    .describe('Read the complete output instead of new output: from this byte (0 is the start), for when your commands cannot open the full-output file (they run on another machine).'),
  length: z.number().optional().describe('With "offset": at most this many bytes (default and maximum: what one result holds).'),
  stream: z.enum(['stdout', 'stderr']).optional().describe('With "offset" and a task id: which stream (default stdout).'),
})

export const inputParameters = z.object({
  task_id: z.string().describe('The id of a background task started with interactive: true, e.g. "bash-1".'),
  text: z.string().optional().describe('What to type. "\\n" is Enter, "\\u0003" Ctrl-C, "\\u0004" Ctrl-D, "\\u001b[A" arrow up. May be empty (just wait and read).'),
  wait_ms: z
    .number()
    .optional()
    .describe(`Longest wait for the program's answer in ms (default ${DEFAULT_INPUT_WAIT_MS}, at most ${MAX_INPUT_WAIT_MS}); the call returns earlier once the program printed more than the echo of what was typed and then was quiet for a moment, a line matched "until", or it ended.`),
  ...untilShape,
  ...askUserShape,
})

export type OutputArgs = z.output<typeof outputParameters>

export type InputArgs = z.output<typeof inputParameters>

export type BashArgs = z.output<typeof sandboxedBashParameters>
export type TaskArgs = z.output<typeof taskParameters>

/** Checks that run after the schema, with the contract's exact messages. */
export function checkBashArgs(args: BashArgs): void {
  if (args.command.trim() === '') throw toolBashErrors.invalidArguments('invalid command: expected a non-empty string')
  if (args.description.trim() === '') throw toolBashErrors.invalidArguments('invalid description: expected a non-empty string')
  if (args.timeoutMs !== undefined && !(Number.isFinite(args.timeoutMs) && args.timeoutMs > 0)) {
    throw toolBashErrors.invalidArguments(`invalid timeoutMs: expected a positive number, got ${JSON.stringify(args.timeoutMs)}`)
  }
  if (args.workdir !== undefined && args.workdir.includes('\0')) throw toolBashErrors.invalidArguments('invalid workdir: contains a NUL byte')
  if (args.interactive === true && args.run_in_background !== true) {
    throw toolBashErrors.invalidArguments('invalid interactive: interactive: true needs run_in_background: true (an interactive command runs as a background task; type into it with bash_input)')
  }
}

export function checkInputArgs(args: InputArgs): void {
  checkTaskArgs(args)
  checkInputChoice(args)
  if (args.text !== undefined && Buffer.byteLength(args.text) > MAX_INPUT_BYTES) {
    throw toolBashErrors.invalidArguments(`invalid text: ${Buffer.byteLength(args.text)} bytes is more than the ${MAX_INPUT_BYTES} bytes one call may type`)
  }
  checkWait(args)
}

/** `bash_output`'s checks: the task id, `wait_ms`, and `until` (which needs a wait); a range read's offset and length. */
export function checkOutputArgs(args: OutputArgs): void {
  checkTaskArgs(args)
  if (args.offset === undefined) {
    if (args.length !== undefined) throw toolBashErrors.invalidArguments('invalid length: it goes with offset (a range of the complete output)')
    if (args.stream !== undefined) throw toolBashErrors.invalidArguments('invalid stream: it goes with offset (a range of the complete output)')
  } else {
    if (!(Number.isInteger(args.offset) && args.offset >= 0)) {
      throw toolBashErrors.invalidArguments(`invalid offset: expected a whole number of bytes from 0, got ${JSON.stringify(args.offset)}`)
    }
    if (args.length !== undefined && !(Number.isInteger(args.length) && args.length > 0)) {
      throw toolBashErrors.invalidArguments(`invalid length: expected a positive whole number of bytes, got ${JSON.stringify(args.length)}`)
    }
    if (args.wait_ms !== undefined || args.until !== undefined) {
      throw toolBashErrors.invalidArguments('invalid offset: a range read does not wait; leave out wait_ms and until')
    }
  }
  checkWait(args)
  if (args.until !== undefined && !(args.wait_ms! > 0)) {
    throw toolBashErrors.invalidArguments('invalid until: it needs wait_ms, how long to wait for a matching line (up to 30000)')
  }
}

function checkWait(args: { wait_ms?: number; until?: string }): void {
  const wait = args.wait_ms
  if (wait !== undefined && !(Number.isFinite(wait) && wait >= 0 && wait <= MAX_WAIT_MS)) {
    throw toolBashErrors.invalidArguments(`invalid wait_ms: expected a number of ms from 0 to ${MAX_WAIT_MS}, got ${JSON.stringify(wait)}`)
  }
  if (args.until !== undefined) checkUntil(args.until)
}

export function checkTaskArgs(args: TaskArgs): void {
  if (args.task_id.trim() === '') throw toolBashErrors.invalidArguments('invalid task_id: expected a non-empty string')
}
