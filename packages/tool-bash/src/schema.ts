import { z } from 'zod'
import { toolBashErrors } from './errors.js'

/** Sandbox modes a call may ask to be widened to, narrowest first. */
export const ESCALATION_MODES = ['workspace-write', 'danger-full-access'] as const
/** Every known mode, narrowest first: "strictly wider" is a higher index. */
export const MODE_ORDER = ['read-only', 'workspace-write', 'danger-full-access'] as const

const bashShape = {
  command: z.string().describe('The bash script to run (bash -c).'),
  description: z.string().describe('What the command does, in 5-10 words, active voice (shown to the user).'),
  timeoutMs: z.number().optional().describe('Timeout in milliseconds for a foreground call (default and maximum set by the host).'),
  workdir: z.string().optional().describe("Working directory; relative paths resolve against the session's workspace. Default: the workspace."),
  run_in_background: z.boolean().optional().describe('Start the command in the background and return a task id at once (no timeout).'),
}

/** The `bash` parameters. Unknown keys (`env`, `stdin`, …) are stripped: they never reach the executor. */
export const bashParameters = z.object(bashShape)

/** The `bash` parameters when the executor confines: two more, required together. */
export const sandboxedBashParameters = z.object({
  ...bashShape,
  sandbox_permissions: z
    .enum(ESCALATION_MODES)
    .optional()
    .describe('Ask the user to run this one call with a wider sandbox mode. Requires "justification".'),
  justification: z.string().optional().describe('Why this call needs the wider sandbox mode (shown to the user).'),
})

export const taskParameters = z.object({
  task_id: z.string().describe('The id of a background task, e.g. "bash-1".'),
})

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
}

export function checkTaskArgs(args: TaskArgs): void {
  if (args.task_id.trim() === '') throw toolBashErrors.invalidArguments('invalid task_id: expected a non-empty string')
}
