import { PassThrough } from 'node:stream'
import type { ClientChannel } from 'ssh2'
import { type AgentErrors, AgentSession, type AgentStream, HELLO_START, INSTALL_SCRIPT, installArgs, NEED_PREFIX, runInstall, SSH_SERVE_SCRIPT, sshServeArgs } from '@deepseek-ai/dsh-bash-agent'
import { messageOf } from '@deepseek-ai/dsh-bash'
import { type ConnectionSettings, SshConnection } from './connection.js'
import { lostMessage, sshErrors } from './errors.js'
import { execText } from './exec-text.js'

/** Output accepted before the agent's first frame (a login shell's greeting) before giving up. */
const MAX_PREAMBLE_BYTES = 64 * 1024

/** What the serving exec turned out to be. */
type Served = { agent: AgentStream } | { need: string }

/**
 * One connection to a host and the agent serving it (@deepseek-ai/dsh-bash-agent) over one exec
 * channel: every command of the host runs through it. The agent comes from the user's cache
 * (`ssh-serve.sh` checks the copy it executes); when it is missing or not usable there, it is
 * installed once (`install.sh` over a second exec) and asked for again. The connection's loss is
 * the session's; the agent, whose stdin then closes, kills its commands on the host (its
 * lifeline), and the host's reaper sweeps what a silent loss left (see SshHost).
 */
export class SshAgentSession extends AgentSession {
  private channel?: ClientChannel

  private constructor(
    private readonly label: string,
    private readonly connection: SshConnection,
    onGone: (session: AgentSession) => void,
  ) {
    super(onGone)
  }

  /** Connects, starts (or installs, then starts) the agent; on failure everything opened is closed. */
  static async open(settings: ConnectionSettings, shell: string, secretPatterns: readonly string[], onGone: (session: AgentSession) => void): Promise<SshAgentSession> {
    const session = new SshAgentSession(settings.label, new SshConnection(settings), onGone)
    try {
      await session.boot(shell, secretPatterns)
    } catch (error) {
      await session.remove()
      throw error
    }
    return session
  }

  get shortId(): string {
    return this.label
  }

  get errors(): AgentErrors {
    const label = this.label
    return {
      agentFailed: (why) => sshErrors.startFailed(`the dsh-bash agent did not start on ${label}: ${why}`),
      lost: (reason) => sshErrors.lostWith(reason),
      workdirMissing: (path) => sshErrors.startFailed(`workdir does not exist: ${path}`),
      workdirNotDir: (path) => sshErrors.startFailed(`workdir is not a directory: ${path}`),
      workdirNoAccess: (path) => sshErrors.startFailed(`workdir is not accessible: ${path}`),
      spawn: (why) => sshErrors.startFailed(`the command could not start on ${label}: ${why}`),
      terminalClosed: () => sshErrors.terminalClosed(label),
    }
  }

  protected lostMessage(): string {
    return lostMessage(this.label)
  }

  protected async destroyBackend(): Promise<void> {
    try {
      this.channel?.close()
    } catch {
      // Closed already.
    }
    this.connection.close()
  }

  private async boot(shell: string, secretPatterns: readonly string[]): Promise<void> {
    await this.connection.ready
    this.connection.onLost((reason) => this.markLost(reason))
    let served = await this.serve(shell, secretPatterns)
    if ('need' in served) {
      await this.install(shell)
      served = await this.serve(shell, secretPatterns)
      if ('need' in served) throw sshErrors.startFailed(`the dsh-bash agent installed on ${this.label} cannot be started: ${served.need}`)
    }
    await this.startAgent(served.agent)
  }

  /** One exec of SSH_SERVE_SCRIPT: the agent's stream from its hello on, or why it needs installing. */
  private serve(shell: string, secretPatterns: readonly string[]): Promise<Served> {
    const text = execText(shell, SSH_SERVE_SCRIPT, 'dsh-bash-agent', sshServeArgs(shell, secretPatterns))
    return new Promise<Served>((resolve, reject) => {
      let settled = false
      let head: Buffer = Buffer.alloc(0)
      let stderr = ''
      const stdout = new PassThrough()
      const agentStderr = new PassThrough()
      let resolveClosed!: () => void
      const closed = new Promise<void>((done) => (resolveClosed = done))
      this.connection
        .exec(text, (channel) => {
          this.channel = channel
          channel.on('error', () => {})
          channel.stderr.on('data', (chunk: Buffer) => {
            stderr = (stderr + chunk.toString('utf8')).slice(-2000)
            agentStderr.write(chunk)
          })
          channel.on('data', (chunk: Buffer) => {
            if (settled) {
              if (!stdout.write(chunk)) {
                channel.pause()
                stdout.once('drain', () => channel.resume())
              }
              return
            }
            head = Buffer.concat([head, chunk])
            const hello = head.indexOf(HELLO_START)
            const need = head.indexOf(NEED_PREFIX)
            if (need >= 0 && (hello < 0 || need < hello)) {
              const newline = head.indexOf(0x0a, need)
              if (newline < 0) return
              settled = true
              channel.close()
              resolve({ need: head.subarray(need + NEED_PREFIX.length, newline).toString('utf8').trim() })
            } else if (hello >= 0) {
              settled = true
              stdout.write(head.subarray(hello))
              resolve({ agent: { stdin: channel, stdout, stderr: agentStderr, closed, destroy: () => channel.close() } })
            } else if (head.length > MAX_PREAMBLE_BYTES) {
              settled = true
              channel.close()
              reject(sshErrors.startFailed(`unexpected output from ${this.label} before the dsh-bash agent: ${JSON.stringify(head.subarray(0, 100).toString('utf8'))}`))
            }
          })
          // The output ends with the channel's data (its `end`), never before the last byte.
          channel.once('end', () => stdout.end())
          channel.stderr.once('end', () => agentStderr.end())
          channel.once('close', () => {
            if (!stdout.writableEnded) stdout.end()
            if (!agentStderr.writableEnded) agentStderr.end()
            resolveClosed()
            if (settled) return
            settled = true
            const why = stderr.trim().split('\n').filter(Boolean).at(-1)
            reject(sshErrors.startFailed(`the dsh-bash agent did not start on ${this.label}${why ? `: ${why}` : ''}`))
          })
        })
        .catch((error: unknown) => {
          if (settled) return
          settled = true
          reject(error instanceof Error ? error : new Error(messageOf(error)))
        })
    })
  }

  /** One exec of INSTALL_SCRIPT into the user's cache (see @deepseek-ai/dsh-bash-agent's install.ts). */
  private async install(shell: string): Promise<void> {
    let finished!: Promise<string>
    const text = execText(shell, INSTALL_SCRIPT, 'dsh-bash-agent-install', installArgs('cache'))
    const channel = await this.connection.exec(text, (ch) => {
      ch.on('error', () => {})
      const closed = new Promise<void>((resolve) => ch.once('close', () => resolve()))
      finished = runInstall({ stdin: ch, stdout: ch, stderr: ch.stderr, closed }, this.label)
    })
    try {
      await finished
    } finally {
      channel.close()
    }
  }
}
