import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ElicitationCompleteNotificationSchema, type ElicitRequest, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import { ToolRegistry, type SecretInputAnswer, type SecretInputService } from '@deepseek-ai/dsh-tools'
import { McpHost, type McpHostOptions, openSecretPage, secretElicitationMessage } from '../src/index.js'

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
    ask(sessionId: string, signal?: AbortSignal): Promise<SecretInputAnswer> {
      const service = ctx.get('secretInput') as SecretInputService
      return service.ask({ callId: 'x-1', sessionId, taskId: 'bash-7', prompt: 'Password for <sudo>', signal })
    },
    async dispose() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await host.close()
      await ctx.stop()
    },
  }
}

let current: ReturnType<typeof setup> | undefined
afterEach(async () => {
  await current?.dispose()
  current = undefined
})

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
    expect(params.message).toBe(secretElicitationMessage({ taskId: 'bash-7', prompt: 'Password for <sudo>' }))
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

  it('decline and cancel in the client, and Decline on the page, send nothing', async () => {
    const app = (current = setup())
    const declining = await app.connect({ elicitation: { url: {} } }, () => ({ action: 'decline' }))
    expect(await app.ask(declining.session.token)).toEqual({ outcome: 'declined' })
    const cancelling = await app.connect({ elicitation: { url: {} } }, () => ({ action: 'cancel' }))
    expect(await app.ask(cancelling.session.token)).toEqual({ outcome: 'cancelled' })
    const pageDecline = await app.connect({ elicitation: { url: {} } }, (request) => {
      setTimeout(() => void submit(urlOf(request.params), { reply: '', action: 'decline' }), 20)
      return { action: 'accept' }
    })
    expect(await app.ask(pageDecline.session.token)).toEqual({ outcome: 'declined' })
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

  it('secretInput: false registers no service', async () => {
    const app = (current = setup({ secretInput: false }))
    await app.connect({ elicitation: { url: {} } })
    expect(app.ctx.get('secretInput')).toBeUndefined()
  })
})

describe('the one-time page', () => {
  it('takes one answer at its own path only; anything else is 404, oversized or non-form bodies 400', async () => {
    const page = await openSecretPage({ prompt: 'Passphrase', taskId: 'bash-1' })
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
