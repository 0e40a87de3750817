import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ElicitationCompleteNotificationSchema, type ElicitRequest, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import { ToolRegistry, type SecretInputAnswer, type SecretInputService } from '@deepseek-ai/dsh-tools'
import { McpHost, MAX_MESSAGE_COMMAND, type McpHostOptions, openSecretPage, SECRET_PAGE_WARNING, secretElicitationMessage } from '../src/index.js'
import { UNASKED_MS } from '../src/secret-elicit.js'

/** A person's answer in the client: after reading the message (an instant one is the client's own, see UNASKED_MS). */
const person = (action: 'decline' | 'cancel') => () => new Promise<ElicitResult>((resolve) => setTimeout(() => resolve({ action }), UNASKED_MS + 100))

/** The real host and SDK server; the real SDK client over an in-memory pair; the page over real HTTP. */
function setup(options: McpHostOptions = {}) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  let host!: McpHost
  ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => void (host = new McpHost(c, { log: () => {}, ...options })) })
  const clients: Client[] = []
  return {
    ctx,
    host,
    async connect(capabilities: Record<string, unknown>, onElicit?: (request: ElicitRequest) => Promise<ElicitResult> | ElicitResult) {
      const session = host.createSession()
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await session.server.connect(serverSide)
      const client = new Client({ name: 'test', version: '1' }, { capabilities })
      const seen: unknown[] = []
      const completed: string[] = []
      if (onElicit) {
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          seen.push(request.params)
          return onElicit(request)
        })
      }
      client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => void completed.push(n.params.elicitationId))
      await client.connect(clientSide)
      clients.push(client)
      return { session, client, seen, completed }
    },
    ask(sessionId: string, signal?: AbortSignal, command = COMMAND): Promise<SecretInputAnswer> {
      const service = ctx.get('secretInput') as SecretInputService
      return service.ask({ callId: 'x-1', sessionId, taskId: 'bash-7', command, prompt: 'Password for <sudo>', signal })
    },
    async dispose() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await host.close()
      await ctx.stop()
    },
  }
}

/** The program the reply goes to, as the model wrote it: it reads the reply and hands it back (issue 25, row 8). */
const COMMAND = `read -s p; echo "$p" | rev`

let current: ReturnType<typeof setup> | undefined
afterEach(async () => {
  await current?.dispose()
  current = undefined
})

/**
 * A client whose person loads the page and declines there; asks once for `command`. What the
 * client was sent (`seen`) and the page's HTML (`pages`).
 */
async function askAndReadPage(app: ReturnType<typeof setup>, command: string): Promise<{ seen: unknown[]; pages: string[] }> {
  const pages: string[] = []
  const { session, seen } = await app.connect({ elicitation: { url: {} } }, async (request) => {
    const url = urlOf(request.params)
    pages.push(await (await fetch(url)).text())
    setTimeout(() => void submit(url, { action: 'decline' }), 20)
    return { action: 'accept' }
  })
  expect(await app.ask(session.token, undefined, command)).toEqual({ outcome: 'declined' })
  return { seen, pages }
}

/** What a browser does: load the page, then submit the form. */
async function submit(url: string, fields: Record<string, string>): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() })
  return { status: res.status, body: await res.text() }
}

function urlOf(params: unknown): string {
  return (params as { url: string }).url
}

describe('secretInput over MCP: a URL elicitation of a one-time page', () => {
  it('the person types the reply on the page: the service gets it, the client only ever sees the URL', async () => {
    const app = (current = setup())
    const pages: { status: number; type: string | null; cache: string | null; html: string }[] = []
    const { session, seen, completed } = await app.connect({ elicitation: { url: {} } }, async (request) => {
      const url = urlOf(request.params)
      const page = await fetch(url)
      pages.push({ status: page.status, type: page.headers.get('content-type'), cache: page.headers.get('cache-control'), html: await page.text() })
      // The person agrees to open the page first, then types: the answer comes after `accept`.
      setTimeout(() => void submit(url, { reply: 'secret', action: 'send' }), 20)
      return { action: 'accept' }
    })
    const answer = await app.ask(session.token)
    expect(answer).toEqual({ outcome: 'typed', text: 'secret' })
    expect(seen).toHaveLength(1)
    const params = seen[0] as { mode: string; url: string; message: string; elicitationId: string }
    expect(params.mode).toBe('url')
    expect(params.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dsh-bash\/reply\/[A-Za-z0-9_-]{43}$/)
    expect(params.message).toBe(secretElicitationMessage({ taskId: 'bash-7', prompt: 'Password for <sudo>', command: COMMAND }))
    // What is true: the reply goes to the program the model started, named whole; nothing claims the model cannot see it.
    expect(params.message).toBe(
      'Task bash-7 is waiting for your reply: Password for <sudo>\n' +
        'It goes to this program, which the model started: read -s p; echo "$p" | rev\n' +
        'Open the page to type it. The reply does not pass through this client or the model, but that program receives it and can print it or pass it on.',
    )
    expect(pages[0].html).toContain('<pre id="command">read -s p; echo &#34;$p&#34; | rev</pre>')
    expect(pages[0].html).toContain(SECRET_PAGE_WARNING)
    expect(pages[0].html).not.toMatch(/never sees/i)
    expect(JSON.stringify(seen)).not.toContain('secret')
    expect(pages[0].status).toBe(200)
    expect(pages[0].type).toMatch(/^text\/html/)
    expect(pages[0].cache).toBe('no-store')
    expect(pages[0].html).toContain('Password for &#60;sudo&#62;')
    expect(pages[0].html).toContain('type="password"')
    // The client learns the page is done; the page is gone.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(completed).toEqual([params.elicitationId])
    await expect(fetch(params.url)).rejects.toThrow()
  })

  it('decline and cancel in the client by a person, and Decline on the page, send nothing', async () => {
    const app = (current = setup())
    const declining = await app.connect({ elicitation: { url: {} } }, person('decline'))
    expect(await app.ask(declining.session.token)).toEqual({ outcome: 'declined' })
    const cancelling = await app.connect({ elicitation: { url: {} } }, person('cancel'))
    expect(await app.ask(cancelling.session.token)).toEqual({ outcome: 'cancelled' })
    const pageDecline = await app.connect({ elicitation: { url: {} } }, (request) => {
      setTimeout(() => void submit(urlOf(request.params), { reply: '', action: 'decline' }), 20)
      return { action: 'accept' }
    })
    expect(await app.ask(pageDecline.session.token)).toEqual({ outcome: 'declined' })
  })

  it('a decline or cancel faster than a person could (the client\'s own, as Codex\'s is) is never reported as the person\'s: with nowhere to wait, "unavailable"', async () => {
    const app = (current = setup())
    const declining = await app.connect({ elicitation: { url: {} } }, () => ({ action: 'decline' }))
    expect(await app.ask(declining.session.token)).toEqual({ outcome: 'unavailable' })
    const cancelling = await app.connect({ elicitation: { url: {} } }, () => ({ action: 'cancel' }))
    expect(await app.ask(cancelling.session.token)).toEqual({ outcome: 'unavailable' })
    expect(declining.seen).toHaveLength(1)
  })

  it('never asks through a form: a client without URL elicitation, or an unknown session, is "unavailable"', async () => {
    const app = (current = setup())
    const formOnly = await app.connect({ elicitation: { form: {} } }, () => ({ action: 'accept', content: {} }))
    expect(await app.ask(formOnly.session.token)).toEqual({ outcome: 'unavailable' })
    expect(formOnly.seen).toHaveLength(0)
    expect(await app.ask('no-such-session')).toEqual({ outcome: 'unavailable' })
  })

  it('an aborted call, or a page nobody answers in time, is "cancelled" and closes the page', async () => {
    const app = (current = setup({ secretInput: { timeoutMs: 200 } }))
    let url = ''
    const { session } = await app.connect({ elicitation: { url: {} } }, (request) => {
      url = urlOf(request.params)
      return { action: 'accept' }
    })
    expect(await app.ask(session.token)).toEqual({ outcome: 'cancelled' })
    await expect(fetch(url)).rejects.toThrow()
    const controller = new AbortController()
    const pending = app.ask(session.token, controller.signal)
    await new Promise((resolve) => setTimeout(resolve, 50))
    controller.abort()
    expect(await pending).toEqual({ outcome: 'cancelled' })
  })

  it('a command line with a line break, ESC, CR and a bidi override is shown escaped and whole, in the message and on the page', async () => {
    const app = (current = setup())
    // What the person must not be fooled by: a second line, a terminal escape, an overwrite, a reversed tail, markup.
    const command = 'read -s p\necho "$p" > /tmp/x \u001b[2K\r# harmless \u202Eosla ruoy\u202C <script>alert(1)</script>'
    const { seen, pages } = await askAndReadPage(app, command)
    const shown = 'read -s p␊echo "$p" > /tmp/x ␛[2K␍# harmless \\u{202E}osla ruoy\\u{202C} <script>alert(1)</script>'
    const message = (seen[0] as { message: string }).message
    expect(message.split('\n')[1]).toBe(`It goes to this program, which the model started: ${shown}`)
    expect(message).not.toMatch(/[\u001b\r\u202e\u202c]/)
    expect(message.split('\n')).toHaveLength(3)
    const html = pages[0]
    expect(html).toContain('(2 lines: each ␊ is a line break)')
    expect(html).toContain(
      '<pre id="command">read -s p␊echo &#34;$p&#34; &#62; /tmp/x ␛[2K␍# harmless \\u{202E}osla ruoy\\u{202C} &#60;script&#62;alert(1)&#60;/script&#62;</pre>',
    )
    expect(html).not.toMatch(/[\u001b\r\u202e\u202c]|<script>/)
  })

  it('a command line too long for the message is named by its length; the page shows it whole', async () => {
    const app = (current = setup())
    const command = `read -s p; ${'x'.repeat(MAX_MESSAGE_COMMAND)}; echo "$p"`
    const { seen, pages } = await askAndReadPage(app, command)
    expect((seen[0] as { message: string }).message.split('\n')[1]).toBe(
      `It goes to a program the model started; its command line (${command.length} characters) is shown whole on the page.`,
    )
    expect(pages[0]).toContain(`<pre id="command">${command.replaceAll('"', '&#34;')}</pre>`)
  })

  it('nobody is asked without being told where the reply goes: a request without a command line is "unavailable"', async () => {
    const app = (current = setup())
    const { session, seen } = await app.connect({ elicitation: { url: {} } }, () => ({ action: 'decline' }))
    expect(await app.ask(session.token, undefined, null as unknown as string)).toEqual({ outcome: 'unavailable' })
    expect(seen).toHaveLength(0)
  })

  it('secretInput: false registers no service', async () => {
    const app = (current = setup({ secretInput: false }))
    await app.connect({ elicitation: { url: {} } })
    expect(app.ctx.get('secretInput')).toBeUndefined()
  })
})

describe('the one-time page', () => {
  it('takes one answer at its own path only; anything else is 404, oversized or non-form bodies 400', async () => {
    const page = await openSecretPage({ prompt: 'Passphrase', taskId: 'bash-1', command: COMMAND })
    try {
      const wrong = page.url.replace(/reply\/.*/, 'reply/guess')
      expect((await fetch(wrong)).status).toBe(404)
      expect((await submit(wrong, { reply: 'x' })).status).toBe(404)
      const json = await fetch(page.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"reply":"x"}' })
      expect(json.status).toBe(400)
      expect((await submit(page.url, { reply: 'x'.repeat(70_000) })).status).toBe(400)
      const first = await submit(page.url, { reply: 'hunter2\r\n', action: 'send' })
      expect(first.status).toBe(200)
      expect(first.body).not.toContain('hunter2')
      expect(await page.answer).toEqual({ outcome: 'typed', text: 'hunter2' })
      await expect(fetch(page.url)).rejects.toThrow()
    } finally {
      page.close()
    }
  })
})
