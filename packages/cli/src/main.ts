#!/usr/bin/env node
import { main } from './cli.js'

let settled = false
// A safety net for an unref'd wait somewhere below: Node runs out of work while a call still waits
// on it and would exit 0 with no answer. Say so and fail instead (the SSH backoff once did this).
process.on('beforeExit', () => {
  if (settled) return
  settled = true
  process.stderr.write('dsh-bash: internal error: the command stopped waiting before it finished (nothing was left to wait for)\n')
  finish(1)
})

main(process.argv.slice(2)).then(
  (code) => {
    settled = true
    finish(code)
  },
  (error: unknown) => {
    settled = true
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
