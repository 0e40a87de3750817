import { spawn } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT, startStdio, type StdioServer, waitFor } from './helpers.js'

const README = readFileSync(join(ROOT, 'packages/cli/README.md'), 'utf8')
/** The CLI README's Claude Code `Elicitation` hook and its settings, exactly as a person copies them. */
const block = (pattern: RegExp) => pattern.exec(README)?.[1].replace(/^ {2}/gm, '')
const HOOK = block(/ {2}```sh\n( {2}#!\/bin\/sh\n {2}# Open dsh-bash's one-time reply page[^]*?) {2}```/)
const SETTINGS = block(/ {2}```json\n( {2}\{ "hooks": \{ "Elicitation"[^]*?) {2}```/)

/**
 * The per-client set-up the CLI README gives for Claude Code: its `Elicitation` hook run as Claude
 * Code runs one (the request as JSON on stdin, its JSON answer on stdout), in place of Claude Code
 * (not installed here), against the real `dsh-bash mcp` and a real `read -s` task. `xdg-open` is a
 * stand-in that records the URL; the test then plays the person's browser on that page.
 */
describe('the README\'s Claude Code Elicitation hook', () => {
  let dir: string
  let bin: string
  let hook: string
  let opened: string
  let server: StdioServer
  /** What the hook answered for each request, or '' (it left the request to Claude Code). */
  const answers: string[] = []

  /** Runs the hook as Claude Code does: `input` on stdin; its stdout. */
  function runHook(input: object): Promise<{ code: number | null; out: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn('/bin/sh', [hook], { env: { PATH: `${bin}:${process.env.PATH}`, OPENED: opened }, stdio: ['pipe', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, out }))
      child.stdin.end(JSON.stringify(input))
    })
  }

  beforeAll(async () => {
    expect(HOOK, 'the hook script in the CLI README').toBeDefined()
    expect(SETTINGS, 'the hook settings in the CLI README').toBeDefined()
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-reply-hook-')))
    bin = join(dir, 'bin')
    mkdirSync(bin)
    opened = join(dir, 'opened.txt')
    hook = join(dir, 'dsh-bash-open-url.sh')
    writeFileSync(hook, HOOK!)
    writeFileSync(join(bin, 'xdg-open'), '#!/bin/sh\nprintf "%s\\n" "$1" >> "$OPENED"\n')
    chmodSync(join(bin, 'xdg-open'), 0o755)
    const runtime = mkdtempSync(join(tmpdir(), 'dsh-reply-run-'))
    server = await startStdio(['--workdir', dir], { capabilities: { elicitation: { url: {} } }, env: { DSH_BASH_RUNTIME_DIR: runtime } })
    // Claude Code: the hook first; with no answer from it, print mode cancels.
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const params = request.params as { message: string; mode?: string; url?: string; elicitationId?: string }
      const { out } = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: params.message, mode: params.mode, url: params.url, elicitation_id: params.elicitationId })
      answers.push(out)
      if (!out.trim()) return { action: 'cancel' }
      return { action: (JSON.parse(out) as { hookSpecificOutput: { action: 'accept' | 'decline' | 'cancel' } }).hookSpecificOutput.action }
    })
  })

  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const text = (result: unknown) => (result as CallToolResult).content.map((b) => (b as { text: string }).text).join('\n')

  it('is registered for the server named dsh-bash, running the script', () => {
    const settings = JSON.parse(SETTINGS!) as { hooks: { Elicitation: { matcher: string; hooks: { type: string; command: string }[] }[] } }
    expect(settings.hooks.Elicitation).toEqual([{ matcher: 'dsh-bash', hooks: [{ type: 'command', command: '~/.claude/hooks/dsh-bash-open-url.sh' }] }])
  })

  it('opens the one-time page and accepts: the person types on it and read -s gets the reply', async () => {
    const started = await server.client.callTool({
      name: 'bash',
      arguments: { command: "read -s -p 'Password: ' p; echo; echo \"got ${#p}\"", description: 'Ask', run_in_background: true, interactive: true },
    })
    const id = /bash-\d+/.exec(text(started))![0]
    await waitFor('the prompt', async () => text(await server.client.callTool({ name: 'bash_output', arguments: { task_id: id, wait_ms: 1000 } })).includes('Password:'))
    const asking = server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })
    // The person's browser, at the URL the hook opened.
    const url = await waitFor('the hook to open the page', () => {
      try {
        return readFileSync(opened, 'utf8').trim()
      } catch {
        return false
      }
    })
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dsh-bash\/reply\/\S+$/)
    expect(await (await fetch(url)).text()).toContain('type="password"')
    await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ reply: 'hunter2', action: 'send' }).toString() })
    let seen = text(await asking)
    expect(seen).toMatch(/^\[the user typed a reply; it was sent to the terminal and is not shown\]/)
    expect(JSON.parse(answers.at(-1)!)).toEqual({ hookSpecificOutput: { hookEventName: 'Elicitation', action: 'accept' } })
    await waitFor('the task to read it', async () => {
      if (!seen.includes('[status: completed')) seen += text(await server.client.callTool({ name: 'bash_output', arguments: { task_id: id, wait_ms: 1000 } }))
      return seen.includes('[status: completed')
    })
    expect(seen).toContain('got 7')
    expect(seen).not.toContain('hunter2')
  })

  it('leaves every other request to Claude Code: a form (a policy approval) and another URL get no answer and open nothing', async () => {
    rmSync(opened, { force: true })
    const form = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Allow this command?', mode: 'form', requested_schema: { type: 'object' } })
    const noMode = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Allow this command?' })
    const foreign = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Sign in', mode: 'url', url: 'https://example.com/dsh-bash/reply/x' })
    const lookalike = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Sign in', mode: 'url', url: 'http://127.0.0.1.example.com:80/dsh-bash/reply/x' })
    // 127.0.0.1 as a user name, the host behind the @.
    const userinfo = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Sign in', mode: 'url', url: 'http://127.0.0.1:80@example.com/dsh-bash/reply/x' })
    for (const run of [form, noMode, foreign, lookalike, userinfo]) expect(run).toEqual({ code: 0, out: '' })
    expect(() => readFileSync(opened)).toThrow()
    // Control: the same hook with a page of this server's shape accepts and opens it.
    const page = await runHook({ hook_event_name: 'Elicitation', mcp_server_name: 'dsh-bash', message: 'Password', mode: 'url', url: 'http://127.0.0.1:9/dsh-bash/reply/x' })
    expect(page.out).toContain('"action":"accept"')
    await waitFor('the control to open its page', () => {
      try {
        return readFileSync(opened, 'utf8') === 'http://127.0.0.1:9/dsh-bash/reply/x\n'
      } catch {
        return false
      }
    })
  })
})
