import type { Readable, Writable } from 'node:stream'
import { routeLogs } from '@deepseek-ai/dsh-bash'
import { StdioFront } from './front.js'
import { FrontTransport } from './front-transport.js'
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
  // The front's checked messages go straight to the SDK server (front-transport.ts: parsed once).
  const transport = new FrontTransport(front, stdout, options.log)

  let ended!: () => void
  const closed = new Promise<void>((resolve) => (ended = resolve))
  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= (async () => {
      front.detach()
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
  front.attach((_line, message) => transport.deliver(message))
  return { session, closed, close }
}
