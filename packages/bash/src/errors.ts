/**
 * Every error the executor seam and its executors raise on purpose: a stable `code` that hosts and
 * our own packages match on (`hasCode`), and the message, which stays byte for byte as the contract
 * gives it (`unknown bash task "<id>"`). Nothing classifies an executor error by its text.
 *
 * The seam depends on nothing of ours, so the tiny `codedError` lives here too; dsh-tools has the
 * same shape (`code` on a plain `Error`), and its `errorResult` passes the code on as `meta.code`.
 */

/** The codes of the seam's errors. */
export const BASH_ERROR = {
  /** `readOutput`, `kill`, … of an id that no task has (or had, before eviction). */
  unknownTask: 'DSH_UNKNOWN_TASK',
  /** The executor was disposed: before a call, or while a foreground command ran. */
  disposed: 'DSH_EXECUTOR_DISPOSED',
  /** A request or spec the executor cannot run: bad command, timeout, workdir, env, or a spec not made by `resolve`. */
  invalidRequest: 'DSH_INVALID_REQUEST',
  /** The command is longer than `maxCommandBytes`. */
  commandTooLong: 'DSH_COMMAND_TOO_LONG',
  /** The request's signal was aborted before the command started. */
  abortedBeforeStart: 'DSH_ABORTED_BEFORE_START',
  /** The command could not be started (missing workdir or shell, spawn failure, a refused launch). */
  startFailed: 'DSH_START_FAILED',
  /** The sandbox cannot run the command (bwrap missing or unusable, a refused mode). */
  sandboxUnavailable: 'DSH_SANDBOX_UNAVAILABLE',
  /** The connection to the machine that ran the command was lost (remote executors). */
  connectionLost: 'DSH_CONNECTION_LOST',
  /** An executor's config failed validation (named key and why). */
  invalidConfig: 'DSH_INVALID_CONFIG',
  /** `write` (or `resize`) to a task started without `interactive`. */
  notInteractive: 'DSH_TASK_NOT_INTERACTIVE',
  /** `write` (or `resize`) to a task that has ended; the message names its status. */
  taskFinished: 'DSH_TASK_FINISHED',
  /** `start` with `interactive` on an executor that cannot give a command a terminal. */
  interactiveUnsupported: 'DSH_INTERACTIVE_UNSUPPORTED',
  /**
   * `readFullOutput` of an output that is not kept for this owner: never existed, evicted, never
   * spilled, or another owner's (one message for all: a caller learns nothing of others' outputs).
   */
  noFullOutput: 'DSH_NO_FULL_OUTPUT',
} as const

export type BashErrorCode = (typeof BASH_ERROR)[keyof typeof BASH_ERROR]

/**
 * An `Error` with a stable `code`: one of BASH_ERROR, or an executor package's own code (each
 * keeps its codes in its errors.ts, `DSH_<PACKAGE>_…`).
 */
export function codedError<C extends string = BashErrorCode>(code: C, message: string, options?: { cause?: unknown }): Error & { code: C } {
  return Object.assign(new Error(message, options), { code })
}

/** True when `error` carries exactly this code. */
export function hasCode(error: unknown, code: string): boolean {
  return error !== null && typeof error === 'object' && (error as { code?: unknown }).code === code
}

/** The stable error for an unknown task id. */
export function unknownTaskError(id: string): Error {
  return codedError(BASH_ERROR.unknownTask, `unknown bash task ${JSON.stringify(String(id))}`)
}

/** `task <id> does not take input; start it with interactive: true` (the tool prefixes `Error: `). */
export function notInteractiveError(id: string): Error {
  return codedError(BASH_ERROR.notInteractive, `task ${id} does not take input; start it with interactive: true`)
}

/**
 * Input to an ended task: `task <id> has finished (status: completed, exit code: 0); it takes no more input`.
 * `status` is the task's status line content (`completed, exit code: 0`, `killed, signal: SIGTERM`).
 */
export function taskFinishedError(id: string, status: string): Error {
  return codedError(BASH_ERROR.taskFinished, `task ${id} has finished (status: ${status}); it takes no more input`)
}

/** `start` with `interactive` on an executor without terminals; names the executor. */
export function interactiveUnsupportedError(executor: string): Error {
  return codedError(BASH_ERROR.interactiveUnsupported, `the ${executor} executor cannot run interactive commands (no terminal support)`)
}

/** `no complete output of <what> is kept for this session` (unknown, evicted and foreign alike). */
export function noFullOutputError(what: string): Error {
  return codedError(BASH_ERROR.noFullOutput, `no complete output of ${what} is kept for this session`)
}
