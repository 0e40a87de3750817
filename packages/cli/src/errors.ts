import { AGENT_ERROR } from '@deepseek-ai/dsh-agent/errors'
import { codedError, hasCode } from '@deepseek-ai/dsh-tools/errors'

/**
 * Every error the CLI raises on purpose, with a stable `code`; the messages are what the user
 * reads after `dsh-bash: `, unchanged.
 */
export const CLI_ERROR = {
  /** A mistake in the command line: exit code 2 with the usage hint. */
  usage: 'DSH_CLI_USAGE',
  /** A failure to start (executor missing or refusing its config, a port in use): exit code 1. */
  startup: 'DSH_CLI_STARTUP',
  /** The abort reason of a turn stopped by a signal (SIGINT, SIGTERM). */
  stopped: 'DSH_CLI_STOPPED',
  /** A model request failed (the agent's code, re-worded to name the URL). */
  model: AGENT_ERROR.model,
} as const

/** A mistake in the command line: printed with the command's usage hint, exit code 2. */
export class UsageError extends Error {
  readonly code = CLI_ERROR.usage
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message)
  }
}

/** A failure to start (an executor that is missing or refuses its config, a port in use): exit code 1. */
export class StartupError extends Error {
  readonly code = CLI_ERROR.startup
}

export const cliErrors = {
  stopped: (signal: string) => codedError(CLI_ERROR.stopped, `stopped by ${signal}`),
  model: (url: string, detail: string, cause: unknown) => codedError(CLI_ERROR.model, `model request to ${url} failed: ${detail}`, { cause }),
}

export const isUsageError = (error: unknown): error is UsageError => hasCode(error, CLI_ERROR.usage)
export const isStartupError = (error: unknown): error is StartupError => hasCode(error, CLI_ERROR.startup)
