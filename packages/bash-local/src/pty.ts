import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, constants, openSync, readSync } from 'node:fs'
import { createRequire } from 'node:module'
import { PassThrough, Readable } from 'node:stream'
import { ReadStream } from 'node:tty'
import { BASH_ERROR, codedError, messageOf, TERMINAL_COLS, TERMINAL_ROWS, type TerminalModes } from '@deepseek-ai/dsh-bash'
import type { LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { childMain, closeFds, type LaunchPlan, LocalCommand, releasePlan } from './launch.js'
import { readTerminalModes } from './terminal-modes.js'

/**
 * Interactive launches: the plan runs with a pseudo-terminal as fds 0-2 and as its controlling
 * terminal, so that echo, line editing, Ctrl-C (SIGINT to the foreground group) and Ctrl-D work.
 *
 * How, and why not `pty.spawn` of node-pty: node-pty reads the master through libuv, which takes a
 * hang-up (the last holder of the terminal's slave side exiting) after a short read as end of
 * stream while the kernel still holds output (measured: `seq 1 300000` lost ~12 KB of its last
 * output, every time), and it destroys the terminal 200 ms after the child's exit whatever is left.
 * So only the terminal pair comes from node-pty (its prebuilt `open`, i.e. openpty(3)); the child
 * is spawned by Node like every other command, through util-linux `setsid --ctty` (a new session,
 * then the terminal on fd 0 made its controlling terminal, then exec: same pid, no extra process),
 * and this process holds a descriptor of the slave side until the command is over, so the master
 * never hangs up early: once no process of the command is left, what the kernel still buffers is
 * read to its last byte (the master is non-blocking), then the slave is closed and the stream ends.
 *
 * Everything else is the ordinary launch: a real `ChildProcess`, the same tracker (cgroup joined by
 * the prelude before anything runs, or marker, or group), the same termination of the whole tree
 * (`LocalCommand`), extra descriptors passed as fd 3, 4, … as usual.
 *
 * Known limit: node-pty opens the master without close-on-exec, so a process this server spawns
 * while an interactive task runs inherits it; every command's prelude (and the wrapper launcher)
 * closes inherited descriptors before it runs anything, so commands never hold it.
 */

/** Reads a non-blocking descriptor until it has nothing more (EAGAIN), end of file or an error. */
function drainSync(fd: number): Buffer[] {
  const chunks: Buffer[] = []
  for (;;) {
    const buffer = Buffer.allocUnsafe(65536)
    let n: number
    try {
      n = readSync(fd, buffer, 0, buffer.length, null)
    } catch {
      // EAGAIN: drained; EIO: closed.
      return chunks
    }
    if (n <= 0) return chunks
    chunks.push(buffer.subarray(0, n))
  }
}

interface NativePty {
  open(cols: number, rows: number): { master: number; slave: number; pty: string }
  resize(fd: number, cols: number, rows: number): void
}

let nativePty: NativePty | undefined

/** The prebuilt node-pty binding (`@lydell/node-pty-<platform>-<arch>`), loaded on first use. */
function loadNative(): NativePty {
  if (!nativePty) {
    const require = createRequire(import.meta.url)
    const { requireBinary } = require('@lydell/node-pty/requireBinary.js') as { requireBinary(name: string): NativePty }
    nativePty = requireBinary('pty.node')
  }
  return nativePty
}

/**
 * Spawns `plan` in a new pseudo-terminal (120x40); `setsid` is the absolute path of util-linux
 * setsid, `stty` that of stty (undefined: the terminal's modes cannot be read, see terminalModes).
 */
export function spawnPtyPlan(plan: LaunchPlan, setsid: string, stty?: string): Promise<LaunchedCommand> {
  const extraFds = plan.extraFds ?? []
  let master: number | undefined
  let slave: number | undefined
  let child: ChildProcess
  try {
    const pair = loadNative().open(TERMINAL_COLS, TERMINAL_ROWS)
    master = pair.master
    // node-pty's slave descriptor is not close-on-exec: hold a close-on-exec one of our own instead.
    try {
      slave = openSync(pair.pty, constants.O_RDWR | constants.O_NOCTTY)
    } finally {
      closeSync(pair.slave)
    }
    child = spawn(setsid, ['--ctty', plan.file, ...plan.args], {
      cwd: plan.cwd,
      env: plan.env,
      stdio: [slave, slave, slave, ...extraFds],
    })
  } catch (error) {
    if (master !== undefined) closeFds([master])
    if (slave !== undefined) closeFds([slave])
    closeFds(extraFds)
    releasePlan(plan)
    return Promise.reject(codedError(BASH_ERROR.startFailed, `failed to start ${plan.file} in a terminal: ${messageOf(error)}`, { cause: error }))
  }
  closeFds(extraFds)
  const terminal = new ReadStream(master)
  const fds = { master, slave }
  return new Promise((resolve, reject) => {
    child.once('error', (error) => {
      terminal.destroy()
      closeFds([fds.slave])
      releasePlan(plan)
      reject(codedError(BASH_ERROR.startFailed, `failed to start ${plan.file} in a terminal: ${error.message}`, { cause: error }))
    })
    child.once('spawn', () => {
      child.removeAllListeners('error')
      child.on('error', () => {})
      resolve(new PtyCommand(child, plan, terminal, fds, stty))
    })
  })
}

class PtyCommand extends LocalCommand {
  readonly terminal = true
  /** True once the stream ended (the slave closed): no more input. */
  private closed = false

  constructor(
    child: ChildProcess,
    plan: LaunchPlan,
    private readonly master: ReadStream,
    private readonly fds: { master: number; slave: number },
    private readonly stty: string | undefined,
  ) {
    const stdout = new PassThrough()
    // A terminal merges stdout and stderr: the task's stderr is an empty stream.
    super(childMain(child, undefined), plan, { stdout, stderr: Readable.from([]) })
    master.on('data', (chunk: Buffer) => stdout.write(chunk))
    // EIO once the slave is closed: the end, handled below.
    master.on('error', () => {})
    void (async () => {
      await this.whenEmpty()
      // No writer is left and we hold the slave (no hang-up): what remains is in the kernel's
      // buffer; read it to the last byte (the master is non-blocking: EAGAIN when it is empty).
      if (!this.closed) for (const chunk of drainSync(fds.master)) stdout.write(chunk)
      this.close()
      stdout.end()
    })()
  }

  write(data: Uint8Array): Promise<void> {
    if (this.closed) return Promise.reject(codedError(BASH_ERROR.taskFinished, 'the terminal is closed'))
    return new Promise((resolve, reject) => {
      this.master.write(data, (error) => (error ? reject(error) : resolve()))
    })
  }

  resize(cols: number, rows: number): void {
    if (!this.closed) loadNative().resize(this.fds.master, cols, rows)
  }

  /** Read through the slave descriptor this process holds (see readTerminalModes). */
  terminalModes(): Promise<TerminalModes | undefined> {
    if (this.closed) return Promise.resolve(undefined)
    return readTerminalModes(this.stty, this.fds.slave)
  }

  release(): void {
    this.close()
    super.release()
  }

  private close(): void {
    if (this.closed) return
    this.closed = true
    closeFds([this.fds.slave])
    this.master.destroy()
  }
}
