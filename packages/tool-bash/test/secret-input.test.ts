import type { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { SecretInputAnswer, SecretInputRequest } from '@deepseek-ai/dsh-tools'
import { TYPED_TEXT } from '../src/index.js'
import { type App, createApp } from './harness.js'

const PASSWORD = "read -s -p 'Password: ' p; echo; echo ${#p}"

/** bash_input {ask_user} over the real local executor, with a scripted person as the secretInput service. */
describe('bash_input {ask_user}', () => {
  let app: App
  const asked: SecretInputRequest[] = []
  let answer: (request: SecretInputRequest) => Promise<SecretInputAnswer> = async () => ({ outcome: 'typed', text: 'secret' })

  beforeEach(async () => {
    app = await createApp()
    asked.length = 0
    answer = async () => ({ outcome: 'typed', text: 'secret' })
  })
  afterEach(async () => {
    await app.dispose()
  })

  function provide(): void {
    app.root.plugin({
      name: 'test-person',
      apply: (ctx: Context) =>
        void ctx.set('secretInput', {
          ask: (request: SecretInputRequest) => {
            asked.push(request)
            return answer(request)
          },
        }),
    })
  }

  async function passwordTask(agent: ReturnType<App['agent']>): Promise<string> {
    const { text } = await app.text('bash', { command: PASSWORD, description: 'x', run_in_background: true, interactive: true }, agent)
    const id = text.split(' ').pop()!
    for (let i = 0; i < 200; i++) {
      if ((await app.text('bash_input', { task_id: id, text: '' }, agent)).text.includes('Password:')) break
    }
    return id
  }

  it('the typed reply reaches the task; the result says so and never holds it', async () => {
    provide()
    const a = app.agent('session-a')
    const id = await passwordTask(a)
    const result = await app.text('bash_input', { task_id: id, ask_user: 'Password for sudo', wait_ms: 10_000 }, a)
    expect(asked).toEqual([expect.objectContaining({ sessionId: 'session-a', taskId: id, prompt: 'Password for sudo' })])
    expect(result.isError).toBe(false)
    expect(result.text.startsWith(`${TYPED_TEXT}\n`)).toBe(true)
    expect(result.text).not.toContain('secret')
    await app.root.bash.get(id)!.done
    const all = result.text + (await app.text('bash_output', { task_id: id }, a)).text
    expect(all).toMatch(/^6$/m)
    expect(all).not.toContain('secret')
  })

  it('a program that prints the reply it read: the person was shown that command; every later read hides the reply', async () => {
    provide()
    const a = app.agent('session-a')
    // Echo off (a real password prompt), but the program prints the reply, after the first read's quiet window.
    const command = "read -s -p 'Password: ' p; sleep 1; echo \"you typed: $p\"; read -s -p 'Again: ' q; echo \"again: $q\""
    const { text } = await app.text('bash', { command, description: 'x', run_in_background: true, interactive: true }, a)
    const id = text.split(' ').pop()!
    let seen = ''
    for (let i = 0; i < 200 && !seen.includes('Password:'); i++) seen += (await app.text('bash_input', { task_id: id, text: '' }, a)).text
    const typed = await app.text('bash_input', { task_id: id, ask_user: 'Password', wait_ms: 200 }, a)
    // The person was told where the reply goes: the whole command line of the task.
    expect(asked[0]).toMatchObject({ taskId: id, command })
    let later = ''
    for (let i = 0; i < 400 && !later.includes('Again:'); i++) {
      later += (await app.text('bash_output', { task_id: id }, a)).text
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    answer = async () => ({ outcome: 'typed', text: 'other-secret' })
    const second = await app.text('bash_input', { task_id: id, ask_user: 'Again', wait_ms: 10_000 }, a)
    await app.root.bash.get(id)!.done
    const all = typed.text + later + second.text + (await app.text('bash_output', { task_id: id }, a)).text
    expect(all).toContain('you typed: [hidden]')
    expect(all).toContain('again: [hidden]')
    expect(all).not.toContain('secret')
  })

  /** Starts `command` interactively and reads until `prompt` shows; returns the task id. */
  async function waitingTask(agent: ReturnType<App['agent']>, command: string, prompt: string): Promise<string> {
    const { text } = await app.text('bash', { command, description: 'x', run_in_background: true, interactive: true }, agent)
    const id = text.split(' ').pop()!
    let seen = ''
    for (let i = 0; i < 200 && !seen.includes(prompt); i++) seen += (await app.text('bash_input', { task_id: id, text: '' }, agent)).text
    expect(seen).toContain(prompt)
    return id
  }

  it('refused unless the terminal has echo off in line mode: cat, read p (echo on), read -e (raw: readline echoes itself); nobody is asked, nothing is sent', async () => {
    provide()
    const a = app.agent('session-a')
    const echoing = [
      { command: "echo 'Paste:'; cat", prompt: 'Paste:' },
      { command: "read -p 'Token: ' t; echo \"got ${#t}\"", prompt: 'Token:' },
    ]
    for (const { command, prompt } of echoing) {
      const id = await waitingTask(a, command, prompt)
      const result = await app.call('bash_input', { task_id: id, ask_user: 'Password' }, a)
      expect(result.content[0].text).toBe(
        `Error: task ${id} is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
      )
      expect(result.meta?.code).toBe('DSH_INPUT_ECHO_ON')
      expect(app.root.bash.get(id)!.status).toBe('running')
      await app.text('bash_kill', { task_id: id }, a)
    }
    const raw = await waitingTask(a, "read -e -p 'Line: ' l", 'Line:')
    const result = await app.call('bash_input', { task_id: raw, ask_user: 'Password' }, a)
    expect(result.content[0].text).toBe(
      `Error: task ${raw} is not waiting for a secret: its program reads each key itself (the terminal is in raw mode) and may show it; ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    )
    expect(result.meta?.code).toBe('DSH_INPUT_ECHO_ON')
    await app.text('bash_kill', { task_id: raw }, a)
    expect(asked).toEqual([])
    // The control: the same session, a prompt with echo off is asked.
    const id = await waitingTask(a, PASSWORD, 'Password:')
    expect((await app.text('bash_input', { task_id: id, ask_user: 'Password', wait_ms: 10_000 }, a)).text.startsWith(TYPED_TEXT)).toBe(true)
    expect(asked).toHaveLength(1)
  })

  it('read again before the reply is written: a program that left its prompt while the person typed gets nothing', async () => {
    const a = app.agent('session-a')
    // The prompt gives up after 2 s and cat (echo on) takes the terminal; the person answers after that.
    const id = await waitingTask(a, "read -s -t 2 -p 'Password: ' p; echo; echo 'now cat'; cat", 'Password:')
    app.root.plugin({
      name: 'slow-person',
      apply: (ctx: Context) =>
        void ctx.set('secretInput', {
          ask: async (request: SecretInputRequest) => {
            asked.push(request)
            await vi.waitFor(async () => expect(await app.root.bash.terminalModes!(id)).toMatchObject({ echo: true }), { timeout: 20_000, interval: 50 })
            return { outcome: 'typed', text: 'late-secret' }
          },
        }),
    })
    const result = await app.call('bash_input', { task_id: id, ask_user: 'Password' }, a)
    expect(asked).toHaveLength(1)
    expect(result.content[0].text).toBe(
      `Error: task ${id} is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent`,
    )
    const rest = await app.text('bash_input', { task_id: id, text: '', wait_ms: 500 }, a)
    expect(rest.text).not.toContain('late-secret')
    await app.text('bash_kill', { task_id: id }, a)
  })

  it('an executor that cannot read its terminals\' modes is refused, never assumed off', async () => {
    provide()
    const a = app.agent('session-a')
    const id = await passwordTask(a)
    // The real executor, its optional member taken away (as an executor that cannot read modes has none).
    const executor = app.root.bash as unknown as Record<string, unknown>
    executor.terminalModes = undefined
    try {
      const result = await app.call('bash_input', { task_id: id, ask_user: 'Password' }, a)
      expect(result.content[0].text).toBe(
        `Error: cannot tell whether task ${id} would show what is typed: this executor cannot read its terminal's echo setting; ask_user needs a prompt with echo off; nothing was sent`,
      )
      expect(result.meta?.code).toBe('DSH_INPUT_ECHO_UNKNOWN')
    } finally {
      delete executor.terminalModes
    }
    expect(asked).toEqual([])
  })

  it('no service: unavailable, and the task still waits', async () => {
    const a = app.agent('session-a')
    const id = await passwordTask(a)
    expect(await app.text('bash_input', { task_id: id, ask_user: 'Password' }, a)).toEqual({
      text: `Error: no one can type a reply for task ${id}: this front end cannot ask the user for input; nothing was sent`,
      isError: true,
    })
    expect(app.root.bash.get(id)!.status).toBe('running')
  })

  it('a service that throws is unavailable, and its message (which could quote the reply) is not shown', async () => {
    provide()
    answer = async () => {
      throw new Error('could not deliver hunter2')
    }
    const a = app.agent('session-a')
    const id = await passwordTask(a)
    const result = await app.text('bash_input', { task_id: id, ask_user: 'Password' }, a)
    expect(result.text).toBe(`Error: no one can type a reply for task ${id}: this front end cannot ask the user for input; nothing was sent`)
  })

  it('the fence and the task checks come before anyone is asked', async () => {
    provide()
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    const id = await passwordTask(a)
    expect((await app.text('bash_input', { task_id: id, ask_user: 'Password' }, b)).text).toBe(`Error: task ${id} belongs to another session`)
    expect((await app.text('bash_input', { task_id: 'bash-99', ask_user: 'Password' }, a)).text).toBe('Error: unknown bash task "bash-99"')
    await app.text('bash_kill', { task_id: id }, a)
    expect((await app.text('bash_input', { task_id: id, ask_user: 'Password' }, a)).text).toBe(
      `Error: task ${id} has finished (status: killed by SIGTERM); it takes no more input`,
    )
    expect(asked).toEqual([])
  })

  it('an aborted call is cancelled: nothing is sent', async () => {
    provide()
    answer = (request) => new Promise((resolve) => request.signal?.addEventListener('abort', () => resolve({ outcome: 'cancelled' })))
    const a = app.agent('session-a')
    const id = await passwordTask(a)
    const controller = new AbortController()
    const pending = app.call('bash_input', { task_id: id, ask_user: 'Password' }, a, controller.signal)
    while (asked.length === 0) await new Promise((r) => setTimeout(r, 10))
    controller.abort()
    const result = await pending
    expect(result.content[0].text).toBe(`Error: the user's reply for task ${id} was cancelled; nothing was sent`)
    expect(result.meta?.code).toBe('DSH_INPUT_CANCELLED')
    expect(app.root.bash.get(id)!.status).toBe('running')
  })
})
