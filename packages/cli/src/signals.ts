/** The signals that stop a command, with the exit code a shell reports for each (128 + its number). */
const STOP_SIGNALS = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const

export type StopSignal = keyof typeof STOP_SIGNALS

/** 128 + the signal number, as a shell reports a command ended by `signal`. */
export function signalExitCode(signal: StopSignal): number {
  return STOP_SIGNALS[signal]
}

/**
 * Calls `stop` once on the first SIGINT, SIGTERM or SIGHUP. A second signal while stopping exits at
 * once with 128 + the signal number (the person insisted).
 */
export function onStopSignals(stop: (signal: StopSignal) => void): void {
  let stopping = false
  const handler = (signal: StopSignal) => {
    if (stopping) process.exit(signalExitCode(signal))
    stopping = true
    stop(signal)
  }
  for (const signal of Object.keys(STOP_SIGNALS) as StopSignal[]) process.on(signal, handler)
}
