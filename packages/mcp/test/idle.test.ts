import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents } from '@deepseek-ai/dsh-agent'
import type {} from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolBash } from '@deepseek-ai/dsh-tool-bash'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { type HttpHandle, McpHost, serveHttp } from '../src/index.js'

/**
 * Idle expiry of HTTP sessions, driven by raw requests (no GET stream, unlike the SDK client), so
 * that each keep-alive rule is seen on its own.
 */
const TOKEN = 'idle-test-token'
const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

async function setup(idleTimeoutMs: number) {
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  ctx.plugin(Agents)
  ctx.plugin(LocalExecutor, { graceMs: 300 })
  ctx.plugin(ToolBash)
  await new Promise((resolve) => setTimeout(resolve, 20))
  const host = new McpHost(undefined, { log: () => {} })
  ctx.plugin({ name: 'test-mcp', inject: ['tools', 'agents'], apply: (c: Context) => host.bind(c) })
  const logs: string[] = []
  const http: HttpHandle = await serveHttp(host, { port: 0, token: TOKEN, idleTimeoutMs, log: (m) => void logs.push(m) })
  cleanups.push(async () => {
    await http.close()
    await ctx.bash.shutdown()
  })
  const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
  const init = await fetch(http.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  })
  await init.text()
  const sessionId = init.headers.get('mcp-session-id')!
  let id = 0
  const post = async (method: string, params: unknown = {}) => {
    const response = await fetch(http.url, {
      method: 'POST',
      headers: { ...headers, 'Mcp-Session-Id': sessionId },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    })
    return { status: response.status, text: await response.text() }
  }
  await fetch(http.url, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': sessionId }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  return { ctx, host, http, logs, post }
}

/**
 * The idle timeout of the tests: long enough that the requests of one step (initialize, initialized,
 * a call) never drift apart by it on a loaded machine (400 ms did, at load 30: the session expired
 * before the call), short enough to wait for.
 */
const IDLE_MS = 2000

/** Polls until `check` holds (bounded): expiry is a timer, seen when it has fired, not at a fixed time. */
async function until(check: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const bash = (command: string, extra: Record<string, unknown> = {}) => ({ name: 'bash', arguments: { command, description: 'test', ...extra } })

describe('HTTP idle expiry', () => {
  it('a background task does not keep its session alive: the session expires and the task is killed', async () => {
    const { ctx, host, post, logs } = await setup(IDLE_MS)
    expect((await post('tools/call', bash('sleep 1000', { run_in_background: true }))).text).toContain('started background task bash-1')
    const task = ctx.bash.get('bash-1')!
    await task.done
    expect(task.status).toBe('killed')
    expect(host.sessions).toHaveLength(0)
    expect(logs.join('\n')).toMatch(/expired after 2s without a request; its tasks are killed/)
    // A request for the expired session: "session not found", as after DELETE.
    expect((await post('tools/list')).status).toBe(404)
  })

  it('a foreground call longer than the idle timeout keeps it alive; the clock restarts after it', async () => {
    const { host, post } = await setup(IDLE_MS)
    const result = await post('tools/call', bash('sleep 3; echo done'))
    expect(result.status).toBe(200)
    expect(result.text).toContain('done')
    expect(host.sessions).toHaveLength(1)
    expect((await post('tools/list')).status).toBe(200)
    await until(() => host.sessions.length === 0, 'the session to expire after the call')
  })

  it('0 means never', async () => {
    const { host, post } = await setup(0)
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect(host.sessions).toHaveLength(1)
    expect((await post('tools/list')).status).toBe(200)
  })
})
