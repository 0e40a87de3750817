// Issue #18's acceptance through the real CLI server process: the MCP contract checks that the local
// executor passes (mcp-stdio.test.ts: the contract texts, truncation with the spill file, background
// tasks and their notice, kill, errors) pass with `--executor container --image <offline image>`,
// and no container of the server is left after a clean stop or within 5 s of a SIGKILL.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { z } from 'zod'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bashDescription, BASH_KILL_DESCRIPTION, BASH_OUTPUT_DESCRIPTION, bashParameters, taskParameters } from '@deepseek-ai/dsh-tool-bash'
import { bash, call, isAlive, ROOT, type StdioServer, startStdio, waitFor } from './helpers.js'

const docker = await import('../../bash-container/test/docker.js')
const built = existsSync(join(ROOT, 'packages/bash-container/dist/index.js'))
const reason = built ? docker.unavailableReason() : 'packages/bash-container is not built'
if (reason) console.warn(`skipping the MCP contract checks through the container executor: ${reason}`)

const LEFTOVER = '[stopped 1 leftover process(es); use run_in_background for servers and watchers]'
const schema = (parameters: z.ZodType) => z.toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' })
const notice = (id: string, status: string) => `background bash task ${id} finished ${status}. Read its output with bash_output.`

/** Containers of ours (label dsh-bash.executor=container) created by the server with this pid, all states. */
function containersOf(pid: number): string[] {
  const out = spawnSync('docker', ['ps', '-a', '--no-trunc', '--filter', 'label=dsh-bash.executor=container', '--format', '{{.ID}} {{.Label "dsh-bash.server"}}'], { encoding: 'utf8' }).stdout
  return out
    .split('\n')
    .filter(Boolean)
    .filter((line) => line.split(' ')[1]?.split('/')[1] === String(pid))
    .map((line) => line.split(' ')[0])
}

const start = (dir: string) => startStdio(['--executor', 'container', '--image', docker.TEST_IMAGE, '--engine', docker.ENGINE_URL, '--workdir', dir])

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor container: the MCP contract checks (real server process, real engine)', () => {
  let server: StdioServer
  let dir: string

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-container-contract-')))
    server = await start(dir)
  })
  afterAll(async () => {
    const pid = server?.pid
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
    // A clean stop leaves no container of this server.
    if (pid !== undefined) {
      await waitFor('the server to exit', () => !isAlive(pid))
      expect(containersOf(pid)).toEqual([])
    }
  })

  it('the first background task is bash-1; bash_output reads it as the contract says; the notice comes once', async () => {
    const c = server.client
    // Relative paths: the workspace is bind-mounted at /workspace, the files appear in `dir` on the host.
    const started = await bash(c, 'echo first; touch s1; while [ ! -e s2 ]; do sleep 0.05; done', { run_in_background: true })
    expect(started).toEqual({ texts: ['started background task bash-1'], isError: false })
    await waitFor('the task to print', () => existsSync(join(dir, 's1')))
    let read = await call(c, 'bash_output', { task_id: 'bash-1' })
    while (read.texts[0] === '(no new output)\n[status: running]') read = await call(c, 'bash_output', { task_id: 'bash-1' })
    expect(read).toEqual({ texts: ['first\n[status: running]'], isError: false })
    writeFileSync(join(dir, 's2'), '')
    const text = notice('bash-1', '[status: completed, exit code: 0]')
    await waitFor('the logging message', () => server.logs.includes(text))
    expect(await call(c, 'bash_output', { task_id: 'bash-1' })).toEqual({
      texts: ['(no new output)\n[status: completed, exit code: 0]', text],
      isError: false,
    })
    expect(await bash(c, 'echo again')).toEqual({ texts: ['again\n'], isError: false })
    expect(server.logs.filter((log) => log === text)).toHaveLength(1)
  })

  it('the session has one container of this server (what the clean stop must remove)', async () => {
    expect(containersOf(server.pid)).toHaveLength(1)
  })

  it('tools/list gives exactly the tools with their JSON schemas', async () => {
    const { tools } = await server.client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    expect(tools[0]).toMatchObject({ description: bashDescription({ yieldAfterMs: 50_000 }), inputSchema: schema(bashParameters) })
    expect(tools[1]).toMatchObject({ description: BASH_OUTPUT_DESCRIPTION, inputSchema: schema(taskParameters) })
    expect(tools[2]).toMatchObject({ description: BASH_KILL_DESCRIPTION, inputSchema: schema(taskParameters) })
  })

  it.each([
    ['echo hello', {}, 'hello\n'],
    ['true', {}, '(no output)'],
    ['echo out; echo err >&2', {}, 'out\n[stderr]\nerr\n'],
    ['printf out; printf err >&2', {}, 'out\n[stderr]\nerr'],
    ['echo failing; exit 3', {}, 'failing\n[exit code: 3]'],
    ['sleep 60', { timeoutMs: 300 }, '(no output)\n[timed out after 300ms]\n[killed by signal: SIGTERM]'],
    ['kill -9 $$', {}, '(no output)\n[killed by signal: SIGKILL]'],
    ['sleep 100 & echo started', {}, `started\n${LEFTOVER}`],
    ['pwd', {}, '/workspace\n'],
  ])('bash %j → the contract text, isError false', async (command, extra, expected) => {
    expect(await bash(server.client, command, extra)).toEqual({ texts: [expected], isError: false })
  })

  it('seq 1 200000: the marker and its (host) spill path first, the newest lines last, within the MCP budget', async () => {
    const { texts, isError } = await bash(server.client, 'seq 1 200000')
    expect(isError).toBe(false)
    const text = texts[0]
    const match = /^\[output truncated; full output: (\/.*dsh-bash-.*-stdout\.log)\]\n([\s\S]*)$/.exec(text)
    expect(match).not.toBeNull()
    const full = `${Array.from({ length: 200000 }, (_, i) => i + 1).join('\n')}\n`
    expect(full.endsWith(match![2])).toBe(true)
    expect(match![2].endsWith('199999\n200000\n')).toBe(true)
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(10_000)
    expect(text.split('\n').length).toBeLessThanOrEqual(1_900)
    expect(readFileSync(match![1], 'utf8')).toBe(full)
  })

  it.each([
    ['bash', { command: '   ', description: 'blank' }, 'Error: invalid command: expected a non-empty string'],
    ['bash', { command: 'x', description: 'd', timeoutMs: -5 }, 'Error: invalid timeoutMs: expected a positive number, got -5'],
    ['bash_output', { task_id: 'bash-99' }, 'Error: unknown bash task "bash-99"'],
    ['bash_kill', { task_id: 'bash-99' }, 'Error: unknown bash task "bash-99"'],
  ])('%s %j → %j with isError true', async (name, args, expected) => {
    expect(await call(server.client, name, args)).toEqual({ texts: [expected], isError: true })
  })

  it('bash_kill twice: killed, then already finished (the kill notice rides on the first result)', async () => {
    const c = server.client
    const { texts } = await bash(c, 'sleep 300', { run_in_background: true })
    const id = /started background task (bash-\d+)/.exec(texts[0])![1]
    const first = await call(c, 'bash_kill', { task_id: id })
    expect(first.texts[0]).toBe(`killed background task ${id}`)
    expect(await call(c, 'bash_kill', { task_id: id })).toEqual({ texts: [`task ${id} had already finished`], isError: false })
    expect(first.texts.slice(1)).toEqual([notice(id, '[status: killed by SIGTERM]')])
  })

  it('env and stdin keys from the model have no effect', async () => {
    expect(await bash(server.client, 'echo "[$DSH_X]"; cat', { env: { DSH_X: 'set' }, stdin: 'data' })).toEqual({ texts: ['[]\n'], isError: false })
  })
})

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor container: no container is left', () => {
  it('after SIGKILL of the server process, none of its containers is left within 5 s', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-container-kill-')))
    const server = await start(dir)
    try {
      expect(await bash(server.client, 'echo up')).toEqual({ texts: ['up\n'], isError: false })
      await bash(server.client, 'sleep 300', { run_in_background: true })
      expect(containersOf(server.pid)).toHaveLength(1)
      process.kill(server.pid, 'SIGKILL')
      const killedAt = Date.now()
      await waitFor('the containers of the killed server to be gone', () => containersOf(server.pid).length === 0, 5_000)
      console.log(`[cli] the container was gone ${Date.now() - killedAt} ms after SIGKILL of the server`)
    } finally {
      await server.close().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
