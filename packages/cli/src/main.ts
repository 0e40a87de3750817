#!/usr/bin/env node
import { main } from './cli.js'

main(process.argv.slice(2)).then(
  (code) => finish(code),
  (error: unknown) => {
    process.stderr.write(`dsh-bash: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    finish(1)
  },
)

/**
 * Exits with `code` once stdout and stderr have handed everything to the OS. Everything was stopped
 * already; an idle stdio handle must not keep a stopped server alive.
 */
function finish(code: number): void {
  process.exitCode = code
  const pending = [process.stdout, process.stderr].filter((stream) => stream.writableLength > 0)
  if (pending.length === 0) process.exit(code)
  let left = pending.length
  for (const stream of pending) stream.once('drain', () => --left === 0 && process.exit(code))
  setTimeout(() => process.exit(code), 2000).unref()
}
