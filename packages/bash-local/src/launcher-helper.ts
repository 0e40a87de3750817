/**
 * The launcher helper process (`launcher: 'helper'`): a small, long-lived Node process that forks
 * commands for the server, so that the fork happens outside the server's event loop and its cost
 * follows this process's small memory, not the server's (issue 16; figures in bench/README.md).
 *
 * Protocol: one JSON object per line. In (stdin): a `HelperRequest`. Out (stdout): `{id, pid}` once
 * started, `{id, error}` when it could not start, `{id, exitCode, signal}` once the process exited.
 * The helper exits when its stdin ends (the server is gone or disposed the executor); the commands
 * are the executor's to kill, never the helper's.
 *
 * Why Node and not a bash loop: bash reports a death by signal N and `exit 128+N` alike, and the
 * executors report the signal name; libuv gives the exact exit code and signal.
 */
import { spawn } from 'node:child_process'
import { closeSync, constants, openSync } from 'node:fs'
import { createInterface } from 'node:readline'

/** One command to start. */
export interface HelperRequest {
  id: number
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /**
   * Paths the helper opens for writing as the command's stdout and stderr (the server's pipe write
   * ends as `/proc/<server pid>/fd/<n>`); never a regular file of the command's choosing.
   */
  stdout: string
  stderr: string
}

const send = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`)

function start(request: HelperRequest): void {
  const fds: number[] = []
  try {
    // Blocking open: the reader (the server) holds the pipe open, so it returns at once. Node opens with O_CLOEXEC.
    fds.push(openSync(request.stdout, constants.O_WRONLY))
    fds.push(openSync(request.stderr, constants.O_WRONLY))
  } catch (error) {
    for (const fd of fds) closeSync(fd)
    send({ id: request.id, error: `cannot open the output pipes: ${(error as Error).message}` })
    return
  }
  let child
  try {
    child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio: ['ignore', fds[0], fds[1]] })
  } catch (error) {
    send({ id: request.id, error: (error as Error).message })
    return
  } finally {
    // The child has its copies (or there is no child): ours must go, or the pipes never reach EOF.
    for (const fd of fds) closeSync(fd)
  }
  child.once('error', (error) => send({ id: request.id, error: error.message }))
  child.once('spawn', () => {
    child.removeAllListeners('error')
    child.on('error', () => {})
    send({ id: request.id, pid: child.pid })
  })
  child.once('exit', (exitCode, signal) => send({ id: request.id, exitCode, signal: signal ?? null }))
}

const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  let request: HelperRequest
  try {
    request = JSON.parse(line) as HelperRequest
  } catch {
    return
  }
  start(request)
})
// The server is gone: leave at once (the commands were started detached and stay the executor's to kill).
lines.on('close', () => process.exit(0))
process.stdout.on('error', () => process.exit(0))
