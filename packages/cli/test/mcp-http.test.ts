import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bash, call, connectHttp, type HttpConnected, type HttpServer, isAlive, marker, pidsWith, startHttp, waitFor } from './helpers.js'

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
})

/** A raw POST of an initialize request, with any headers (node:http lets a test set Host). */
function post(url: string, headers: Record<string, string>, path = '/mcp'): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path,
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let body = ''
        res.on('data', (chunk) => (body += chunk))
        res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }))
      },
    )
    req.on('error', reject)
    req.end(INITIALIZE)
  })
}

const notice = (id: string, status: string) => `background bash task ${id} finished ${status}. Read its output with bash_output.`

describe('dsh-bash mcp --http (real server process)', () => {
  let server: HttpServer

  beforeAll(async () => {
    server = await startHttp()
  })
  afterAll(async () => {
    await server?.stop()
  })

  it('listens on 127.0.0.1 at /mcp and prints a generated token on stderr', () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    expect(server.token).toMatch(/^[A-Za-z0-9_-]{40,}$/)
  })

  it('refuses a request without the token, or with a wrong one (401)', async () => {
    const none = await post(server.url, {})
    expect(none.status).toBe(401)
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/)
    expect((await post(server.url, { Authorization: 'Bearer wrong' })).status).toBe(401)
    expect((await post(server.url, { Authorization: server.token })).status).toBe(401)
    expect((await post(server.url, { Authorization: `Bearer ${server.token}` })).status).toBe(200)
  })

  it('refuses a foreign Origin (403), with or without the token, and a foreign Host (403)', async () => {
    const auth = { Authorization: `Bearer ${server.token}` }
    expect((await post(server.url, { ...auth, Origin: 'http://evil.example' })).status).toBe(403)
    expect((await post(server.url, { Origin: 'http://evil.example' })).status).toBe(403)
    expect((await post(server.url, { ...auth, Origin: 'null' })).status).toBe(403)
    const port = new URL(server.url).port
    expect((await post(server.url, { ...auth, Host: `evil.example:${port}` })).status).toBe(403)
    // DNS rebinding: a foreign name resolving to 127.0.0.1 still carries the foreign Host.
    expect((await post(server.url, { ...auth, Host: `attacker.example:${port}`, Origin: `http://attacker.example:${port}` })).status).toBe(403)
    // Its own origin is fine.
    expect((await post(server.url, { ...auth, Origin: `http://localhost:${port}`, Host: `localhost:${port}` })).status).toBe(200)
  })

  it('serves only /mcp', async () => {
    expect((await post(server.url, { Authorization: `Bearer ${server.token}` }, '/other')).status).toBe(404)
  })

  describe('two clients', () => {
    let a: HttpConnected
    let b: HttpConnected
    const tag = marker()
    let id: string

    beforeAll(async () => {
      a = await connectHttp(server.url, server.token)
      b = await connectHttp(server.url, server.token)
    })
    afterAll(async () => {
      await a?.close()
      await b?.close()
    })

    it('each gets the three tools and the contract texts', async () => {
      for (const client of [a, b]) {
        const { tools } = await client.client.listTools()
        expect(tools.map((tool) => tool.name)).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
      }
      expect(await bash(a.client, 'echo hello')).toEqual({ texts: ['hello\n'], isError: false })
      expect(await bash(b.client, 'echo failing; exit 3')).toEqual({ texts: ['failing\n[exit code: 3]'], isError: false })
      expect(await bash(b.client, '   ')).toEqual({ texts: ['Error: invalid command: expected a non-empty string'], isError: true })
    })

    it('cannot read or kill each other’s tasks', async () => {
      const started = await bash(a.client, `exec -a ${tag} sleep 300`, { run_in_background: true })
      id = /^started background task (bash-\d+)$/.exec(started.texts[0])![1]
      await waitFor('the task', () => pidsWith(tag).length === 1)
      const foreign = { texts: [`Error: task ${id} belongs to another session`], isError: true }
      expect(await call(b.client, 'bash_output', { task_id: id })).toEqual(foreign)
      expect(await call(b.client, 'bash_kill', { task_id: id })).toEqual(foreign)
      expect(pidsWith(tag)).toHaveLength(1)
      expect(await call(a.client, 'bash_output', { task_id: id })).toEqual({ texts: ['(no new output)\n[status: running]'], isError: false })
    })

    it('a background notice reaches its own client only, exactly once', async () => {
      const started = await bash(b.client, 'echo done-b', { run_in_background: true })
      const bid = /^started background task (bash-\d+)$/.exec(started.texts[0])![1]
      const text = notice(bid, '[status: completed, exit code: 0]')
      await waitFor('the logging message', () => b.logs.includes(text))
      expect(await bash(b.client, 'echo next')).toEqual({ texts: ['next\n', text], isError: false })
      expect(await bash(b.client, 'echo after')).toEqual({ texts: ['after\n'], isError: false })
      expect(await bash(a.client, 'echo other')).toEqual({ texts: ['other\n'], isError: false })
      expect(b.logs.filter((log) => log === text)).toHaveLength(1)
      expect(a.logs).not.toContain(text)
      expect(await call(b.client, 'bash_output', { task_id: bid })).toEqual({
        texts: ['done-b\n[status: completed, exit code: 0]'],
        isError: false,
      })
    })

    it('logging/setLevel of one HTTP session silences its log messages only, never the block', async () => {
      const quiet = await connectHttp(server.url, server.token)
      try {
        await quiet.client.setLoggingLevel('error')
        const started = await bash(quiet.client, 'true', { run_in_background: true })
        const qid = /^started background task (bash-\d+)$/.exec(started.texts[0])![1]
        const text = notice(qid, '[status: completed, exit code: 0]')
        // Poll with reads of the task: its notice rides on the first result after it ended.
        let read = await call(quiet.client, 'bash_output', { task_id: qid })
        while (read.texts.length === 1 && read.texts[0].endsWith('[status: running]')) read = await call(quiet.client, 'bash_output', { task_id: qid })
        const all = [read.texts.slice(1), (await bash(quiet.client, 'true')).texts.slice(1)].flat()
        expect(all).toEqual([text])
        expect(quiet.logs).toEqual([])
      } finally {
        await quiet.transport.terminateSession()
        await quiet.close()
      }
    })

    it('ending a session (DELETE) kills that session’s tasks; the other session is untouched', async () => {
      const tagB = marker()
      await bash(b.client, `exec -a ${tagB} sleep 300`, { run_in_background: true })
      await waitFor('the task of b', () => pidsWith(tagB).length === 1)
      await a.transport.terminateSession()
      await a.close()
      await waitFor('the tasks of a to be gone', () => pidsWith(tag).length === 0)
      expect(pidsWith(tagB)).toHaveLength(1)
      expect(await bash(b.client, 'echo still here')).toEqual({ texts: ['still here\n'], isError: false })
    })
  })
})

describe('dsh-bash mcp --http: tokens and shutdown', () => {
  it('takes the token from --token, or from DSH_BASH_TOKEN, and then prints none', async () => {
    const flagged = await startHttp(['--token', 'flag-token-123'])
    try {
      expect(flagged.stderr()).not.toContain('bearer token:')
      expect((await post(flagged.url, { Authorization: 'Bearer flag-token-123' })).status).toBe(200)
      expect((await post(flagged.url, { Authorization: 'Bearer other' })).status).toBe(401)
    } finally {
      await flagged.stop()
    }
    const env = await startHttp([], { DSH_BASH_TOKEN: 'env-token-456' })
    try {
      expect(env.stderr()).not.toContain('bearer token:')
      const client = await connectHttp(env.url, 'env-token-456')
      expect(await bash(client.client, 'echo via env')).toEqual({ texts: ['via env\n'], isError: false })
      await client.close()
    } finally {
      await env.stop()
    }
  })

  it('--allow-origin admits a browser-based client from that origin', async () => {
    const server = await startHttp(['--token', 't0k3n', '--allow-origin', 'http://localhost:6274'])
    try {
      expect((await post(server.url, { Authorization: 'Bearer t0k3n', Origin: 'http://localhost:6274' })).status).toBe(200)
      expect((await post(server.url, { Authorization: 'Bearer t0k3n', Origin: 'http://localhost:6275' })).status).toBe(403)
    } finally {
      await server.stop()
    }
  })

  it('SIGTERM kills the tasks of every session and the server exits 0', async () => {
    const server = await startHttp()
    const tag = marker()
    const a = await connectHttp(server.url, server.token)
    const b = await connectHttp(server.url, server.token)
    await bash(a.client, `exec -a ${tag} sleep 300`, { run_in_background: true })
    await bash(b.client, `(exec -a ${tag} sleep 300 &); exec -a ${tag} sleep 300`, { run_in_background: true })
    await waitFor('the tasks', () => pidsWith(tag).length === 3)
    expect(await server.stop('SIGTERM')).toBe(0)
    expect(isAlive(server.proc.pid!)).toBe(false)
    expect(pidsWith(tag)).toEqual([])
    await a.close().catch(() => {})
    await b.close().catch(() => {})
  })
})
