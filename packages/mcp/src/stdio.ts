import { PassThrough, type Readable, Writable } from 'node:stream'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { routeLogs } from '@deepseek-ai/dsh-bash'
import { StdioFront } from './front.js'
import type { McpHost } from './host.js'
import type { McpSession } from './session.js'

export { DEFAULT_MAX_LINE_BYTES } from './front.js'

export interface StdioHandle {
  session: McpSession
  /** Resolves when the client went away (stdin ended or the transport closed) or `close()` was called. */
  closed: Promise<void>
  /** Closes the session (its tasks are killed). */
  close(): Promise<void>
}

export interface StdioOptions {
  stdin?: Readable
  stdout?: NodeJS.WritableStream & Writable
  /**
   * The longest accepted request line in bytes. A longer line is refused with a JSON-RPC error
   * naming this limit; the session and its tasks stay. Default 10 MiB.
   */
  maxLineBytes?: number
  /**
   * A front that has been reading stdin since start-up (and may have answered `initialize`
   * already, see front.ts). Its streams and limit win over the options above.
   */
  front?: StdioFront
  /** Diagnostics (never stdout). Default: none. */
  log?: (message: string) => void
}

/**
 * Serves one session over stdio (newline-delimited JSON-RPC). Lines are split and checked by the
 * front (`front.ts`, `protocol.ts`) before the SDK transport sees them: malformed requests get an
 * error, an oversized line is refused without being buffered. The SDK transport does not notice
 * the end of stdin; the front does, and the session ends.
 */
export async function serveStdio(host: McpHost, options: StdioOptions = {}): Promise<StdioHandle> {
  const front =
    options.front ??
    new StdioFront({ stdin: options.stdin, stdout: options.stdout, maxLineBytes: options.maxLineBytes, log: options.log })
  const stdout = front.stdout
  // The protocol owns this process's stdout: cordis' logger, which prints there by default, moves to stderr.
  if (stdout === process.stdout) routeLogs(process.stderr)
  const session = host.createSession()
  // The SDK transport reads checked lines only. Several lines may reach it as one chunk, each within the limit.
  const checked = new PassThrough()
  const transport = new StdioServerTransport(checked, answersOf(front, stdout, options.log), { maxBufferSize: Number.MAX_SAFE_INTEGER } as never)

  let ended!: () => void
  const closed = new Promise<void>((resolve) => (ended = resolve))
  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= (async () => {
      front.detach()
      checked.end()
      await session.close()
      ended()
    })()
    return closing
  }
  front.onEnd(() => void close())
  const previous = session.server.onclose
  session.server.onclose = () => {
    previous?.()
    void close()
  }
  await session.server.connect(transport)
  front.attach((line) => checked.write(`${line}\n`))
  return { session, closed, close }
}

/**
 * The SDK transport's stdout: everything passes, except the SDK's own answer to an `initialize`
 * the front answered already (one answer per request). A difference between the two is logged.
 */
function answersOf(front: StdioFront, stdout: Writable, log?: (message: string) => void): Writable {
  let dropped = false
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      const early = front.earlyInitialize
      if (early && !dropped) {
        const text = chunk.toString('utf8')
        let message: { id?: unknown; result?: unknown } | undefined
        try {
          message = JSON.parse(text) as { id?: unknown; result?: unknown }
        } catch {
          message = undefined
        }
        if (message && message.id === early.id && 'result' in message) {
          dropped = true
          if (JSON.stringify(message.result) !== JSON.stringify(early.result)) {
            log?.(`the early initialize answer differed from the SDK's: ${JSON.stringify(early.result)} vs ${JSON.stringify(message.result)}`)
          }
          return callback()
        }
      }
      if (!stdout.writable) return callback()
      if (stdout.write(chunk)) callback()
      else stdout.once('drain', () => callback())
    },
  })
}
