/**
 * The launcher helper process (`launcher: 'helper'`): a small, long-lived Node process that forks
 * commands for the server, so that the fork happens outside the server's event loop and its cost
 * follows this process's small memory, not the server's (issue 16; figures in bench/README.md).
 *
 * Protocol: one JSON object per line. In (stdin): a `HelperRequest` or a `MkfifoRequest`. Out
 * (stdout): `{id, pid}` once started, `{id, error}` when it could not start, `{id, exitCode, signal}`
 * once the process exited; for a `MkfifoRequest`, `{id, made: true}` or `{id, error}`.
 * The helper exits when its stdin ends (the server is gone or disposed the executor); the commands
 * are the executor's to kill, never the helper's.
 *
 * Why Node and not a bash loop: bash reports a death by signal N and `exit 128+N` alike, and the
 * executors report the signal name; libuv gives the exact exit code and signal.
 */
import { execFile, spawn } from 'node:child_process'
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
  /**
   * Descriptors 3, 4, … of the command (a sandbox's status file, seccomp program, protected
   * directories), each the server's open descriptor as `/proc/<server pid>/fd/<n>` with its access
   * mode: reopening through /proc reaches the same open file, never a new lookup of a name.
   */
  extra?: Array<{ path: string; accessMode: number }>
}

/**
 * Makes FIFOs for the server's pipe pool (the server opens and unlinks them): the `mkfifo` program is
 * forked here, where a fork is cheap, instead of in the server's event loop.
 */
export interface MkfifoRequest {
  id: number
  /** The mkfifo program (absolute path, resolved by the server). */
  mkfifo: string
  /** The FIFOs to make (mode 0600), in the pool's private directory. */
  paths: string[]
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
  for (const { path, accessMode } of request.extra ?? []) {
    try {
      fds.push(openSync(path, accessMode))
    } catch (error) {
      for (const fd of fds) closeSync(fd)
      send({ id: request.id, error: `cannot open the descriptors for the command: ${(error as Error).message}` })
      return
    }
  }
  let child
  try {
    child = spawn(request.file, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio: ['ignore', ...fds] })
  } catch (error) {
    send({ id: request.id, error: (error as Error).message })
    return
  } finally {
    // The child has its copies (or there is no child): ours must go, or the pipes never reach EOF
    // (and a sandbox's status file or protected directory would stay open here).
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

function makeFifos(request: MkfifoRequest): void {
  execFile(request.mkfifo, ['-m', '600', '--', ...request.paths], (error, _stdout, stderr) => {
    // Some may exist even when it failed: the server adopts whatever FIFO is there.
    if (error) send({ id: request.id, error: String(stderr).trim() || error.message })
    else send({ id: request.id, made: true })
  })
}

const lines = createInterface({ input: process.stdin })
lines.on('line', (line) => {
  let request: HelperRequest | MkfifoRequest
  try {
    request = JSON.parse(line) as HelperRequest | MkfifoRequest
  } catch {
    return
  }
  if ('mkfifo' in request) makeFifos(request)
  else start(request)
})
// The server is gone: leave at once (the commands were started detached and stay the executor's to kill).
lines.on('close', () => process.exit(0))
process.stdout.on('error', () => process.exit(0))
