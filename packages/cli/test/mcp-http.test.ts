import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TOKEN_FLAG_REFUSED } from '../src/token.js'
import { bash, call, connectHttp, type HttpConnected, type HttpServer, isAlive, MAIN, marker, pidsWith, ROOT, startHttp, waitFor } from './helpers.js'

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

    it('each gets the four tools and the contract texts', async () => {
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
  it('--allow-origin admits a browser-based client from that origin', async () => {
    const server = await startHttp(['--allow-origin', 'http://localhost:6274'], { DSH_BASH_TOKEN: 't0k3n' })
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

/** The command lines of `pid` and every process below it, each as its arguments joined by spaces. */
function treeCmdlines(pid: number): string[] {
  const lines: string[] = []
  const walk = (p: number) => {
    try {
      lines.push(readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0').join(' '))
    } catch {
      return
    }
    let tids: string[] = []
    try {
      tids = readdirSync(`/proc/${p}/task`)
    } catch {
      // Gone meanwhile.
    }
    for (const tid of tids) {
      let children = ''
      try {
        children = readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8')
      } catch {
        // Gone meanwhile.
      }
      for (const child of children.split(' ').filter(Boolean)) walk(Number(child))
    }
  }
  walk(pid)
  return lines
}

/** Runs the server to its end (a start that must fail): exit code and stderr. */
function failedStart(args: string[], env: Record<string, string> = {}): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [MAIN, 'mcp', '--http', '127.0.0.1:0', ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 })
  return { status: result.status, stderr: result.stderr }
}

describe('dsh-bash mcp --http: the bearer token never on a command line (issue 25, row 9)', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-token-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** A private token file holding `token` and a line break. */
  function tokenFile(name: string, token: string, mode = 0o600): string {
    const path = join(dir, name)
    writeFileSync(path, `${token}\n`, { mode })
    chmodSync(path, mode)
    return path
  }

  it('--token is refused before anything starts (exit 2), naming --token-file and DSH_BASH_TOKEN', () => {
    const { status, stderr } = failedStart(['--token', 'cmdline-token-0123456789'])
    expect(status).toBe(2)
    expect(stderr).toBe(`dsh-bash: ${TOKEN_FLAG_REFUSED}\nTry "dsh-bash mcp --help".\n`)
  })

  it('--token-file: the token is in no command line of the server or its processes; a client with it connects, without it or with another gets 401', async () => {
    const token = `file-token-${marker()}`
    const server = await startHttp(['--token-file', tokenFile('token', token)])
    try {
      expect(server.token).toBe(token)
      expect(server.stderr()).not.toContain(token)
      expect(server.stderr()).not.toContain('bearer token:')
      const client = await connectHttp(server.url, token)
      expect(await bash(client.client, 'echo via file')).toEqual({ texts: ['via file\n'], isError: false })
      // The control: the token is really there to be found when a command line holds it (the test can fail).
      const lines = treeCmdlines(server.proc.pid!)
      expect(lines.length).toBeGreaterThan(1)
      expect(lines.join('\n')).toContain('--token-file')
      expect(lines.filter((line) => line.includes(token))).toEqual([])
      await client.close()
      expect((await post(server.url, {})).status).toBe(401)
      expect((await post(server.url, { Authorization: `Bearer ${token}x` })).status).toBe(401)
      await expect(connectHttp(server.url, 'not-the-token')).rejects.toThrow(/401|unauthorized/i)
    } finally {
      await server.stop()
    }
  })

  it('DSH_BASH_TOKEN: in no command line, and gone from the environment before anything starts (the launcher helper and commands do not inherit it)', async () => {
    const token = `env-token-${marker()}`
    const server = await startHttp([], { DSH_BASH_TOKEN: token })
    try {
      expect(server.stderr()).not.toContain('bearer token:')
      const client = await connectHttp(server.url, token)
      // $PPID of a command is the launcher helper the server started.
      const seen = await bash(client.client, `tr '\\0' '\\n' < /proc/$PPID/environ | grep -c '^DSH_BASH_TOKEN=' ; echo "[\${DSH_BASH_TOKEN-unset}]"`)
      expect(seen).toEqual({ texts: ['0\n[unset]\n'], isError: false })
      expect(treeCmdlines(server.proc.pid!).filter((line) => line.includes(token))).toEqual([])
      await client.close()
      expect((await post(server.url, {})).status).toBe(401)
    } finally {
      await server.stop()
    }
  })

  it('a token file others may read or write, another user\'s, an empty one or one that is not one token: refused at start (exit 1), the file named', () => {
    const open = tokenFile('open', 'open-token-0123456789', 0o640)
    expect(failedStart(['--token-file', open])).toEqual({
      status: 1,
      stderr: `dsh-bash: --token-file: ${open} can be read or written by other users (mode 0640): make it private (chmod 600 ${open})\n`,
    })
    const groupWritable = tokenFile('group-writable', 'gw-token-0123456789', 0o620)
    expect(failedStart(['--token-file', groupWritable]).stderr).toContain('(mode 0620)')
    const empty = join(dir, 'empty')
    writeFileSync(empty, '', { mode: 0o600 })
    expect(failedStart(['--token-file', empty])).toEqual({ status: 1, stderr: `dsh-bash: --token-file: ${empty} is empty\n` })
    const two = tokenFile('two', 'two words')
    expect(failedStart(['--token-file', two])).toEqual({ status: 1, stderr: `dsh-bash: --token-file: ${two} must hold one line of printable characters without spaces\n` })
    const missing = join(dir, 'missing')
    expect(failedStart(['--token-file', missing]).stderr).toMatch(new RegExp(`^dsh-bash: --token-file: cannot read ${missing}: ENOENT`))
    expect(failedStart([], { DSH_BASH_TOKEN: 'has space' })).toEqual({ status: 1, stderr: 'dsh-bash: DSH_BASH_TOKEN: expected printable characters without spaces\n' })
    if (process.getuid?.() === 0) {
      const foreign = tokenFile('foreign', 'foreign-token-0123456789')
      chownSync(foreign, 65534, 65534)
      expect(failedStart(['--token-file', foreign])).toEqual({ status: 1, stderr: `dsh-bash: --token-file: ${foreign} belongs to another user (uid 65534): it must be yours or root's\n` })
    }
  })
})
