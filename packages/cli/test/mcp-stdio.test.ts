import { spawn } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type CallToolResult, ListRootsRequestSchema, type ProgressNotification } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { contractChecks } from './contract-checks.js'
import { bash, call, isAlive, MAIN, marker, pidsWith, ROOT, type StdioServer, startStdio, waitFor } from './helpers.js'

describe('dsh-bash mcp over stdio (real server process, SDK client)', () => {
  let server: StdioServer
  let dir: string

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-stdio-')))
    server = await startStdio()
  })
  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  contractChecks(() => ({ server, dir, pathInCommand: (name) => join(dir, name) }))

  it('sends progress notifications (elapsed time) for a long foreground call with a progress token', async () => {
    const progress: ProgressNotification['params'][] = []
    const result = (await server.client.callTool(
      { name: 'bash', arguments: { command: 'sleep 2.6; echo slow', description: 'A slow command' } },
      undefined,
      { onprogress: (p) => void progress.push(p) },
    )) as CallToolResult
    expect(result.content).toEqual([{ type: 'text', text: 'slow\n' }])
    expect(progress.length).toBeGreaterThanOrEqual(1)
    expect(progress[0].message).toMatch(/^running for \d+s$/)
    for (let i = 1; i < progress.length; i++) expect(progress[i].progress).toBeGreaterThan(progress[i - 1].progress)
  })

  it('progress carries the newest output line of a long foreground call', async () => {
    const progress: ProgressNotification['params'][] = []
    const result = (await server.client.callTool(
      { name: 'bash', arguments: { command: 'echo step one; sleep 1.5; echo step two >&2; sleep 1.5; echo end', description: 'Print steps slowly' } },
      undefined,
      { onprogress: (p) => void progress.push(p) },
    )) as CallToolResult
    expect(result.content).toEqual([{ type: 'text', text: 'step one\nend\n[stderr]\nstep two\n' }])
    const messages = progress.map((p) => p.message)
    expect(messages.length).toBeGreaterThanOrEqual(2)
    for (const message of messages) expect(message).toMatch(/^running for \d+s(: step (one|two))?$/)
    // The newest line is reported: once "step two" appeared, "step one" never comes back.
    const firstTwo = messages.findIndex((m) => m?.endsWith('step two'))
    expect(firstTwo).toBeGreaterThanOrEqual(0)
    expect(messages.slice(firstTwo).every((m) => m?.endsWith('step two'))).toBe(true)
  })

  it('runs in the server cwd by default', async () => {
    expect(await bash(server.client, 'pwd')).toEqual({ texts: [`${ROOT}\n`], isError: false })
  })
})

describe('dsh-bash mcp: the session workspace', () => {
  it('--workdir sets the cwd of the session; a relative workdir resolves against it', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-wd-')))
    const server = await startStdio(['--workdir', dir])
    try {
      expect(await bash(server.client, 'pwd')).toEqual({ texts: [`${dir}\n`], isError: false })
      expect(await bash(server.client, 'mkdir -p sub && cd sub && pwd')).toEqual({ texts: [`${dir}/sub\n`], isError: false })
      expect(await bash(server.client, 'pwd', { workdir: 'sub' })).toEqual({ texts: [`${dir}/sub\n`], isError: false })
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("without --workdir, the client's first root is the cwd", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-root-')))
    const server = await startStdio([], { capabilities: { roots: {} } })
    // Registered after connect: the server asks only at the first tool call.
    server.client.setRequestHandler(ListRootsRequestSchema, () => ({
      roots: [{ uri: pathToFileURL(dir).href, name: 'project' }, { uri: 'file:///', name: 'other' }],
    }))
    try {
      expect(await bash(server.client, 'pwd')).toEqual({ texts: [`${dir}\n`], isError: false })
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('dsh-bash mcp over stdio: stopping leaves no process behind', () => {
  async function startWithTasks() {
    const server = await startStdio()
    const tag = marker()
    // A background task with a child that double-forks away, and a foreground call still running.
    await bash(server.client, `(exec -a ${tag} sleep 300 &); exec -a ${tag} sleep 300`, { run_in_background: true })
    const foreground = bash(server.client, `exec -a ${tag} sleep 300`).catch(() => undefined)
    await waitFor('the marked processes', () => pidsWith(tag).length === 3)
    return { server, tag, foreground }
  }

  it('closing the client (stdin ends) kills every task and the server exits', async () => {
    const { server, tag } = await startWithTasks()
    const pid = server.pid
    await server.close()
    await waitFor('the server to exit', () => !isAlive(pid))
    await waitFor('the tasks to be gone', () => pidsWith(tag).length === 0)
    expect(pidsWith(tag)).toEqual([])
  })

  it('SIGTERM to the server kills every task and the server exits', async () => {
    const { server, tag } = await startWithTasks()
    const pid = server.pid
    process.kill(pid, 'SIGTERM')
    await waitFor('the server to exit', () => !isAlive(pid))
    expect(pidsWith(tag)).toEqual([])
    await server.close()
  })

  it('a SIGTERM that comes while the server is still starting (initialize answered, tools loading) is a clean stop, not a death by signal', async () => {
    const proc = spawn(process.execPath, [MAIN, 'mcp'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })))
    const answered = new Promise<void>((resolve) => proc.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('"result"') && resolve()))
    proc.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'early-stop', version: '1' } } })}\n`)
    // The front answers initialize before the executor and the tools load: the signal lands in that window.
    await answered
    proc.kill('SIGTERM')
    // Without the early handler the default action ended it: { code: null, signal: 'SIGTERM' }.
    expect(await exited).toEqual({ code: 0, signal: null })
  })

  it('SIGINT to the server does the same', async () => {
    const { server, tag } = await startWithTasks()
    const pid = server.pid
    process.kill(pid, 'SIGINT')
    await waitFor('the server to exit', () => !isAlive(pid))
    expect(pidsWith(tag)).toEqual([])
    await server.close()
  })
})
