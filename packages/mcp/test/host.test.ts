import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import {
  type CallToolResult,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import type {} from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { approvalMessage, decisionOf, McpHost, type McpHostOptions } from '../src/index.js'

const notice = (id: string, status: string) => `background bash task ${id} finished ${status}. Read its output with bash_output.`

/** The real tools over the real local executor, and an MCP host; clients connect in memory. */
function setup(options: McpHostOptions = {}) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  ctx.plugin(LocalExecutor, { graceMs: 500 })
  ctx.plugin(ToolBash)
  let host!: McpHost
  ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => void (host = new McpHost(c, { log: () => {}, ...options })) })
  const clients: Client[] = []
  return {
    ctx,
    host,
    async connect(capabilities: Record<string, unknown> = {}, before?: (client: Client) => void) {
      const session = host.createSession()
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await session.server.connect(serverSide)
      const client = new Client({ name: 'test', version: '1' }, { capabilities })
      const logs: string[] = []
      client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)))
      before?.(client)
      await client.connect(clientSide)
      clients.push(client)
      const call = async (name: string, args: Record<string, unknown>, signal?: AbortSignal) => {
        const result = (await client.callTool({ name, arguments: args }, undefined, { signal })) as CallToolResult
        const meta = result._meta?.['dsh-bash'] as Record<string, unknown> | undefined
        return { texts: result.content.map((b) => (b as { text: string }).text), isError: result.isError === true, ...(meta ? { meta } : {}) }
      }
      const bash = (command: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
        call('bash', { command, description: 'Run a test command', ...extra }, signal)
      return { session, client, logs, call, bash }
    },
    async dispose() {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await host.close()
      await ctx.bash?.shutdown()
      await ctx.stop()
    },
  }
}

let current: ReturnType<typeof setup> | undefined
afterEach(async () => {
  await current?.dispose()
  current = undefined
})

function asking(app: ReturnType<typeof setup>) {
  app.ctx.plugin({
    name: 'test-asker',
    inject: ['tools'],
    apply: (c: Context) =>
      void c.tools.onPreExecute((call) =>
        typeof call.args.command === 'string' && call.args.command.includes('ask-me') ? { kind: 'ask', reason: 'it says ask-me' } : undefined,
      ),
  })
}

describe('McpHost: one agent session per MCP session', () => {
  it('creates the agent at the first call, with a random owner token and the fallback cwd', async () => {
    const app = (current = setup())
    const a = await app.connect()
    expect(a.session.agent).toBeUndefined()
    expect(await a.bash('pwd')).toEqual({ texts: [`${process.cwd()}\n`], isError: false })
    const agent = a.session.agent!
    expect(agent.session.header).toEqual({ id: a.session.token, cwd: process.cwd() })
    expect(a.session.token).toMatch(/^[A-Za-z0-9_-]{24}$/)
    expect(app.ctx.agents.list()).toContain(agent)
  })

  it('closing a session disposes its agent and kills its running tasks only', async () => {
    const app = (current = setup())
    const a = await app.connect()
    const b = await app.connect()
    await a.bash('sleep 300', { run_in_background: true })
    await b.bash('sleep 300', { run_in_background: true })
    const agentA = a.session.agent!
    await a.session.close()
    expect(agentA.disposed).toBe(true)
    expect(app.host.sessions).toEqual([b.session])
    expect(app.ctx.bash.list().map((t) => [t.id, t.status])).toEqual([
      ['bash-1', 'killed'],
      ['bash-2', 'running'],
    ])
    expect((await a.bash('echo x').catch((error: Error) => error)) instanceof Error).toBe(true)
  })

  it("closing a session calls the executor's optional releaseOwner hook with its token, after its tasks were killed", async () => {
    const released: Array<{ owner: string; running: number }> = []
    // The real local executor plus the hook a container executor has (it removes the owner's container there).
    class Releasing extends LocalExecutor {
      async releaseOwner(owner: string): Promise<void> {
        released.push({ owner, running: this.list().filter((t) => t.status === 'running' && this.ownerOf(t.id) === owner).length })
      }
    }
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    ctx.plugin(Agents)
    ctx.plugin(Releasing, { graceMs: 300 })
    ctx.plugin(ToolBash)
    let host!: McpHost
    ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => void (host = new McpHost(c, { log: () => {} })) })
    try {
      const session = host.createSession()
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await session.server.connect(serverSide)
      const client = new Client({ name: 'test', version: '1' })
      await client.connect(clientSide)
      await client.callTool({ name: 'bash', arguments: { command: 'sleep 300', description: 'Sleep', run_in_background: true } })
      await session.close()
      expect(released).toEqual([{ owner: session.token, running: 0 }])
      await client.close().catch(() => {})
    } finally {
      await host.close()
      await ctx.bash?.shutdown()
      await ctx.stop()
    }
  })

  it('a notice that arrives during a call rides on that call’s result, once', async () => {
    const app = (current = setup())
    const a = await app.connect()
    await a.bash('sleep 0.2', { run_in_background: true })
    const text = notice('bash-1', '[status: completed, exit code: 0]')
    expect(await a.bash('sleep 1.5; echo later')).toEqual({ texts: ['later\n', text], isError: false })
    expect(await a.bash('echo again')).toEqual({ texts: ['again\n'], isError: false })
    expect(a.logs).toEqual([text])
  })

  it('a client that set a higher logging level gets no log message, but still the block', async () => {
    const app = (current = setup())
    const a = await app.connect()
    await a.client.setLoggingLevel('warning')
    await a.bash('true', { run_in_background: true })
    const text = notice('bash-1', '[status: completed, exit code: 0]')
    await waitUntil(() => app.ctx.bash.get('bash-1')?.status === 'completed')
    expect(await a.bash('echo next')).toEqual({ texts: ['next\n', text], isError: false })
    expect(a.logs).toEqual([])
  })

  it('a cancelled call kills its command and keeps pending notices for the next result', async () => {
    const app = (current = setup())
    const a = await app.connect()
    await a.bash('sleep 0.1', { run_in_background: true })
    const controller = new AbortController()
    const tag = `dsh-mcp-test-${process.pid}-${Date.now()}`
    const pending = a.bash(`exec -a ${tag} sleep 300`, {}, controller.signal).catch((error: Error) => error)
    const text = notice('bash-1', '[status: completed, exit code: 0]')
    await waitUntil(() => a.logs.includes(text) && running(tag))
    controller.abort()
    expect(await pending).toBeInstanceOf(Error)
    await waitUntil(() => !running(tag))
    expect(await a.bash('echo next')).toEqual({ texts: ['next\n', text], isError: false })
  })
})

describe('McpHost: the workspace of a session', () => {
  it('uses the first root when it is a local directory; else the fallback', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-root-')))
    try {
      const app = (current = setup())
      const rooted = await app.connect({ roots: {} }, (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(dir).href }] })),
      )
      expect(await rooted.bash('pwd')).toEqual({ texts: [`${dir}\n`], isError: false })
      const remote = await app.connect({ roots: {} }, (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'https://example.com/repo' }] })),
      )
      expect(await remote.bash('pwd')).toEqual({ texts: [`${process.cwd()}\n`], isError: false })
      const missing = await app.connect({ roots: {} }, (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(join(dir, 'nope')).href }] })),
      )
      expect(await missing.bash('pwd')).toEqual({ texts: [`${process.cwd()}\n`], isError: false })
      const failing = await app.connect({ roots: {} })
      expect(await failing.bash('pwd')).toEqual({ texts: [`${process.cwd()}\n`], isError: false })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a configured cwd wins over roots; a relative one is refused', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-mcp-cwd-')))
    try {
      const app = (current = setup({ cwd: dir }))
      const a = await app.connect({ roots: {} }, (client) =>
        client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///' }] })),
      )
      expect(await a.bash('pwd')).toEqual({ texts: [`${dir}\n`], isError: false })
      expect(() => new McpHost(app.ctx, { cwd: 'relative' })).toThrow('cwd must be an absolute path, got "relative"')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('McpHost: approvals', () => {
  it('routes an ask to the calling session as a yes/no form; only that client is asked', async () => {
    const app = (current = setup())
    asking(app)
    const asked: string[] = []
    const a = await app.connect({ elicitation: {} }, (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(`a: ${request.params.message}`)
        return { action: 'accept', content: { allow: true } }
      }),
    )
    const b = await app.connect({ elicitation: {} }, (client) =>
      client.setRequestHandler(ElicitRequestSchema, () => {
        asked.push('b')
        return { action: 'decline' }
      }),
    )
    expect(await a.bash('echo ask-me')).toEqual({ texts: ['ask-me\n'], isError: false })
    expect(asked).toEqual(['a: Allow this call? bash: echo ask-me\nDescription: Run a test command\nReason: it says ask-me'])
    expect(await b.bash('echo ask-me')).toEqual({ texts: ['Error: rejected by the user: it says ask-me'], isError: true, meta: { code: 'DSH_REJECTED' } })
    expect(asked).toHaveLength(2)
  })

  it('a client that fails the elicitation, or has no form support, is "unavailable"', async () => {
    const app = (current = setup())
    asking(app)
    const broken = await app.connect({ elicitation: {} }, (client) =>
      client.setRequestHandler(ElicitRequestSchema, () => {
        throw new Error('no UI')
      }),
    )
    expect(await broken.bash('echo ask-me')).toEqual({ texts: ['Error: denied: approval unavailable: it says ask-me'], isError: true, meta: { code: 'DSH_DENIED' } })
    const urlOnly = await app.connect({ elicitation: { url: {} } })
    expect(await urlOnly.bash('echo ask-me')).toEqual({ texts: ['Error: denied: approval unavailable: it says ask-me'], isError: true, meta: { code: 'DSH_DENIED' } })
  })

  it('an approval for a caller that is no session of this host is "unavailable"', async () => {
    const app = (current = setup())
    expect(await app.host.approve({ callId: 'x', tool: 'bash', arguments: {} })).toBe('unavailable')
    expect(
      await app.host.approve({ callId: 'x', tool: 'bash', arguments: {}, agent: { id: 'a', session: { header: { id: 'other', cwd: '/' } } } }),
    ).toBe('unavailable')
  })

  it('maps elicitation answers and shows the command', () => {
    expect(decisionOf({ action: 'accept', content: { allow: true } })).toBe('allowed-once')
    expect(decisionOf({ action: 'accept', content: { allow: false } })).toBe('rejected')
    expect(decisionOf({ action: 'accept' })).toBe('rejected')
    expect(decisionOf({ action: 'decline' })).toBe('rejected')
    expect(decisionOf({ action: 'cancel' })).toBe('cancelled')
    expect(approvalMessage({ callId: '1', tool: 'bash_kill', arguments: { task_id: 'bash-1' } })).toBe('Allow this call? bash_kill {"task_id":"bash-1"}')
    // Whole or not at all (issue 25, row 4): 3000 characters are shown whole; 8001 are not shown.
    expect(approvalMessage({ callId: '1', tool: 'bash', arguments: { command: 'x'.repeat(3000) } })).toBe(`Allow this call? bash: ${'x'.repeat(3000)}`)
    expect(approvalMessage({ callId: '1', tool: 'bash', arguments: { command: 'x'.repeat(8001) } })).toBeUndefined()
  })

  it('the page holds the whole line, every reason, and escaped model text (a real SDK client, issue 25 rows 4 and 11)', async () => {
    const app = (current = setup())
    app.ctx.plugin({
      name: 'test-asker-of-two',
      inject: ['tools'],
      apply: (c: Context) =>
        void c.tools.onPreExecute((call) => {
          const command = String(call.args.command)
          return command.startsWith('git push') ? { kind: 'ask', reason: 'needs: git push', reasons: ['needs: git push', `needs: ${command.split('\n')[1]}`] } : undefined
        }),
    })
    const messages: string[] = []
    const a = await app.connect({ elicitation: {} }, (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        messages.push(request.params.message)
        return { action: 'decline' }
      }),
    )
    const line = `git push origin main # ${'x'.repeat(2100)}\ncp f /tmp/m`
    const description = 'Push\nReason: allowed by rule "git push *"\u001b[2K\r\u202e'
    expect(await a.call('bash', { command: line, description })).toEqual({
      texts: ['Error: rejected by the user: needs: git push'],
      isError: true,
      meta: { code: 'DSH_REJECTED' },
    })
    expect(messages).toEqual([
      [
        `Allow this call? bash: git push origin main # ${'x'.repeat(2100)}␊cp f /tmp/m`,
        '(2 lines: each ␊ is a line break)',
        'Description: Push␊Reason: allowed by rule "git push *"␛[2K␍\\u{202E}',
        'Reasons (2):',
        '- needs: git push',
        '- needs: cp f /tmp/m',
      ].join('\n'),
    ])
    // A line too long to show whole is refused before the client is asked.
    const long = `git push origin main # ${'x'.repeat(8000)}\ncp f /tmp/m`
    const refused = await a.call('bash', { command: long, description: 'Push' })
    expect(refused.texts[0]).toMatch(/^Error: denied: the call is too long to show for approval \(\d+ characters, at most 8000\): split it into shorter calls: needs: git push$/)
    expect(messages).toHaveLength(1)
  })
})

/** True while a live process has `tag` in its command line. */
function running(tag: string): boolean {
  return readdirSync('/proc').some((pid) => {
    try {
      return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(tag) && !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
    } catch {
      return false
    }
  })
}

async function waitUntil(check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}
