/**
 * Calls `stop` once on the first SIGINT, SIGTERM or SIGHUP. A second signal while stopping exits at
 * once with 128 + the signal number (the person insisted).
 */
export function onStopSignals(stop: (signal: NodeJS.Signals) => void): void {
  let stopping = false
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGHUP' ? 1 : 15))
    stopping = true
    stop(signal)
  }
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, handler)
}
