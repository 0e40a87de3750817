import ssh2 from 'ssh2'
import type { Client as ClientType, ClientChannel, ConnectConfig, ExecOptions } from 'ssh2'
import { isFatalConnectError, sshErrors } from './errors.js'
import type { HostKeyPolicy } from './hostkey.js'

/** What one host connection needs. */
export interface ConnectionSettings {
  label: string
  connect: Omit<ConnectConfig, 'hostVerifier' | 'algorithms'>
  policy: HostKeyPolicy
  connectAttempts: number
  reconnectDelayMs: number
  maxReconnectDelayMs: number
}

type LostListener = (reason: string) => void

/**
 * One ssh2 client. Lost once it closes after being ready; never reused after that. It carries one
 * agent channel (SshAgentSession) and, once per agent version, an installation channel.
 */
export class SshConnection {
  private _state: 'connecting' | 'ready' | 'closed' = 'connecting'
  readonly ready: Promise<void>
  private client?: ClientType
  private readonly lostListeners = new Set<LostListener>()
  private closing = false
  /** Ends the current backoff wait early (close() calls it). */
  private wake?: () => void

  constructor(private readonly settings: ConnectionSettings) {
    this.ready = this.connectWithRetry()
    // Callers that gave up on this connection must not see an unhandled rejection.
    this.ready.catch(() => {})
  }

  /** `connecting` until the handshake succeeded (or failed for good), then `ready`, then `closed`. */
  get state(): 'connecting' | 'ready' | 'closed' {
    return this._state
  }

  /** Called once if the connection is lost after it was ready (not when we close it). */
  onLost(listener: LostListener): () => void {
    this.lostListeners.add(listener)
    return () => this.lostListeners.delete(listener)
  }

  private async connectWithRetry(): Promise<void> {
    const { connectAttempts, reconnectDelayMs, maxReconnectDelayMs, label } = this.settings
    let lastError: Error | undefined
    for (let attempt = 0; attempt < connectAttempts; attempt++) {
      if (attempt > 0) await this.backoff(Math.min(reconnectDelayMs * 2 ** (attempt - 1), maxReconnectDelayMs))
      if (this.closing) break
      try {
        await this.connectOnce()
        return
      } catch (error) {
        lastError = error as Error
        if (isFatalConnectError(error)) break
      }
    }
    this._state = 'closed'
    if (isFatalConnectError(lastError)) throw lastError
    if (this.closing && !lastError) throw sshErrors.connectionClosed(label)
    throw sshErrors.connectFailed(label, lastError?.message ?? 'closed')
  }

  /**
   * The wait between attempts. A held (ref'd) timer: a call is waiting on this connection, and an
   * unref'd one let Node run out of work mid-call (the CLI exited 0 with no answer). close() ends it.
   */
  private backoff(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.wake = () => {
        this.wake = undefined
        done()
      }
    })
  }

  private connectOnce(): Promise<void> {
    const { policy, label } = this.settings
    return new Promise((resolve, reject) => {
      const client = new ssh2.Client()
      let refusal: string | undefined
      let settled = false
      let lastError: Error | undefined
      const fail = (error: Error) => {
        if (settled) return
        settled = true
        client.removeAllListeners('ready')
        client.on('error', () => {})
        client.end()
        reject(error)
      }
      client.once('ready', () => {
        if (settled) return
        settled = true
        this.client = client
        // Small request/response exchanges: Nagle's algorithm would add ~40 ms to each.
        client.setNoDelay(true)
        this._state = this.closing ? 'closed' : 'ready'
        if (this.closing) client.end()
        resolve()
      })
      client.on('error', (error: Error & { level?: string }) => {
        lastError = error
        if (!settled) {
          if (refusal) fail(sshErrors.hostKeyRejected(label, refusal))
          else if (error.level === 'client-authentication') fail(sshErrors.authFailed(label, error.message))
          else fail(error)
        }
      })
      client.on('close', () => {
        if (!settled) {
          fail(refusal ? sshErrors.hostKeyRejected(label, refusal) : (lastError ?? sshErrors.handshakeClosed()))
          return
        }
        if (this.client !== client) return
        const wasReady = this.state === 'ready'
        this._state = 'closed'
        if (wasReady && !this.closing) {
          const reason = sshErrors.connectionLost(label).message
          for (const listener of [...this.lostListeners]) listener(reason)
        }
        this.lostListeners.clear()
      })
      const algorithms = policy.algorithms()
      try {
        client.connect({
          ...this.settings.connect,
          ...(algorithms ? { algorithms: { serverHostKey: algorithms as never } } : {}),
          hostVerifier: (key: Buffer) => {
            const verdict = policy.verify(key)
            if (!verdict.ok) refusal = verdict.reason
            return verdict.ok
          },
        })
      } catch (error) {
        fail(sshErrors.connectFailed(label, (error as Error).message))
      }
    })
  }

  /**
   * Opens a session channel running `text`. `setup` runs synchronously
   * in ssh2's callback: the command's output, exit status and close may arrive in the same packet
   * batch as the reply to the exec request, before any promise continuation could listen.
   * Rejects when the channel cannot be opened.
   */
  exec(text: string, setup: (channel: ClientChannel) => void, options?: ExecOptions): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      const client = this.client
      if (this.state !== 'ready' || !client) {
        reject(sshErrors.connectionLost(this.settings.label))
        return
      }
      try {
        client.exec(text, options ?? {}, (error, channel) => {
          if (error) {
            reject(error)
            return
          }
          try {
            setup(channel)
          } catch (setupError) {
            channel.close()
            reject(setupError as Error)
            return
          }
          resolve(channel)
        })
      } catch (error) {
        reject(error as Error)
      }
    })
  }

  /** Closes the connection (not a loss). */
  close(): void {
    this.closing = true
    this.wake?.()
    if (this.state === 'ready') this.client?.end()
    this._state = 'closed'
  }
}

