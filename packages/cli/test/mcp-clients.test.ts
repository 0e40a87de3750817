import { type ChildProcess, spawn } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { bash, call, connectHttp, isAlive, MAIN, marker, pidsWith, ROOT, startHttp, startStdio, waitFor } from './helpers.js'

/** Issue 14: what real MCP clients need — yield, instructions, protocol hygiene, idle HTTP sessions. */

const cleanups: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const YIELD = /\[still running after (\d+)s; continues as background task (bash-\d+): read it with bash_output, stop it with bash_kill\]$/

describe('yield to the background (dsh-bash mcp --yield-after)', () => {
  it('a call outlasting the yield time returns before a client timeout; bash_output then shows the rest and the status', async () => {
    const server = await startStdio(['--yield-after', '1'])
    cleanups.push(() => server.close())
    await server.client.listTools() // the tools are loaded: the call below measures the command only
    // The client gives up after 5 s (as Codex does at tool_timeout_sec); the command takes 6.
    const result = await server.client.callTool(
      { name: 'bash', arguments: { command: 'echo begun; sleep 6; echo done', description: 'slow' } },
      undefined,
      { timeout: 5_000 },
    )
    const text = (result.content as { text: string }[])[0].text
    const match = YIELD.exec(text)
    expect(match, text).not.toBeNull()
    expect(Number(match![1])).toBeGreaterThanOrEqual(1)
    expect(match![2]).toBe('bash-1')
    expect(text.startsWith('begun\n') || text.startsWith('[still running')).toBe(true)
    let read = await call(server.client, 'bash_output', { task_id: 'bash-1' })
    let seen = text.replace(YIELD, '')
    while (read.texts[0].endsWith('[status: running]')) {
      seen += read.texts[0].replace(/^\(no new output\)\n/, '').replace(/\[status: running\]$/, '')
      await new Promise((resolve) => setTimeout(resolve, 200))
      read = await call(server.client, 'bash_output', { task_id: 'bash-1' })
    }
    expect(read.texts[0].endsWith('[status: completed, exit code: 0]')).toBe(true)
    seen += read.texts[0].replace(/^\(no new output\)\n/, '').replace(/\[status: .*\]$/, '')
    // Never repeated, never skipped.
    expect(seen).toBe('begun\ndone\n')
  })

  it('a client cancel before the yield time still kills the command', async () => {
    const server = await startStdio(['--yield-after', '30'])
    cleanups.push(() => server.close())
    const m = marker()
    const controller = new AbortController()
    const pending = server.client.callTool(
      { name: 'bash', arguments: { command: `exec -a ${m} sleep 1000`, description: 'wait' } },
      undefined,
      { signal: controller.signal },
    )
    await waitFor('the command to start', () => pidsWith(m).length > 0)
    controller.abort()
    await expect(pending).rejects.toThrow()
    await waitFor('the command to be killed', () => pidsWith(m).length === 0)
  })

  it('--yield-after 0 turns it off: the call waits for the command', async () => {
    const server = await startStdio(['--yield-after', '0'])
    cleanups.push(() => server.close())
    const { tools } = await server.client.listTools()
    expect(tools[0].description).not.toContain('still running')
    expect(await bash(server.client, 'sleep 1.2; echo late')).toEqual({ texts: ['late\n'], isError: false })
  })
})

describe('initialize', () => {
  it('carries instructions: what the tools are, the markers, background tasks and polling', async () => {
    const server = await startStdio()
    cleanups.push(() => server.close())
    const instructions = server.client.getInstructions() ?? ''
    const sentences = instructions.split(/(?<=[.])\s+(?=[A-Z])/)
    expect(sentences.length).toBeGreaterThanOrEqual(2)
    expect(sentences.length).toBeLessThanOrEqual(3)
    for (const word of ['bash_output', 'bash_kill', 'run_in_background', '[output truncated; full output: PATH]', 'still running after 50 seconds']) {
      expect(instructions).toContain(word)
    }
  })
})

/** A raw stdio server: lines in, parsed lines out. */
function rawServer(args: string[] = []) {
  const proc: ChildProcess = spawn(process.execPath, [MAIN, 'mcp', ...args], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
  const messages: Record<string, unknown>[] = []
  let buffer = ''
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    let nl: number
    while ((nl = buffer.indexOf('\n')) !== -1) {
      messages.push(JSON.parse(buffer.slice(0, nl)))
      buffer = buffer.slice(nl + 1)
    }
  })
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  const send = (message: unknown) => proc.stdin!.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`)
  const answer = (id: unknown) => waitFor(`the answer to ${JSON.stringify(id)}`, () => messages.find((m) => m.id === id))
  const stop = async () => {
    proc.stdin!.end()
    await exited
  }
  return { proc, messages, send, answer, stop }
}

describe('protocol hygiene on stdio (a raw client)', () => {
  it('malformed requests get a JSON-RPC error each; the session and its tasks go on', async () => {
    const server = rawServer()
    cleanups.push(() => server.stop())
    server.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
    await server.answer(1)
    server.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
    const m = marker()
    server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash', arguments: { command: `exec -a ${m} sleep 1000`, description: 'bg', run_in_background: true } } })
    expect(await server.answer(2), JSON.stringify(server.messages)).toMatchObject({ result: { content: [{ type: 'text', text: 'started background task bash-1' }] } })

    server.send({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: 'not an object' })
    expect(await server.answer(3)).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'invalid params: "params" must be an object, got a string' } })
    server.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'bash', arguments: 'echo hi' } })
    expect(await server.answer(4)).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32602, message: 'invalid params: "arguments" must be an object, got a string' } })
    server.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'bash', arguments: [1] } })
    expect(await server.answer(5)).toMatchObject({ error: { code: -32602, message: 'invalid params: "arguments" must be an object, got an array' } })
    server.send('{"jsonrpc":"2.0","id":6,"method":')
    await waitFor('the parse error', () => server.messages.find((msg) => (msg.error as { code?: number } | undefined)?.code === -32700))
    // One line of 10 MiB + 1 byte: refused by its id, without buffering it.
    const big = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"${'x'.repeat(10 * 1024 * 1024)}","description":"big"}}}`
    server.send(big)
    const refused = await server.answer(7)
    expect(refused).toMatchObject({ error: { code: -32600 } })
    expect((refused.error as { message: string }).message).toContain(`at most ${10 * 1024 * 1024} bytes`)

    // Still serving, the task still running.
    server.send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'bash_output', arguments: { task_id: 'bash-1' } } })
    expect(await server.answer(8)).toMatchObject({ result: { content: [{ type: 'text', text: '(no new output)\n[status: running]' }] } })
    expect(pidsWith(m).length).toBeGreaterThan(0)
    expect(server.proc.exitCode).toBeNull()
    await server.stop()
    await waitFor('the task to be killed at exit', () => pidsWith(m).length === 0)
  })
})

describe('idle HTTP sessions (--idle-timeout)', () => {
  it('a client that leaves without DELETE: its session expires and its tasks are killed; one in use is kept', async () => {
    const server = await startHttp(['--idle-timeout', '1.5'])
    cleanups.push(() => server.stop())
    const gone = await connectHttp(server.url, server.token)
    const m = marker()
    expect((await bash(gone.client, `exec -a ${m} sleep 1000`, { run_in_background: true })).texts).toEqual(['started background task bash-1'])
    await waitFor('the task', () => pidsWith(m).length > 0)
    const pid = pidsWith(m)[0]
    // The client goes away as Claude Code, Gemini CLI and OpenCode do: streams closed, no DELETE.
    await gone.transport.close()

    // Meanwhile another session is busy with a foreground call longer than the idle timeout.
    const busy = await connectHttp(server.url, server.token)
    cleanups.push(() => busy.close())
    expect(await bash(busy.client, 'sleep 3; echo still here')).toEqual({ texts: ['still here\n'], isError: false })
    await waitFor('the idle session to expire', () => !isAlive(pid), 15_000)
    expect(server.stderr()).toMatch(/session s1 expired after 2s without a request/)
    // The busy session was never expired: it still answers.
    expect(await bash(busy.client, 'echo ok')).toEqual({ texts: ['ok\n'], isError: false })
  })
})

describe('protocol hygiene on HTTP', () => {
  it('a non-object params or arguments gets a JSON-RPC error naming it; the session goes on', async () => {
    const server = await startHttp()
    cleanups.push(() => server.stop())
    const headers = { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }
    const init = await fetch(server.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    })
    const session = init.headers.get('mcp-session-id')!
    await init.text()
    expect(session).toBeTruthy()
    const post = async (body: unknown) => {
      const response = await fetch(server.url, { method: 'POST', headers: { ...headers, 'Mcp-Session-Id': session }, body: JSON.stringify(body) })
      return { status: response.status, body: await response.text() }
    }
    expect(await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash', arguments: 'echo hi' } })).toEqual({
      status: 400,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'invalid params: "arguments" must be an object, got a string' } }),
    })
    expect(await post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: 7 })).toEqual({
      status: 400,
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, error: { code: -32602, message: 'invalid params: "params" must be an object, got a number' } }),
    })
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' })
    const listed = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: {} })
    expect(listed.status).toBe(200)
    expect(listed.body).toContain('bash_output')
  })
})
