// The MCP contract checks every executor passes through the real CLI server process (issue 18: "the
// same ones the local and SSH executors pass"): the contract texts, truncation with its spill file,
// bash-1 and its notice, kill twice, errors, env/stdin. One list, run by mcp-stdio.test.ts (local)
// and mcp-container.test.ts (container), so an executor cannot pass a weaker copy.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { bashDescription, BASH_KILL_DESCRIPTION, BASH_OUTPUT_DESCRIPTION, bashParameters, outputParameters, taskParameters } from '@deepseek-ai/dsh-tool-bash'
import { bash, call, readBack, type StdioServer, waitFor } from './helpers.js'

export const LEFTOVER = '[stopped 1 leftover process(es); use run_in_background for servers and watchers]'
const schema = (parameters: z.ZodType) => z.toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' })
export const notice = (id: string, status: string) => `background bash task ${id} finished ${status}. Read its output with bash_output.`

/** What the checks need from the suite that runs them (read when a test runs, after `beforeAll`). */
export interface ContractTarget {
  /** The running server (a fresh one per suite: the first background task must be bash-1). */
  server: StdioServer
  /** A host directory the commands can write to, seen by them at `pathInCommand(name)`. */
  dir: string
  /** How a command names the file `join(dir, name)`: an absolute host path, or a path relative to a mounted workspace. */
  pathInCommand(name: string): string
}

/** Registers the contract checks in the calling `describe`. */
export function contractChecks(target: () => ContractTarget, extraTexts: [string, Record<string, unknown>, string][] = []): void {
  it('the first background task is bash-1; bash_output reads it as the contract says; the notice comes once', async () => {
    const { server, dir, pathInCommand } = target()
    const c = server.client
    const started = await bash(c, `echo first; touch ${pathInCommand('s1')}; while [ ! -e ${pathInCommand('s2')} ]; do sleep 0.05; done`, { run_in_background: true })
    expect(started).toEqual({ texts: ['started background task bash-1'], isError: false })
    await waitFor('the task to print', () => existsSync(join(dir, 's1')))
    // The file exists before the server has necessarily read the pipe: reads of nothing consume nothing.
    let read = await call(c, 'bash_output', { task_id: 'bash-1' })
    while (read.texts[0] === '(no new output)\n[status: running]') read = await call(c, 'bash_output', { task_id: 'bash-1' })
    expect(read).toEqual({ texts: ['first\n[status: running]'], isError: false })
    writeFileSync(join(dir, 's2'), '')
    const text = notice('bash-1', '[status: completed, exit code: 0]')
    await waitFor('the logging message', () => server.logs.includes(text))
    // The next tool result carries the notice as a separate block, once.
    expect(await call(c, 'bash_output', { task_id: 'bash-1' })).toEqual({
      texts: ['(no new output)\n[status: completed, exit code: 0]', text],
      isError: false,
    })
    expect(await bash(c, 'echo again')).toEqual({ texts: ['again\n'], isError: false })
    expect(server.logs.filter((log) => log === text)).toHaveLength(1)
  })

  it('tools/list gives exactly the tools with their JSON schemas', async () => {
    const { tools } = await target().server.client.listTools()
    expect(tools.map((tool) => tool.name)).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    expect(tools[0]).toMatchObject({ description: bashDescription({ yieldAfterMs: 50_000 }), inputSchema: schema(bashParameters) })
    expect(tools[1]).toMatchObject({ description: BASH_OUTPUT_DESCRIPTION, inputSchema: schema(outputParameters) })
    expect(tools[2]).toMatchObject({ description: BASH_KILL_DESCRIPTION, inputSchema: schema(taskParameters) })
    expect(tools[0].inputSchema.required).toEqual(['command', 'description'])
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
    ...extraTexts,
  ] as [string, Record<string, unknown>, string][])('bash %j → the contract text, isError false', async (command, extra, expected) => {
    expect(await bash(target().server.client, command, extra)).toEqual({ texts: [expected], isError: false })
  })

  it('seq 1 200000: the marker and its (host) spill path first, the newest lines last, the whole within the MCP budget', async () => {
    const { texts, isError } = await bash(target().server.client, 'seq 1 200000')
    expect(isError).toBe(false)
    const text = texts[0]
    const match = /^\[output truncated; full output: (\/.*dsh-bash-.*-stdout\.log)\]\n([\s\S]*)$/.exec(text)
    expect(match).not.toBeNull()
    const full = `${Array.from({ length: 200000 }, (_, i) => i + 1).join('\n')}\n`
    const tail = match![2]
    expect(full.endsWith(tail)).toBe(true)
    expect(tail.endsWith('199999\n200000\n')).toBe(true)
    // The defaults shown by --help: 10,000 bytes and 1,900 lines per result.
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(10_000)
    expect(Buffer.byteLength(text)).toBeGreaterThan(9_000)
    expect(text.split('\n').length).toBeLessThanOrEqual(1_900)
    expect(readFileSync(match![1], 'utf8')).toBe(full)

    // Each client's documented cut of a tool result (issue 14), applied to what we send.
    const cuts: Record<string, (t: string) => string> = {
      // Over ~40 KB: moved to a file, the model sees a 2 KB (2,000-character) preview of the head.
      'Claude Code': (t) => (t.length > 40_000 ? t.slice(0, 2_000) : t),
      'Qwen Code': (t) => (t.length > 40_000 ? t.slice(0, 2_000) : t),
      // The first 2,000 lines (and 50 KB).
      OpenCode: (t) => Buffer.from(t.split('\n').slice(0, 2_000).join('\n')).subarray(0, 50 * 1024).toString(),
      // The middle cut out, head and tail kept, to about 12,000 characters.
      Codex: (t) => (t.length > 12_000 ? `${t.slice(0, 6_000)}…${t.slice(-6_000)}` : t),
      // The first 8,000 and the last 32,000 characters.
      'Gemini CLI': (t) => (t.length > 40_000 ? `${t.slice(0, 8_000)}…${t.slice(-32_000)}` : t),
    }
    for (const [client, cut] of Object.entries(cuts)) {
      const seen = cut(text)
      expect(seen.endsWith('\n200000\n'), client).toBe(true)
      expect(seen.startsWith(`[output truncated; full output: ${match![1]}]\n`), client).toBe(true)
    }
    // Even a client that kept only the first 2,000 characters would keep the path.
    expect(text.slice(0, 2_000)).toContain(match![1])
  })

  it("seq 1 200000: the model reads the complete output with its own tools (bash_output by ranges), and a client through the resource; structuredContent validates", async () => {
    const c = target().server.client
    // The SDK client validates structuredContent against each tool's outputSchema once it listed them.
    await c.listTools()
    const result = (await c.callTool({ name: 'bash', arguments: { command: 'seq 1 200000', description: 'count' } })) as CallToolResult
    const full = `${Array.from({ length: 200000 }, (_, i) => i + 1).join('\n')}\n`
    expect(result.structuredContent).toMatchObject({ status: 'completed', exitCode: 0, truncated: true, fullOutput: expect.stringMatching(/^dsh-bash:\/\/output\/run-\d+\/stdout$/) })
    const path = /^\[output truncated; full output: (\S+)\]$/m.exec((result.content[0] as { text: string }).text)![1]
    expect(await readBack(c, path)).toBe(full)
    const uri = String(result.structuredContent!.fullOutput)
    const read = await c.readResource({ uri })
    expect(read.contents[0]).toMatchObject({ uri, mimeType: 'text/plain', text: full })
    const ranged = await c.readResource({ uri: `${uri}?offset=1000&length=50` })
    expect(ranged.contents[0]).toMatchObject({ text: full.slice(1000, 1050) })
    expect(ranged._meta).toEqual({ 'dsh-bash': { offset: 1000, length: 50, size: full.length, complete: true } })
  })

  it.each([
    ['bash', { command: '   ', description: 'blank' }, 'Error: invalid command: expected a non-empty string'],
    ['bash', { command: 'x', description: ' ' }, 'Error: invalid description: expected a non-empty string'],
    ['bash', { command: 'x', description: 'd', timeoutMs: -5 }, 'Error: invalid timeoutMs: expected a positive number, got -5'],
    ['bash', { description: 'no command' }, 'Error: invalid arguments: missing required property "command"'],
    ['bash_output', { task_id: 'bash-99' }, 'Error: unknown bash task "bash-99"'],
    ['bash_kill', { task_id: 'bash-99' }, 'Error: unknown bash task "bash-99"'],
    ['nope', {}, 'Error: unknown tool "nope"'],
  ])('%s %j → %j with isError true', async (name, args, expected) => {
    expect(await call(target().server.client, name, args)).toEqual({ texts: [expected], isError: true })
  })

  it('bash_kill twice: killed, then already finished (the kill notice rides on the first result)', async () => {
    const { server } = target()
    const c = server.client
    const { texts } = await bash(c, 'sleep 300', { run_in_background: true })
    const id = /started background task (bash-\d+)/.exec(texts[0])![1]
    const first = await call(c, 'bash_kill', { task_id: id })
    expect(first.isError).toBe(false)
    expect(first.texts[0]).toBe(`killed background task ${id}`)
    expect(await call(c, 'bash_kill', { task_id: id })).toEqual({ texts: [`task ${id} had already finished`], isError: false })
    await call(c, 'bash', { command: 'true', description: 'drain notices' })
    const note = notice(id, '[status: killed by SIGTERM]')
    // The result first: a failure then shows the notice that came (CI once saw no log line, 3.1 s).
    expect(first.texts.slice(1)).toEqual([note])
    expect(server.logs.filter((log) => log === note)).toHaveLength(1)
  })

  it('env and stdin keys from the model have no effect', async () => {
    expect(await bash(target().server.client, 'echo "[$DSH_X]"; cat', { env: { DSH_X: 'set' }, stdin: 'data' })).toEqual({ texts: ['[]\n'], isError: false })
  })
}
