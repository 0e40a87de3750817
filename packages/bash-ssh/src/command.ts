import { PassThrough } from 'node:stream'
import type { ClientChannel } from 'ssh2'
import { type BashExecSpec, messageOf, TERMINAL_COLS, TERMINAL_ROWS, TERMINAL_TERM, type TerminalModes } from '@deepseek-ai/dsh-bash'
import { type ExitFacts, type LaunchedCommand, parseSttyModes } from '@deepseek-ai/dsh-bash-kit'
import type { GroupClaim } from './control-agent.js'
import { lostMessage, sshErrors } from './errors.js'
import { type EmptyWaitOptions, EmptyWait } from './empty-wait.js'
import type { SshHost } from './host.js'
import type { ChannelLease, Lease } from './pool.js'
import { execText, HEADER_PREFIX, MAX_EXEC_TEXT_BYTES, TERMINAL_MODES_SCRIPT, UPLOAD_TEXT, wrapperScript } from './scripts.js'

export interface LaunchOptions {
  shell: string
  secretPatterns: readonly string[]
  /** Unique per command: inherited by every process it starts, so escapees are found. */
  marker: string
  /** The kit's id of the launch (`bash-3`, `run-2`): how log lines name the command. Never sent to the host. */
  name: string
  /** See EmptyWaitOptions. */
  wait: EmptyWaitOptions
  /** bash lines setting the command's rlimits (the config's `limits`); empty: none. */
  rlimits?: string
}

/** Output accepted before the header (from the login shell's own startup files) before giving up. */
const MAX_PREAMBLE_BYTES = 64 * 1024

/**
 * Starts one command on `host`: a session channel runs the wrapper (see scripts.ts), which reports
 * the command's pid (its process group and session) on a first stdout line that is stripped here.
 * Resolves once the command runs; rejects for infrastructure failures (no connection, workdir
 * missing, shell missing).
 */
export async function launchRemote(host: SshHost, spec: BashExecSpec, options: LaunchOptions): Promise<LaunchedCommand> {
  // The command counts on the host from now (pinning sees it at once) until it is released.
  const occupancy = host.occupy()
  try {
    return await startRemote(host, spec, options, occupancy)
  } catch (error) {
    occupancy.release()
    throw error
  }
}

async function startRemote(host: SshHost, spec: BashExecSpec, options: LaunchOptions, occupancy: Lease): Promise<LaunchedCommand> {
  const terminal = spec.interactive === true
  const wrapper = wrapperScript({
    shell: options.shell,
    secretPatterns: options.secretPatterns,
    env: spec.env,
    hasStdin: !terminal && spec.stdin !== undefined,
    terminal,
    ...(options.rlimits ? { rlimits: options.rlimits } : {}),
  })
  let text = execText(options.shell, wrapper, 'dsh-bash-ssh', [spec.workdir, options.marker, 'arg', spec.command])
  let scriptPath: string | undefined
  if (Buffer.byteLength(text) > MAX_EXEC_TEXT_BYTES) {
    // Too long for one argument of sshd's `$SHELL -c`: the command goes to a private temp file.
    const upload = await host.runHelper(UPLOAD_TEXT, { stdin: spec.command })
    if (upload.lost) throw sshErrors.connectionLost(host.label)
    scriptPath = upload.stdout.trim()
    if (upload.code !== 0 || !scriptPath.startsWith('/')) {
      throw sshErrors.startFailed(`cannot store the command in a temp file on ${host.label}: ${upload.stderr.trim() || `exit ${upload.code}`}`)
    }
    text = execText(options.shell, wrapper, 'dsh-bash-ssh', [spec.workdir, options.marker, 'file', scriptPath])
  }
  let command!: RemoteCommand
  // An interactive task gets sshd's own pty (a `pty-req` before the `exec`): sshd makes it the
  // controlling terminal of the session it starts, so ^C reaches the foreground group as SIGINT.
  const pty = terminal ? { term: TERMINAL_TERM, cols: TERMINAL_COLS, rows: TERMINAL_ROWS } : undefined
  await host.exec(
    text,
    (lease) => {
      command = new RemoteCommand(host, lease, occupancy, options, spec, scriptPath, terminal)
    },
    undefined,
    pty && { pty },
  )
  try {
    await command.started
  } catch (error) {
    command.cleanup()
    throw error
  }
  return command
}

class RemoteCommand implements LaunchedCommand {
  readonly stdout = new PassThrough()
  readonly stderr = new PassThrough()
  readonly exited: Promise<ExitFacts>
  /** Resolves with the main pid once the wrapper reported it. */
  readonly started: Promise<number>
  private pid = 0
  /** The remote terminal's path (`/dev/pts/N`) as the wrapper reported it; terminal only, undefined when it could not say. */
  private ttyPath?: string
  /**
   * The group the control scripts may match and signal (see GroupClaim): set with the pid, and
   * undefined for good once a request released it (then every later request sends 0, so only the
   * marker finds the command's processes). Kept here because each remote request is its own
   * process (no state survives it there) and every request of this command passes through here.
   */
  private group?: GroupClaim
  private lost?: string
  private exitFacts?: ExitFacts
  private resolveExited!: (facts: ExitFacts) => void
  private resolveStarted!: (pid: number) => void
  private rejectStarted!: (error: Error) => void
  private startSettled = false
  private termination?: Promise<void>
  /** True once the termination's `term` answered. */
  private terminated = false
  private emptied?: EmptyWait
  /** One-shot helper channels of `wait` requests (when the agent cannot run): ended at cleanup. */
  private readonly waiters = new Set<ClientChannel>()
  private released = false
  private readonly marker: string
  private readonly shell: string
  private readonly channel: ClientChannel
  /** Startup stderr, kept to explain a failed start. */
  private startupStderr = ''

  constructor(
    private readonly host: SshHost,
    /** The channel and the hold on its connection (control requests go over it): released by cleanup. */
    private readonly lease: ChannelLease,
    /** The host's count of this command: released by release. */
    private readonly occupancy: Lease,
    private readonly options: LaunchOptions,
    private readonly spec: BashExecSpec,
    private readonly scriptPath: string | undefined,
    /** Runs in a pty of sshd: stdout is the raw terminal stream (stderr merged), stderr stays empty. */
    readonly terminal: boolean,
  ) {
    this.marker = options.marker
    this.shell = options.shell
    this.channel = lease.channel
    this.exited = new Promise((resolve) => {
      this.resolveExited = resolve
    })
    this.started = new Promise((resolve, reject) => {
      this.resolveStarted = resolve
      this.rejectStarted = reject
    })
    this.started.catch(() => {})
    lease.onLost((reason) => this.markLost(reason))
    this.stdout.on('error', () => {})
    this.stderr.on('error', () => {})
    if (terminal) this.stderr.end()
    else {
      this.write = undefined
      this.resize = undefined
      this.terminalModes = undefined
    }
    this.wireChannel()
  }

  /**
   * Typed input (terminal only): channel data, which sshd writes to the pty's master. Resolves once
   * handed to ssh2 (flow control queues it there: a program that does not read never blocks us).
   */
  write?: (data: Uint8Array) => Promise<void> = async (data) => {
    if (this.released || this.lost || this.closed) throw sshErrors.terminalClosed(this.host.label)
    this.channel.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
  }

  /** New terminal size (terminal only): a `window-change` request; the program gets SIGWINCH. */
  resize?: (cols: number, rows: number) => void = (cols, rows) => {
    if (this.released || this.lost || this.closed) return
    try {
      this.channel.setWindow(Math.max(1, Math.floor(rows)), Math.max(1, Math.floor(cols)), 0, 0)
    } catch {
      // The channel closed meanwhile.
    }
  }

  /**
   * The remote terminal's modes (terminal only): `stty -a` of its tty through a helper channel on
   * this host (the pts number is the command's while its channel is open: sshd holds the master).
   * Undefined when the wrapper reported no tty, the channel is gone, or stty failed there.
   */
  terminalModes?: () => Promise<TerminalModes | undefined> = async () => {
    if (!this.ttyPath || this.released || this.lost || this.closed) return undefined
    try {
      const result = await this.host.runHelper(execText(this.shell, TERMINAL_MODES_SCRIPT, 'dsh-bash-ssh', [this.ttyPath]))
      if (result.lost || result.code !== 0) return undefined
      return parseSttyModes(result.stdout)
    } catch {
      return undefined
    }
  }

  private closed = false

  private wireChannel(): void {
    const channel = this.channel
    channel.on('error', () => {})
    let header: Buffer | undefined = Buffer.alloc(0)
    channel.on('data', (chunk: Buffer) => {
      if (header === undefined) {
        this.forward(chunk)
        return
      }
      header = Buffer.concat([header, chunk])
      // A login shell may print something of its own first (a chatty ~/.bashrc): skip to the header.
      const at = header.indexOf(HEADER_PREFIX)
      const newline = at < 0 ? -1 : header.indexOf(0x0a, at)
      if (newline < 0) {
        if (header.length > MAX_PREAMBLE_BYTES) this.failStart(`unexpected output from the remote wrapper on ${this.host.label}`)
        return
      }
      // Through a pty the line ends in \r\n (the terminal's onlcr).
      const line = header.subarray(at, newline).toString('utf8').replace(/\r$/, '')
      const rest = header.subarray(newline + 1)
      header = undefined
      this.onHeader(line)
      if (rest.length > 0) this.forward(rest)
    })
    channel.stderr.on('data', (chunk: Buffer) => {
      if (!this.startSettled && this.startupStderr.length < 4096) this.startupStderr += chunk.toString('utf8')
      if (!this.stderr.write(chunk)) {
        channel.stderr.pause()
        this.stderr.once('drain', () => channel.stderr.resume())
      }
    })
    channel.once('exit', (code: number | null, signal?: string) => {
      this.exitFacts = { exitCode: typeof code === 'number' ? code : null, signal: typeof signal === 'string' ? signal : null }
      if (this.startSettled) this.resolveExited(this.exitFacts)
    })
    channel.once('close', () => {
      this.closed = true
      this.stdout.end()
      this.stderr.end()
      if (!this.startSettled) {
        if (!this.exitFacts) this.failStart(lostMessage(this.host.label), true)
        else if (this.exitFacts.exitCode === 127) {
          this.failStart(`shell not found on ${this.host.label}: ${this.shell}${this.startupDetails()}`)
        } else {
          const status = this.exitFacts.signal ?? `exit ${this.exitFacts.exitCode}`
          this.failStart(`the remote command could not start on ${this.host.label} (${status})${this.startupDetails()}`)
        }
        return
      }
      // A session channel that closes without an exit status lost its connection.
      if (!this.exitFacts) this.markLost(lostMessage(this.host.label))
    })
    // stdin: the caller's bytes, or nothing (the wrapper also redirects it from /dev/null). A
    // terminal's input stays open for `write`; Ctrl-D is a byte, never an EOF of the channel.
    if (!this.terminal) channel.end(this.spec.stdin === undefined ? undefined : this.spec.stdin)
  }

  private startupDetails(): string {
    const text = this.startupStderr.trim()
    return text ? `: ${text.slice(-1000)}` : ''
  }

  private forward(chunk: Buffer): void {
    if (!this.stdout.write(chunk)) {
      this.channel.pause()
      this.stdout.once('drain', () => this.channel.resume())
    }
  }

  /** `line` starts with HEADER_PREFIX (the data handler cuts it there). */
  private onHeader(line: string): void {
    const [status, value, start, tty] = line.slice(HEADER_PREFIX.length).split(' ')
    const wd = this.spec.workdir
    if (status === 'ok' && /^\d+$/.test(value ?? '')) {
      this.pid = Number(value)
      // Without a start time (no /proc to read) the group cannot be told from a stranger's: marker only.
      if (/^\d+$/.test(start ?? '')) this.group = { pgid: this.pid, start: start! }
      // Only a plain device path: it is passed to a remote shell as an argument.
      if (this.terminal && /^\/dev\/[\w./-]+$/.test(tty ?? '')) this.ttyPath = tty
      this.startSettled = true
      this.resolveStarted(this.pid)
      if (this.exitFacts) this.resolveExited(this.exitFacts)
      return
    }
    if (status === 'nowd') this.failStart(`workdir does not exist: ${wd}`)
    else if (status === 'notdir') this.failStart(`workdir is not a directory: ${wd}`)
    else if (status === 'noaccess') this.failStart(`workdir is not accessible: ${wd}`)
    else this.failStart(`unexpected output from the remote wrapper on ${this.host.label}: ${JSON.stringify(line.slice(0, 100))}`)
  }

  /** `lost`: the start failed because the connection went away (else the command could not start). */
  private failStart(message: string, lost = false): void {
    if (this.startSettled) return
    this.startSettled = true
    this.rejectStarted(lost ? sshErrors.lostWith(message) : sshErrors.startFailed(message))
    this.resolveExited({ exitCode: null, signal: null })
  }

  /** The connection is gone: nothing more can be learned; the processes become orphans to clean up. */
  private markLost(reason: string): void {
    if (this.lost || this.released) return
    if (!this.startSettled) {
      this.failStart(reason, true)
      this.host.addOrphan(this.marker)
      return
    }
    this.lost = reason
    this.host.addOrphan(this.marker)
    this.stdout.end()
    this.stderr.end()
    this.resolveExited(this.exitFacts ?? { exitCode: null, signal: null })
  }

  lostReason(): string | undefined {
    return this.lost
  }

  async countLeftovers(): Promise<number> {
    if (this.lost) return 0
    const answer = await this.control('count', 0)
    const count = answer === undefined ? 0 : Number.parseInt(answer, 10)
    return Number.isFinite(count) ? count : 0
  }

  terminate(graceMs: number): Promise<void> {
    this.termination ??= this.control('term', graceMs).then(() => {
      this.terminated = true
      this.emptied?.stopped()
    })
    return this.termination
  }

  /** Resolves when no process is left (see EmptyWait: reported while long, bounded once terminated). */
  whenEmpty(): Promise<void> {
    if (!this.emptied) {
      const command = this
      this.emptied = new EmptyWait(
        {
          get name() {
            return command.name
          },
          logger: this.host.logger,
          request: (reportMs, onNote) =>
            this.control('wait', reportMs, {
              onChannel: (channel) => {
                this.waiters.add(channel)
                channel.once('close', () => this.waiters.delete(channel))
              },
              onNote,
            }),
        },
        this.options.wait,
      )
      if (this.terminated) this.emptied.stopped()
    }
    return this.emptied.done
  }

  /** How log lines name the command: `bash-3 (remote pid 1234) on u@h:p`. */
  private get name(): string {
    return `${this.options.name} (remote pid ${this.pid}) on ${this.host.label}`
  }

  /** A request released the group claim: no later request names the group (see `group`). */
  private onReleased(why: string): void {
    if (!this.group) return
    this.group = undefined
    const reason = why === 'reused' ? 'its number now belongs to another process' : 'a scan found no member left'
    this.host.logger.debug(`${this.name}: its process group is over (${reason}); from now on only its marker finds its processes`)
  }

  /** A control operation on this command's processes; a connection that is gone makes it lost. */
  private async control(
    op: 'count' | 'term' | 'wait',
    arg: number,
    hooks: { onChannel?: (channel: ClientChannel) => void; onNote?: (note: string) => void } = {},
  ): Promise<string | undefined> {
    if (this.lost || !this.pid) return undefined
    try {
      const answer = await this.host.control(this.lease, op, this.group, this.marker, arg, { ...hooks, onReleased: (why) => this.onReleased(why) })
      if (answer === undefined && !this.released) this.markLost(lostMessage(this.host.label))
      return answer
    } catch (error) {
      if (!this.released) this.markLost(messageOf(error))
      return undefined
    }
  }

  /** Frees the command's channels; the host stops counting it as busy. Called once by the kit. */
  release(): void {
    if (this.released) return
    this.cleanup()
    this.occupancy.release()
  }

  /** Closes what this command holds open (also after a failed start). */
  cleanup(): void {
    if (this.released) return
    this.released = true
    this.emptied?.dispose()
    // A waiter stops when its stdin ends.
    for (const waiter of this.waiters) waiter.end()
    // Stops the loss watch, closes the channel, and lets the pool close an idle overflow connection.
    this.lease.release()
    if (this.scriptPath && !this.lost) {
      // The wrapper deletes the file once read; this covers a command stopped before that.
      this.host.runHelper(`rm -f -- '${this.scriptPath}'`).catch(() => {})
    }
  }
}
