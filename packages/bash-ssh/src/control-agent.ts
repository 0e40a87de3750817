import type { ClientChannel } from 'ssh2'
import { HEADER_PREFIX } from './scripts.js'

const AGENT_HEADER = `${HEADER_PREFIX}agent`

/**
 * The client side of a control agent: numbered requests, one answer line each. An answer of
 * undefined means the agent's channel closed first (the caller decides whether the connection is
 * gone or falls back to a one-shot helper).
 */
export class ControlAgent {
  private readonly pending = new Map<number, (answer: string | undefined) => void>()
  private seq = 0
  private buffer = ''
  private closed = false
  /** False until the agent's first line: what a login shell prints before it is skipped. */
  private ready = false

  constructor(private readonly channel: ClientChannel) {
    channel.on('error', () => {})
    channel.stderr.on('data', () => {})
    channel.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8')
      let newline: number
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline)
        this.buffer = this.buffer.slice(newline + 1)
        if (!this.ready) {
          this.ready = line.endsWith(AGENT_HEADER)
          continue
        }
        const space = line.indexOf(' ')
        const id = Number(line.slice(0, space))
        const resolve = this.pending.get(id)
        if (!resolve) continue
        this.pending.delete(id)
        resolve(line.slice(space + 1))
      }
    })
    channel.once('close', () => {
      this.closed = true
      for (const resolve of this.pending.values()) resolve(undefined)
      this.pending.clear()
    })
  }

  request(op: string, pgid: number, marker: string, arg: number): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined)
    const id = ++this.seq
    return new Promise((resolve) => {
      this.pending.set(id, resolve)
      this.channel.write(`${id} ${op} ${pgid} ${marker} ${arg}\n`)
    })
  }
}
