import { readdirSync, readlinkSync } from 'node:fs'
import { PassThrough, type Readable } from 'node:stream'
import { constants as osConstants } from 'node:os'
import type { CollectedOutput, SandboxFacts } from '@deepseek-ai/dsh-bash'
import { DelegatingCommand, type ExitFacts, type LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import { isLive } from '@deepseek-ai/dsh-bash-local'
import { bwrapSaid, readStatus } from './bwrap.js'
import { type SandboxModeName, widerModes } from './config.js'
import { showsDeniedWrite } from './denial.js'
import type { ProxyLaunch } from './egress-proxy.js'
import { type ReadMask, showsDeniedRead } from './read-masks.js'

/** Live processes in the PID namespace whose init is `init` (a host pid), the init excluded. */
function namespaceMembers(init: number): number {
  let namespace: string
  try {
    namespace = readlinkSync(`/proc/${init}/ns/pid`)
  } catch {
    return 0
  }
  let members = 0
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= 0 || pid === init) continue
    try {
      if (readlinkSync(`/proc/${pid}/ns/pid`) === namespace && isLive(pid)) members++
    } catch {
      // Gone, or not ours to inspect.
    }
  }
  return members
}

/** Signal numbers to names (`9` → `SIGKILL`). */
const SIGNAL_NAMES = new Map<number, string>(Object.entries(osConstants.signals).map(([name, number]) => [number, name]))

/** At most this much of the start of stderr is kept to explain a failure of bwrap itself. */
const STDERR_PREFIX_BYTES = 4096
/**
 * How long a failure of bwrap itself waits for bwrap's message to arrive on stderr. The exit can be
 * seen before the pipe's last chunk is read (CI under load: the message was missing from the error);
 * nothing else holds that pipe once bwrap failed before executing the command, so its end comes at
 * once, and the bound only matters if something unforeseen still holds it.
 */
const FAILURE_MESSAGE_WAIT_MS = 2000

/**
 * One command as the sandbox sees it: the local launch, with bwrap's exit status turned back into
 * the command's, bwrap's own failures turned into infrastructure errors, the sandbox's init left
 * out of the leftover count, and the sandbox facts.
 */
export class SandboxedCommand extends DelegatingCommand {
  private readonly _exited: Promise<ExitFacts>
  private failure?: string
  private stderrPrefix = ''
  private stderrCopy?: PassThrough
  /** Resolves when bwrap's stderr ended (or failed, or closed): its whole message has been read. */
  private stderrEnded?: Promise<void>

  constructor(
    inner: LaunchedCommand,
    private readonly mode: SandboxModeName,
    private readonly statusPath?: string,
    /** The launch's read masks, to tell a refused read in stderr (`showsDeniedRead`). */
    private readonly reads?: { masks: readonly ReadMask[]; workdir: string; home: string },
    /** The launch's egress proxy listener (proxy mode): the hosts it refused. */
    private readonly egress?: ProxyLaunch,
  ) {
    super(inner)
    if (!statusPath) {
      this._exited = inner.exited
      return
    }
    // bwrap prints its own failure before the command runs: keep the start of stderr to explain one.
    // The executor reads a pass-through copy, so that this extra reader can never steal its data.
    const source = inner.stderr
    const copy = new PassThrough()
    source.on('data', (chunk: Buffer) => {
      if (this.stderrPrefix.length < STDERR_PREFIX_BYTES) this.stderrPrefix += chunk.toString('utf8')
      copy.write(chunk)
    })
    this.stderrEnded = new Promise<void>((resolve) => {
      source.once('end', resolve)
      source.once('error', () => resolve())
      source.once('close', resolve)
    })
    source.once('end', () => copy.end())
    source.once('error', (error) => copy.destroy(error))
    source.once('close', () => copy.end())
    // The executor destroys its stream when it stops waiting for the pipe (a leftover holding it).
    copy.once('close', () => source.destroy())
    this.stderrCopy = copy
    this._exited = inner.exited.then((exit) => this.interpret(exit))
  }

  get exited(): Promise<ExitFacts> {
    return this._exited
  }

  get stderr(): Readable {
    return this.stderrCopy ?? this.inner.stderr
  }

  /**
   * bwrap exits with the command's code, or 128+N when the command died from signal N: that is
   * reported as the signal (as the local executor would). bwrap writes the `exit-code` status only
   * when the command was executed; without it, bwrap itself failed.
   */
  private async interpret(exit: ExitFacts): Promise<ExitFacts> {
    // The monitor itself was killed (SIGKILL after the grace period, or a stop before the command started).
    if (exit.signal !== null || exit.exitCode === null) return exit
    const status = readStatus(this.statusPath!)
    if (status.exitCode === undefined) {
      await this.messageRead()
      const said = bwrapSaid(this.stderrPrefix)
      this.failure = `the sandbox failed to start the command (bwrap exited with code ${exit.exitCode})${said ? `: ${said}` : ''}`
      return exit
    }
    const code = status.exitCode
    const signal = code > 128 ? SIGNAL_NAMES.get(code - 128) : undefined
    return signal ? { exitCode: null, signal } : { exitCode: code, signal: null }
  }

  /** Waits (bounded) until bwrap's stderr has been read to its end. */
  private async messageRead(): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([this.stderrEnded, new Promise<void>((resolve) => (timer = setTimeout(resolve, FAILURE_MESSAGE_WAIT_MS)))])
    clearTimeout(timer)
  }

  async countLeftovers(): Promise<number> {
    const init = this.statusPath ? readStatus(this.statusPath).childPid : undefined
    // The sandbox's init lives exactly as long as some process of the command does: it is no leftover.
    const initAlive = init !== undefined && isLive(init)
    const count = await this.inner.countLeftovers()
    // The local tracker may not see every process: under marker containment, `env -i setsid …`
    // drops the marker (measured: such a process was not counted, so nothing stopped it, and it
    // outlived the call with the init waiting for it). The PID namespace sees them all.
    const members = initAlive ? namespaceMembers(init) : 0
    return Math.max(0, count - (initAlive ? 1 : 0), members)
  }

  sandboxFacts(exit: ExitFacts, stderr: CollectedOutput): SandboxFacts {
    const confined = this.mode !== 'danger-full-access'
    const failed = exit.exitCode !== null && exit.exitCode !== 0
    const reads = this.reads
    const deniedRead = reads !== undefined && showsDeniedRead(stderr.text, reads.masks, reads.workdir, reads.home)
    const deniedHosts = this.egress?.deniedHosts ?? []
    return {
      mode: this.mode,
      accessDenied: confined && failed && (showsDeniedWrite(stderr.text) || deniedRead),
      escalations: widerModes(this.mode),
      ...(deniedHosts.length > 0 ? { deniedHosts: [...deniedHosts] } : {}),
    }
  }

  lostReason(): string | undefined {
    return this.failure ?? this.inner.lostReason?.()
  }
}
