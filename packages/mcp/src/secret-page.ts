import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { visibleText } from '@deepseek-ai/dsh-tools'

/**
 * A one-time web page where a person types a reply for a task's prompt (a password) out of band:
 * the MCP spec forbids asking for secrets through form elicitation, so the server sends the page's
 * URL in a URL-mode elicitation and the reply goes from the browser to this server and on to the
 * task's terminal, never through the MCP client or into a tool result. The program in that
 * terminal was started by the model and can do what it likes with the reply: the page shows its
 * command line and says so, so the person decides knowing where the reply goes.
 *
 * The page lives on its own HTTP server, bound to loopback by default, at a path holding 256 random
 * bits: the URL is the capability, valid for one answer. It serves the form (GET) and takes one
 * POST; then it closes. It never logs a request body.
 */
export interface SecretPage {
  /** The page's address (`http://127.0.0.1:<port>/dsh-bash/reply/<token>`). Holds no secret of the task. */
  readonly url: string
  /**
   * What the person did on the page: `typed` with the reply, or `declined` (the page's Decline
   * button). Never rejects; never settles if nobody answers (race it with a timeout and `close`).
   */
  readonly answer: Promise<{ outcome: 'typed'; text: string } | { outcome: 'declined' }>
  /** Stops the page (idempotent): later requests find nothing. */
  close(): void
}

export interface SecretPageOptions {
  /** The heading: what the program asks, in the model's words. Shown through `visibleText`, HTML-escaped. */
  prompt: string
  /** The task it is for (shown). */
  taskId: string
  /** The task's command line: the program the reply goes to. Shown whole, through `visibleText`, HTML-escaped. */
  command: string
  /** The address to listen on. Default `127.0.0.1` (the person's browser must reach it). */
  host?: string
}

/** The largest form body taken (bytes): a reply is one line. */
const MAX_BODY = 64 * 1024

const PAGE_HEADERS = {
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
}

/** Opens the page; resolves once it listens. */
export async function openSecretPage(options: SecretPageOptions): Promise<SecretPage> {
  const token = randomBytes(32).toString('base64url')
  const path = `/dsh-bash/reply/${token}`
  let settle!: (answer: { outcome: 'typed'; text: string } | { outcome: 'declined' }) => void
  const answer = new Promise<{ outcome: 'typed'; text: string } | { outcome: 'declined' }>((resolve) => (settle = resolve))
  let answered = false
  const server = createServer((req, res) => {
    if (!samePath(req.url ?? '', path) || answered) return send(res, 404, 'Not found.')
    if (req.method === 'GET') return send(res, 200, pageHtml(options), 'text/html; charset=utf-8')
    if (req.method !== 'POST') return send(res, 405, 'Method not allowed.')
    readForm(req).then(
      (form) => {
        if (!form || answered) return send(res, 400, 'Bad request.')
        answered = true
        if (form.get('action') === 'decline') {
          send(res, 200, 'Declined: nothing was sent. You can close this page.')
          settle({ outcome: 'declined' })
        } else {
          // Browsers send the field's line breaks as CRLF; a reply is one line.
          const text = (form.get('reply') ?? '').replace(/[\r\n]+$/, '')
          send(res, 200, `Sent to task ${options.taskId}. You can close this page.`)
          settle({ outcome: 'typed', text })
        }
        close()
      },
      () => send(res, 400, 'Bad request.'),
    )
  })
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    server.close()
    server.closeAllConnections?.()
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, options.host ?? '127.0.0.1', () => resolve())
  })
  server.unref()
  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return { url: `http://${host}:${address.port}${path}`, answer, close }
}

function samePath(url: string, path: string): boolean {
  const got = Buffer.from(url.split('?')[0])
  const want = Buffer.from(path)
  return got.length === want.length && timingSafeEqual(got, want)
}

function send(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': type, Connection: 'close' })
  res.end(body)
}

/** The urlencoded form of a POST, or undefined when it is not one or too large. */
async function readForm(req: IncomingMessage): Promise<URLSearchParams | undefined> {
  if (!/^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '')) return undefined
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY) return undefined
    chunks.push(chunk)
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** Model-controlled text as the page shows it: visible escapes first (bidi, controls), then HTML. */
const shown = (text: string) => escapeHtml(visibleText(text))

/** What the page says about where the reply goes (also checked by the tests, byte for byte). */
export const SECRET_PAGE_WARNING =
  'The model started this program. What you type is not sent to the model or to your MCP client, but this program receives it and can print it, save it or pass it on, and the model reads what it prints. Send it only if you trust this command with it.'

function pageHtml(options: SecretPageOptions): string {
  const lines = options.command.split('\n').length
  return `<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>dsh-bash: a reply for ${escapeHtml(options.taskId)}</title>
<style>body{font:16px system-ui,sans-serif;max-width:48em;margin:3em auto;padding:0 1em}pre{white-space:pre-wrap;word-break:break-all;border:1px solid #888;padding:.5em;background:#f4f4f4}input[type=password]{width:100%;font-size:1.1em;padding:.3em}button{margin:.8em .5em 0 0;font-size:1em}</style></head>
<body><h1>Task ${escapeHtml(options.taskId)} is waiting for your reply</h1>
<p>It asks: <strong>${shown(options.prompt)}</strong></p>
<p>What you type goes to this program, followed by Enter${lines > 1 ? ` (${lines} lines: each ␊ is a line break)` : ''}:</p>
<pre id="command">${shown(options.command)}</pre>
<p>${SECRET_PAGE_WARNING}</p>
<form method="post" autocomplete="off"><input type="password" name="reply" autofocus autocomplete="off">
<button type="submit" name="action" value="send">Send</button><button type="submit" name="action" value="decline">Decline</button></form>
</body></html>`
}
