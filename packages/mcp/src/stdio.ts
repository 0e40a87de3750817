import { PassThrough, type Readable, type Writable } from 'node:stream'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { McpHost } from './host.js'
import { checkMessage, errorResponse, INVALID_REQUEST, LineSplitter, PARSE_ERROR, type Refusal, sniffId } from './protocol.js'
import type { McpSession } from './session.js'

export interface StdioHandle {
  session: McpSession
  /** Resolves when the client went away (stdin ended or the transport closed) or `close()` was called. */
  closed: Promise<void>
  /** Closes the session (its tasks are killed). */
  close(): Promise<void>
}

export interface StdioOptions {
  stdin?: Readable
  stdout?: Writable
  /**
   * The longest accepted request line in bytes. A longer line is refused with a JSON-RPC error
   * naming this limit; the session and its tasks stay. Default 10 MiB.
   */
  maxLineBytes?: number
  /** Diagnostics (never stdout). Default: none. */
  log?: (message: string) => void
}

/** The default of `StdioOptions.maxLineBytes`. */
export const DEFAULT_MAX_LINE_BYTES = 10 * 1024 * 1024

/**
 * Serves one session over stdio (newline-delimited JSON-RPC). Lines are split and checked here
 * (`protocol.ts`) before the SDK transport sees them: malformed requests get an error, an
 * oversized line is refused without being buffered. The SDK transport does not notice the end of
 * stdin; this does, and ends the session.
 */
export async function serveStdio(host: McpHost, options: StdioOptions = {}): Promise<StdioHandle> {
  const stdin = options.stdin ?? process.stdin
  const stdout = options.stdout ?? process.stdout
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  if (!(Number.isInteger(maxLineBytes) && maxLineBytes > 0)) throw new Error(`maxLineBytes must be a positive integer, got ${JSON.stringify(maxLineBytes)}`)
  const session = host.createSession()
  // The SDK transport reads checked lines only. Several lines may reach it as one chunk, each within the limit.
  const checked = new PassThrough()
  const transport = new StdioServerTransport(checked, stdout, { maxBufferSize: Number.MAX_SAFE_INTEGER } as never)
  const refuse = (refusal: Refusal) => {
    options.log?.(`${session.label}: refused a message: ${refusal.message}`)
    if (stdout.writable) stdout.write(`${JSON.stringify(errorResponse(refusal))}\n`)
  }
  const splitter = new LineSplitter(
    maxLineBytes,
    (line) => {
      let message: unknown
      try {
        message = JSON.parse(line)
      } catch {
        return refuse({ id: sniffId(line.slice(0, 4096)), code: PARSE_ERROR, message: 'parse error: the line is not valid JSON' })
      }
      const verdict = checkMessage(message)
      if (verdict.pass) checked.write(`${line}\n`)
      else if (verdict.refusal) refuse(verdict.refusal)
    },
    (head) =>
      refuse({
        id: sniffId(head),
        code: INVALID_REQUEST,
        message: `request too large: a message line may be at most ${maxLineBytes} bytes (the limit of this server's stdio transport); the session goes on`,
      }),
  )
  const onData = (chunk: Buffer | string) => splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk)

  let ended!: () => void
  const closed = new Promise<void>((resolve) => (ended = resolve))
  const close = async () => {
    stdin.off('data', onData)
    stdin.off('end', onEnd)
    stdin.off('close', onEnd)
    checked.end()
    await session.close()
    ended()
  }
  const onEnd = () => void close()
  stdin.on('data', onData)
  stdin.on('end', onEnd)
  stdin.on('close', onEnd)
  // A closed stdout (EPIPE) also means the client is gone.
  stdout.on('error', onEnd)
  const previous = session.server.onclose
  session.server.onclose = () => {
    previous?.()
    void close()
  }
  await session.server.connect(transport)
  return { session, closed, close }
}
