import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startStdio, type StdioServer, waitFor } from './helpers.js'

/** A person's answer in the client takes them longer than the server's UNASKED_MS (1 s): an instant one is the client's own. */
const afterReading = <T>(value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), 1100))

const SECRET = 'secret'

/**
 * Issue #15's acceptance for passwords, through the real `dsh-bash mcp` process over stdio with the
 * SDK's real Client: the person answers `read -s` through a URL elicitation (the handler plays the
 * browser on the one-time page); the model's texts show the length, never the reply. Issue 25's
 * (row 8): a prompt that echoes is refused, and a program that hands the reply back is shown to
 * the person as it is — no text claims the model cannot see it.
 */
describe('MCP: a password typed by the person reaches only the task\'s program', () => {
  let dir: string
  let server: StdioServer
  /** Every text the model could read: tool results, log messages, and what the client was asked. */
  const modelTexts: string[] = []
  let answerWith: { action: 'accept' | 'decline' | 'cancel'; page?: Record<string, string> } = { action: 'accept' }

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-typed-')))
    server = await startStdio(['--workdir', dir], { capabilities: { elicitation: { url: {} } } })
    server.client.setRequestHandler(ElicitRequestSchema, elicitHandler)
  })

  /** The client's elicitation handler: plays the person (and the browser, on the one-time page) as `answerWith` says. */
  async function elicitHandler(request: { params: unknown }): Promise<{ action: 'accept' | 'decline' | 'cancel' }> {
    modelTexts.push(JSON.stringify(request.params))
    const url = (request.params as { url: string }).url
    const { action, page } = answerWith
    if (action !== 'accept') return afterReading({ action })
    if (action === 'accept' && page) {
      const html = await (await fetch(url)).text()
      expect(html).toContain('type="password"')
      // The person types after agreeing to open the page.
      setTimeout(() => {
        void fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(page).toString() })
      }, 20)
    }
    return { action }
  }

  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  async function call(name: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
    const result = (await server.client.callTool({ name, arguments: args })) as CallToolResult
    const text = result.content.map((b) => (b as { text: string }).text).join('\n')
    modelTexts.push(text)
    return { text, isError: result.isError === true }
  }

  async function startPasswordTask(): Promise<string> {
    const started = await call('bash', {
      command: "read -s -p 'Password: ' p; echo; echo ${#p}",
      description: 'Ask for a password',
      run_in_background: true,
      interactive: true,
    })
    const id = /bash-\d+/.exec(started.text)![0]
    await waitFor('the password prompt', async () => (await call('bash_input', { task_id: id, text: '' })).text.includes('Password:'))
    return id
  }

  it('read -s: the person answers "secret" on the page; the model reads that a reply was typed, then 6', async () => {
    answerWith = { action: 'accept', page: { reply: SECRET, action: 'send' } }
    const id = await startPasswordTask()
    const typed = await call('bash_input', { task_id: id, ask_user: 'Password for the test' })
    expect(typed.isError).toBe(false)
    expect(typed.text.startsWith('[the user typed a reply; it was sent to the terminal and is not shown]\n')).toBe(true)
    const all = typed.text.includes('[status: completed')
      ? typed.text
      : await waitFor('the end', async () => {
          const read = await call('bash_output', { task_id: id })
          return read.text.includes('[status: completed') && read.text
        })
    expect(all).toMatch(/^6$/m)
    expect(all).toContain('[status: completed, exit code: 0]')
    expect(modelTexts.join('\n')).toContain('Password for the test')
    expect(modelTexts.join('\n')).not.toContain(SECRET)
    expect(server.logs.join('\n')).not.toContain(SECRET)
    expect(server.stderr()).not.toContain(SECRET)
  })

  it('a prompt that echoes (read p) is refused before anyone is asked; nothing is sent, the task still waits', async () => {
    const started = await call('bash', { command: "read -p 'Token: ' t; echo \"length ${#t}\"", description: 'Ask for a token', run_in_background: true, interactive: true })
    const id = /bash-\d+/.exec(started.text)![0]
    await waitFor('the token prompt', async () => (await call('bash_input', { task_id: id, text: '' })).text.includes('Token:'))
    answerWith = { action: 'accept', page: { reply: SECRET, action: 'send' } }
    const before = modelTexts.length
    const refused = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'API token' } })) as CallToolResult
    expect((refused.content[0] as { text: string }).text).toBe(
      `Error: task ${id} is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    )
    expect((refused._meta?.['dsh-bash'] as { code?: string } | undefined)?.code).toBe('DSH_INPUT_ECHO_ON')
    expect(modelTexts.slice(before).some((t) => t.includes('"mode":"url"'))).toBe(false)
    expect((await call('bash_output', { task_id: id })).text).toContain('[status: running]')
    await call('bash_kill', { task_id: id })
  })

  it('a program that hands the reply back (read -s p; echo "$p" | rev): the person is shown exactly that command line and told what it means', async () => {
    const command = `read -s -p 'Password: ' p; echo; echo "$p" | rev`
    const started = await call('bash', { command, description: 'Ask for a password', run_in_background: true, interactive: true })
    const id = /bash-\d+/.exec(started.text)![0]
    await waitFor('the password prompt', async () => (await call('bash_input', { task_id: id, text: '' })).text.includes('Password:'))
    let page = ''
    const before = modelTexts.length
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      modelTexts.push(JSON.stringify(request.params))
      page = await (await fetch((request.params as { url: string }).url)).text()
      return afterReading({ action: 'decline' as const })
    })
    try {
      expect((await call('bash_input', { task_id: id, ask_user: 'Password' })).text).toBe(`Error: the user declined to type a reply for task ${id}; nothing was sent`)
    } finally {
      server.client.setRequestHandler(ElicitRequestSchema, elicitHandler)
    }
    const message = (JSON.parse(modelTexts[before]) as { message: string }).message
    expect(message).toContain(`It goes to this program, which the model started: ${command}\n`)
    expect(message).toContain('that program receives it and can print it or pass it on')
    expect(page).toContain(`<pre id="command">read -s -p &#39;Password: &#39; p; echo; echo &#34;$p&#34; | rev</pre>`)
    expect(page).toContain('this program receives it and can print it, save it or pass it on, and the model reads what it prints')
    expect(page + message).not.toMatch(/never sees/i)
    await call('bash_kill', { task_id: id })
  })

  it('declined in the client, or on the page: a coded error, nothing sent, the task still waits', async () => {
    const id = await startPasswordTask()
    answerWith = { action: 'decline' }
    const declined = await call('bash_input', { task_id: id, ask_user: 'Password' })
    expect(declined).toEqual({ text: `Error: the user declined to type a reply for task ${id}; nothing was sent`, isError: true })
    const coded = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })) as CallToolResult
    expect((coded._meta?.['dsh-bash'] as { code?: string } | undefined)?.code).toBe('DSH_INPUT_DECLINED')
    answerWith = { action: 'accept', page: { reply: '', action: 'decline' } }
    expect((await call('bash_input', { task_id: id, ask_user: 'Password' })).text).toBe(`Error: the user declined to type a reply for task ${id}; nothing was sent`)
    answerWith = { action: 'cancel' }
    expect((await call('bash_input', { task_id: id, ask_user: 'Password' })).text).toBe(`Error: the user's reply for task ${id} was cancelled; nothing was sent`)
    const still = await call('bash_output', { task_id: id })
    expect(still.text).toContain('[status: running]')
    await call('bash_kill', { task_id: id })
  })

  it('validation: text and ask_user together, neither, a blank ask_user, a task that is not interactive', async () => {
    expect((await call('bash_input', { task_id: 'bash-1', text: 'x', ask_user: 'Password' })).text).toBe('Error: invalid ask_user: give either text or ask_user, not both')
    expect((await call('bash_input', { task_id: 'bash-1' })).text).toBe('Error: invalid text: expected text or ask_user')
    expect((await call('bash_input', { task_id: 'bash-1', ask_user: '  ' })).text).toBe('Error: invalid ask_user: expected a non-empty string')
    const plain = await call('bash', { command: 'sleep 30', description: 'Wait', run_in_background: true })
    const id = /bash-\d+/.exec(plain.text)![0]
    const before = modelTexts.length
    expect((await call('bash_input', { task_id: id, ask_user: 'Password' })).text).toBe(`Error: task ${id} does not take input; start it with interactive: true`)
    // Nobody was asked for a reply that could not go anywhere.
    expect(modelTexts.slice(before).some((t) => t.includes('"mode":"url"'))).toBe(false)
    await call('bash_kill', { task_id: id })
  })
})

describe('MCP: a client without URL elicitation', () => {
  it('is never sent a form for a password: the question waits for dsh-bash reply instead', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-typed-')))
    const runtime = mkdtempSync(join(tmpdir(), 'dsh-e2e-run-'))
    const server = await startStdio(['--workdir', dir], { capabilities: { elicitation: { form: {} } }, env: { DSH_BASH_RUNTIME_DIR: runtime } })
    let asked = 0
    server.client.setRequestHandler(ElicitRequestSchema, () => {
      asked++
      return { action: 'decline' }
    })
    try {
      const started = (await server.client.callTool({
        name: 'bash',
        arguments: { command: "read -s -p 'Password: ' p", description: 'Ask', run_in_background: true, interactive: true },
      })) as CallToolResult
      const id = /bash-\d+/.exec((started.content[0] as { text: string }).text)![0]
      // As the model is told: wait for the prompt (until then the terminal still echoes, and that is refused first).
      await waitFor('the password prompt', async () => {
        const read = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, text: '' } })) as CallToolResult
        return (read.content[0] as { text: string }).text.includes('Password:')
      })
      const result = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })) as CallToolResult
      expect((result.content[0] as { text: string }).text.split('\n')[0]).toBe(
        `[waiting for the user's reply to task ${id}: this client cannot ask them, so they type it by running "dsh-bash reply" in a terminal on the server's machine; tell them so, then wait with bash_output. The request is withdrawn after 300s, when the task ends, or when you type text into it]`,
      )
      expect(result.isError).toBeFalsy()
      expect(asked).toBe(0)
      await server.client.callTool({ name: 'bash_kill', arguments: { task_id: id } })
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
      rmSync(runtime, { recursive: true, force: true })
    }
  })
})
