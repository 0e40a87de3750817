import type { Writable } from 'node:stream'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js'
import type { StdioFront } from './front.js'

/**
 * The SDK transport of a stdio session, fed by the front (`front.ts`) with the messages it has
 * already split, parsed and checked.
 *
 * Why not the SDK's `StdioServerTransport` behind a stream: each request was parsed twice (the
 * front's `JSON.parse` to check it, then the line re-sent through a `PassThrough` into the SDK's
 * read buffer, concatenated, decoded and parsed again). This hands the front's object on and
 * validates it with the same schema the SDK's transport uses (`JSONRPCMessageSchema`: a message it
 * rejects goes to `onerror` and is dropped, as there). Answers are written as the SDK's transport
 * writes them (one JSON line; a full pipe waits for `drain`), except the SDK's own answer to an
 * `initialize` the front answered already (one answer per request; a difference is logged).
 */
export class FrontTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void
  private _closed = false
  private _earlyDropped = false

  constructor(
    private readonly front: StdioFront,
    private readonly stdout: Writable,
    private readonly log?: (message: string) => void,
  ) {}

  async start(): Promise<void> {}

  /** One checked message from the front (see `FrontSink`). */
  deliver(message: unknown): void {
    if (this._closed) return
    const parsed = JSONRPCMessageSchema.safeParse(message)
    if (!parsed.success) {
      this.onerror?.(parsed.error)
      return
    }
    this.onmessage?.(parsed.data)
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.isEarlyAnswer(message)) return Promise.resolve()
    const stdout = this.stdout
    if (!stdout.writable) return Promise.resolve()
    return new Promise((resolve) => {
      if (stdout.write(`${JSON.stringify(message)}\n`)) resolve()
      else stdout.once('drain', () => resolve())
    })
  }

  async close(): Promise<void> {
    if (this._closed) return
    this._closed = true
    this.onclose?.()
  }

  /** True for the SDK's answer to the `initialize` the front answered (checked against it once). */
  private isEarlyAnswer(message: JSONRPCMessage): boolean {
    const early = this.front.earlyInitialize
    if (!early || this._earlyDropped) return false
    const answer = message as { id?: unknown; result?: unknown }
    if (answer.id !== early.id || !('result' in answer)) return false
    this._earlyDropped = true
    if (JSON.stringify(answer.result) !== JSON.stringify(early.result)) {
      this.log?.(`the early initialize answer differed from the SDK's: ${JSON.stringify(early.result)} vs ${JSON.stringify(answer.result)}`)
    }
    return true
  }
}
