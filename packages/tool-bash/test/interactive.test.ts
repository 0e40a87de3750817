import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type App, createApp } from './harness.js'

describe('interactive tasks: bash {interactive} and bash_input', () => {
  let app: App
  beforeEach(async () => {
    app = await createApp()
  })
  afterEach(async () => {
    await app.dispose()
  })

  async function startInteractive(command: string, agent?: ReturnType<App['agent']>): Promise<string> {
    const { text, isError } = await app.text('bash', { command, description: 'x', run_in_background: true, interactive: true }, agent)
    expect(isError).toBe(false)
    return text.split(' ').pop()!
  }

  it('interactive without run_in_background is an error naming both', async () => {
    const { text, isError } = await app.text('bash', { command: 'python3', description: 'x', interactive: true })
    expect(isError).toBe(true)
    expect(text).toContain('interactive')
    expect(text).toContain('run_in_background')
    expect(app.root.bash.list()).toEqual([])
  })

  it('a prompt shows while it waits; the typed answer gets the reply and the final status', async () => {
    const a = app.agent('session-a')
    const id = await startInteractive(`read -p 'Name? ' n; echo "hi $n"`, a)
    expect(await app.text('bash_input', { task_id: id, text: '', wait_ms: 10_000 }, a)).toEqual({ text: 'Name? \n[status: running]', isError: false })
    expect(await app.text('bash_input', { task_id: id, text: 'Ada\n', wait_ms: 10_000 }, a)).toEqual({
      text: 'Ada\nhi Ada\n[status: completed, exit code: 0]',
      isError: false,
    })
    // Input to a finished task names its status.
    expect(await app.text('bash_input', { task_id: id, text: 'x' }, a)).toEqual({
      text: `Error: task ${id} has finished (status: completed, exit code: 0); it takes no more input`,
      isError: true,
    })
  })

  it('same fence and unknown-task errors as bash_output; a task started without interactive takes no input', async () => {
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    const id = await startInteractive('cat', a)
    expect(await app.text('bash_input', { task_id: id, text: 'x\n' }, b)).toEqual({ text: `Error: task ${id} belongs to another session`, isError: true })
    expect(await app.text('bash_input', { task_id: 'bash-99', text: 'x' }, a)).toEqual({ text: 'Error: unknown bash task "bash-99"', isError: true })
    const plain = (await app.text('bash', { command: 'sleep 100', description: 'x', run_in_background: true }, a)).text.split(' ').pop()!
    expect(await app.text('bash_input', { task_id: plain, text: 'y\n' }, a)).toEqual({
      text: `Error: task ${plain} does not take input; start it with interactive: true`,
      isError: true,
    })
    expect((await app.text('bash_kill', { task_id: id }, a)).text).toBe(`killed background task ${id}`)
    expect((await app.text('bash_kill', { task_id: plain }, a)).text).toBe(`killed background task ${plain}`)
  })

  it('validates wait_ms and the size of text with clear errors', async () => {
    const id = await startInteractive('cat')
    for (const wait of [-1, 30_001]) {
      const { text, isError } = await app.text('bash_input', { task_id: id, text: '', wait_ms: wait })
      expect(isError).toBe(true)
      expect(text).toBe(`Error: invalid wait_ms: expected a number of ms from 0 to 30000, got ${wait}`)
    }
    const big = await app.text('bash_input', { task_id: id, text: 'x'.repeat(70_000) })
    expect(big.text).toMatch(/^Error: invalid text: 70000 bytes is more than the 65536 bytes one call may type$/)
    await app.text('bash_kill', { task_id: id })
  })

  it('returns after a short quiet time, not the whole wait, and only the newest screen of a full-screen program', async () => {
    // Frames 1-3, then 5 s of quiet, then a frame 4 that a call waiting out its 30 s would show.
    const id = await startInteractive(`printf '\\033[?1049h'; for i in 1 2 3; do printf '\\033[H\\033[2Jframe %s' $i; sleep 0.1; done; sleep 5; printf '\\033[H\\033[2Jframe 4'; read -r x`)
    const { text } = await app.text('bash_input', { task_id: id, text: '', wait_ms: 30_000 })
    // It returned once quiet: the newest screen is frame 3, the earlier ones dropped, frame 4 not yet there.
    expect(text).toBe('[screen 120x40]\nframe 3\n[status: running]')
    await app.text('bash_kill', { task_id: id })
  })

  it('lines a program prints that begin "[screen " are lines: none is dropped, each is escaped (a screen is the terminal\'s word, not the text\'s)', async () => {
    // Three lines in three reads of one wait (0.1 s apart, reads every 50 ms); the program waits for a go first.
    const id = await startInteractive(`read -r -p 'go? ' g; for i in 1 2 3; do echo "[screen 120x40] fake $i"; sleep 0.1; done; read -r x`)
    let text = ''
    for (let i = 0; i < 200 && !text.includes('go? '); i++) text += (await app.text('bash_input', { task_id: id, text: '', wait_ms: 1_000 })).text
    text = (await app.text('bash_input', { task_id: id, text: '\n', wait_ms: 10_000 })).text
    // A loaded machine may split the lines over several calls; what one call read is never dropped.
    for (let i = 0; i < 200 && !text.includes('fake 3'); i++) text += (await app.text('bash_input', { task_id: id, text: '', wait_ms: 1_000 })).text
    const lines = text.split('\n').filter((line) => line.includes('fake'))
    expect(lines).toEqual(['\\[screen 120x40] fake 1', '\\[screen 120x40] fake 2', '\\[screen 120x40] fake 3'])
    await app.text('bash_kill', { task_id: id })
  })
})
