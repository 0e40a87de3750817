import type { ClientChannel } from 'ssh2'
import { HEADER_PREFIX } from './scripts.js'

const AGENT_HEADER = `${HEADER_PREFIX}agent`

/**
 * How a report line begins (`still <pid>:<why>:<state>:<name> …`, see `seen` in
 * scripts/control-functions.sh): printed before the answer, it settles nothing. No answer begins so.
 */
export const NOTE_PREFIX = 'still '

/** One request waiting for its answer. */
interface Pending {
  resolve: (answer: string | undefined) => void
  /** Receives the request's report lines (without the id), if the caller wants them. */
  onNote?: (note: string) => void
}

/**
 * The client side of a control agent: numbered requests, one answer line each (after any number of
 * report lines, see NOTE_PREFIX). An answer of
 * undefined means the agent's channel closed first (the caller decides whether the connection is
 * gone or falls back to a one-shot helper).
 */
export class ControlAgent {
  private readonly pending = new Map<number, Pending>()
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
        const pending = this.pending.get(id)
        if (!pending) continue
        const text = line.slice(space + 1)
        if (text.startsWith(NOTE_PREFIX)) {
          pending.onNote?.(text)
          continue
        }
        this.pending.delete(id)
        pending.resolve(text)
      }
    })
    channel.once('close', () => {
      this.closed = true
      for (const pending of this.pending.values()) pending.resolve(undefined)
      this.pending.clear()
    })
  }

  /** Sends one request; `onNote` receives its report lines (`still …`) until the answer. */
  request(op: string, pgid: number, marker: string, arg: number, onNote?: (note: string) => void): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined)
    const id = ++this.seq
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, onNote })
      this.channel.write(`${id} ${op} ${pgid} ${marker} ${arg}\n`)
    })
  }
}
