import type { Readable, Writable } from 'node:stream'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { McpHost } from './host.js'
import type { McpSession } from './session.js'

export interface StdioHandle {
  session: McpSession
  /** Resolves when the client went away (stdin ended or the transport closed) or `close()` was called. */
  closed: Promise<void>
  /** Closes the session (its tasks are killed). */
  close(): Promise<void>
}

/**
 * Serves one session over stdio (newline-delimited JSON-RPC). The SDK transport does not notice
 * the end of stdin; this does, and ends the session.
 */
export async function serveStdio(
  host: McpHost,
  streams: { stdin?: Readable; stdout?: Writable } = {},
): Promise<StdioHandle> {
  const stdin = streams.stdin ?? process.stdin
  const stdout = streams.stdout ?? process.stdout
  const session = host.createSession()
  const transport = new StdioServerTransport(stdin, stdout)
  let ended!: () => void
  const closed = new Promise<void>((resolve) => (ended = resolve))
  const close = async () => {
    stdin.off('end', onEnd)
    stdin.off('close', onEnd)
    await session.close()
    ended()
  }
  const onEnd = () => void close()
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
