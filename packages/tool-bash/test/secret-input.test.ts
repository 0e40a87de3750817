import type { Context } from 'cordis'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
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

  it('a program that leaves the echo on: the reply is hidden in the read after it and in every later read', async () => {
    provide()
    const a = app.agent('session-a')
    // Echo on (no -s), and the program prints the reply again later, after the first read's quiet window.
    const { text } = await app.text(
      'bash',
      { command: "read -p 'Password: ' p; sleep 1; echo \"you typed: $p\"; read -p 'Again: ' q; echo \"again: $q\"", description: 'x', run_in_background: true, interactive: true },
      a,
    )
    const id = text.split(' ').pop()!
    let seen = ''
    for (let i = 0; i < 200 && !seen.includes('Password:'); i++) seen += (await app.text('bash_input', { task_id: id, text: '' }, a)).text
    const typed = await app.text('bash_input', { task_id: id, ask_user: 'Password', wait_ms: 200 }, a)
    let later = ''
    for (let i = 0; i < 200 && !later.includes('Again:'); i++) later += (await app.text('bash_output', { task_id: id }, a)).text
    // The model's own text input gets the mask too (the program prints the earlier reply again).
    answer = async () => ({ outcome: 'typed', text: 'other-secret' })
    const second = await app.text('bash_input', { task_id: id, ask_user: 'Again', wait_ms: 10_000 }, a)
    await app.root.bash.get(id)!.done
    const all = typed.text + later + second.text + (await app.text('bash_output', { task_id: id }, a)).text
    expect(all).toContain('you typed: [hidden]')
    expect(all).toContain('again: [hidden]')
    expect(all).not.toContain('secret')
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
