import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { generateToken, McpHost, type McpHostOptions, serveHttp } from '../src/index.js'
import { checkPrivateDirectory } from '../src/reply-dir.js'
import { serveReplyDesk, type ReplyEndpoint } from '../src/reply-endpoint.js'

/**
 * The reply desk in-process: the real tools over the real local executor, a host, an SDK client
 * without elicitation over an in-memory pair, the desk served on loopback and asked over real HTTP
 * by this test (a process of this user that is no command of the server: it may).
 */
function setup(options: McpHostOptions = {}) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  ctx.plugin(LocalExecutor, { graceMs: 500 })
  ctx.plugin(ToolBash)
  let host!: McpHost
  const logs: string[] = []
  ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => void (host = new McpHost(c, { log: (m) => void logs.push(m), ...options })) })
  const dir = mkdtempSync(join(tmpdir(), 'dsh-desk-'))
  let endpoint: ReplyEndpoint | undefined
  const clients: Client[] = []
  return {
    ctx,
    get host() {
      return host
    },
    logs,
    dir,
    async serve() {
      endpoint = await serveReplyDesk(host.replies!, { dir })
      const desk = JSON.parse(readFileSync(endpoint.file, 'utf8')) as { port: number; key: string }
      const url = `http://127.0.0.1:${desk.port}/dsh-bash/replies`
      return { endpoint, url, key: desk.key, file: endpoint.file }
    },
    async connect() {
      const session = host.createSession()
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      await session.server.connect(serverSide)
      const client = new Client({ name: 'test', version: '1' }, { capabilities: {} })
      await client.connect(clientSide)
      clients.push(client)
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult
        return { text: result.content.map((b) => (b as { text: string }).text).join('\n'), isError: result.isError === true }
      }
      /** A `read -s` task at its prompt. */
      const passwordTask = async (command = "read -s -p 'Password: ' p; echo; echo \"got ${#p}\"") => {
        const id = /bash-\d+/.exec((await call('bash', { command, description: 'Ask', run_in_background: true, interactive: true })).text)![0]
        for (let i = 0; i < 100 && !(await call('bash_output', { task_id: id, wait_ms: 500 })).text.includes('Password:'); i++);
        return id
      }
      return { session, call, passwordTask }
    },
    async dispose() {
      await endpoint?.close()
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await host.close()
      await ctx.bash?.shutdown()
      await ctx.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

let current: ReturnType<typeof setup> | undefined
afterEach(async () => {
  await current?.dispose()
  current = undefined
})

async function get(url: string, key: string) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${key}` } })
  return { status: res.status, body: (await res.json()) as { waiting?: { id: string; taskId: string; command: string }[]; error?: string } }
}

async function post(url: string, key: string, body: unknown) {
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, body: (await res.json()) as { outcome?: string; taskId?: string; error?: string } }
}

async function until<T>(what: string, check: () => Promise<T | false> | T | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('the reply desk', () => {
  it('without a served desk a client without elicitation is told no one can be asked, as before', async () => {
    const app = (current = setup())
    await app.ctx.lifecycle.flush()
    const { call, passwordTask } = await app.connect()
    const id = await passwordTask()
    expect((await call('bash_input', { task_id: id, ask_user: 'Password' })).text).toBe(
      `Error: no one can type a reply for task ${id}: this front end cannot ask the user for input; nothing was sent`,
    )
  })

  it('lists the question with its command line; one answer only (a replay finds nothing); a line break is refused; the task reads exactly the reply', async () => {
    const app = (current = setup())
    await app.ctx.lifecycle.flush()
    const desk = await app.serve()
    expect((statSync(desk.file).mode & 0o777).toString(8)).toBe('600')
    const { call, passwordTask } = await app.connect()
    const id = await passwordTask()
    const waiting = await call('bash_input', { task_id: id, ask_user: 'Password for <x>' })
    expect(waiting.text.startsWith(`[waiting for the user's reply to task ${id}: this client cannot ask them,`)).toBe(true)
    expect(app.logs).toContain(`task ${id} waits for your reply (Password for <x>): answer it with "dsh-bash reply" in a terminal on this machine within 300s`)
    const listed = await get(desk.url, desk.key)
    expect(listed.status).toBe(200)
    expect(listed.body.waiting).toHaveLength(1)
    const question = listed.body.waiting![0]
    expect(question).toMatchObject({ taskId: id, command: "read -s -p 'Password: ' p; echo; echo \"got ${#p}\"", prompt: 'Password for <x>' })

    const twoLines = await post(`${desk.url}/${question.id}`, desk.key, { action: 'send', reply: 'abc\nrm -rf x' })
    expect(twoLines).toEqual({ status: 400, body: { error: 'bad request: a reply is one line (no line break, no NUL)' } })
    expect((await post(`${desk.url}/${question.id}`, desk.key, { action: 'send', reply: 'twelve chars' })).body).toEqual({ taskId: id, outcome: 'sent' })
    const replay = await post(`${desk.url}/${question.id}`, desk.key, { action: 'send', reply: 'again' })
    expect(replay.status).toBe(409)
    expect(replay.body.error).toBe(`no question "${question.id}" waits for a reply (answered, withdrawn, expired, or its task ended)`)
    const read = await until('the task to read it', async () => {
      const r = await call('bash_output', { task_id: id, wait_ms: 1000 })
      return r.text.includes('[status: completed') && r.text
    })
    expect(read).toContain('got 12')
    expect(read).toContain(`[reply for task ${id}: the user typed it with dsh-bash reply; it was sent to the terminal and is not shown]`)
    expect(app.logs.join('\n')).not.toContain('twelve chars')
  })

  it('the program left its prompt before the reply came (a timed-out read -s, then read with echo): nothing is sent, the person is told why', async () => {
    const app = (current = setup())
    await app.ctx.lifecycle.flush()
    const desk = await app.serve()
    const { call, passwordTask } = await app.connect()
    const id = await passwordTask("read -s -t 2 -p 'Password: ' p; echo timeout; read q; echo \"q=$q\"")
    await call('bash_input', { task_id: id, ask_user: 'Password' })
    const question = (await get(desk.url, desk.key)).body.waiting![0]
    await until('the timeout', async () => (await call('bash_output', { task_id: id, wait_ms: 500 })).text.includes('timeout'))
    const late = await post(`${desk.url}/${question.id}`, desk.key, { action: 'send', reply: 'leaky' })
    expect(late.status).toBe(409)
    expect(late.body.error).toBe(
      `task ${id} is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    )
    const after = await call('bash_output', { task_id: id, wait_ms: 500 })
    expect(after.text).not.toContain('leaky')
    expect(after.text).toContain('[status: running]')
  })

  it('withdrawn when the model types text into the task, when the task ends, when the session closes; expired after its time, with a notice', async () => {
    const app = (current = setup({ secretInput: { timeoutMs: 1500 } }))
    await app.ctx.lifecycle.flush()
    const desk = await app.serve()
    const { call, passwordTask, session } = await app.connect()
    const list = async () => (await get(desk.url, desk.key)).body.waiting!.map((q) => q.taskId)

    const typed = await passwordTask()
    await call('bash_input', { task_id: typed, ask_user: 'Password' })
    // Polling with empty text keeps it; typing withdraws it.
    await call('bash_input', { task_id: typed, text: '', wait_ms: 0 })
    expect(await list()).toEqual([typed])
    await call('bash_input', { task_id: typed, text: 'x\n', wait_ms: 0 })
    expect(await list()).toEqual([])

    const killed = await passwordTask()
    await call('bash_input', { task_id: killed, ask_user: 'Password' })
    expect(await list()).toEqual([killed])
    await call('bash_kill', { task_id: killed })
    expect(await list()).toEqual([])

    const expiring = await passwordTask()
    await call('bash_input', { task_id: expiring, ask_user: 'Password' })
    expect((await list()).length).toBe(1)
    const notice = await until('the expiry notice', async () => {
      const r = await call('bash_output', { task_id: expiring, wait_ms: 500 })
      return r.text.includes('[reply for task') && r.text
    })
    expect(notice).toContain(`[reply for task ${expiring}: no one answered within 2s; the request was withdrawn and nothing was sent]`)
    expect(await list()).toEqual([])

    const closing = await passwordTask()
    await call('bash_input', { task_id: closing, ask_user: 'Password' })
    expect(await list()).toEqual([closing])
    await session.close()
    expect(await list()).toEqual([])
  })

  it('only dsh-bash reply: the key is required, and a browser page (an Origin) or another Host name is refused', async () => {
    const app = (current = setup())
    await app.ctx.lifecycle.flush()
    const desk = await app.serve()
    expect((await get(desk.url, 'wrong')).status).toBe(401)
    expect((await get(desk.url, desk.key)).status).toBe(200)
    const withOrigin = await fetch(desk.url, { headers: { authorization: `Bearer ${desk.key}`, origin: 'http://evil.example' } })
    expect(withOrigin.status).toBe(403)
    const port = new URL(desk.url).port
    const rebound = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/dsh-bash/replies', headers: { host: `evil.example:${port}`, authorization: `Bearer ${desk.key}` } }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on('error', reject)
      req.end()
    })
    expect(rebound).toBe(403)
  })

  it('its directory must be private: one another user could use, or a group-writable one, is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-desk-dir-'))
    try {
      expect(() => checkPrivateDirectory(dir, false)).not.toThrow()
      chmodSync(dir, 0o770)
      expect(() => checkPrivateDirectory(dir, false)).toThrow(`${dir} can be used by other users (mode 0770): make it private (chmod 700 ${dir})`)
      if (process.getuid?.() === 0) {
        chmodSync(dir, 0o700)
        chownSync(dir, 65534, 65534)
        expect(() => checkPrivateDirectory(dir, false)).toThrow(`${dir} belongs to another user (uid 65534); set DSH_BASH_RUNTIME_DIR to a private directory`)
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('the MCP HTTP server serves the desk too, behind its bearer token', async () => {
    const app = (current = setup())
    await app.ctx.lifecycle.flush()
    const token = generateToken()
    const http = await serveHttp(app.host, { port: 0, token })
    try {
      const url = new URL('/dsh-bash/replies', http.url).toString()
      expect((await get(url, 'wrong')).status).toBe(401)
      expect(await get(url, token)).toEqual({ status: 200, body: { server: { pid: process.pid }, waiting: [] } })
      expect(readdirSync(app.dir)).toEqual([])
    } finally {
      await http.close()
    }
  })
})
