/** A mistake in the command line: printed with the command's usage hint, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message)
  }
}

/** A failure to start (an executor that is missing or refuses its config, a port in use): exit code 1. */
export class StartupError extends Error {}
