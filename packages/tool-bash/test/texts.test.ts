import { readFileSync, writeFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type App, createApp, until } from './harness.js'

/** Every text of the contract (spec §4 and §7), byte for byte, through the real pipeline. */
describe('bash tool texts over the local executor', () => {
  let app: App
  beforeAll(async () => {
    app = await createApp()
  })
  afterAll(async () => {
    await app.dispose()
  })

  const bash = (command: string, extra: Record<string, unknown> = {}) =>
    app.text('bash', { command, description: 'run a test command', ...extra })

  it.each([
    ['echo hello', 'hello\n'],
    ['true', '(no output)'],
    ['echo out; echo err >&2', 'out\n[stderr]\nerr\n'],
    ['printf out; printf err >&2', 'out\n[stderr]\nerr'],
    ['echo err >&2', '[stderr]\nerr\n'],
    ['echo failing; exit 3', 'failing\n[exit code: 3]'],
    ['printf failing; exit 3', 'failing\n[exit code: 3]'],
    ['exit 1', '(no output)\n[exit code: 1]'],
    ['kill -9 $$', '(no output)\n[killed by signal: SIGKILL]'],
    ['kill -TERM $$', '(no output)\n[killed by signal: SIGTERM]'],
    ['sleep 100 & echo started', 'started\n[stopped 1 leftover process(es); use run_in_background for servers and watchers]'],
  ])('%s', async (command, expected) => {
    expect(await bash(command)).toEqual({ text: expected, isError: false })
  })

  it('a timeout of sleep', async () => {
    expect(await bash('sleep 60', { timeoutMs: 300 })).toEqual({
      text: '(no output)\n[timed out after 300ms]\n[killed by signal: SIGTERM]',
      isError: false,
    })
  })

  it('a timeout of a command that traps TERM and exits 0 still shows the timeout', async () => {
    const result = await bash("trap 'echo bye; exit 0' TERM; echo hi; while :; do sleep 0.05; done", { timeoutMs: 400 })
    expect(result.isError).toBe(false)
    // bash may add "Terminated" on stderr for its sleep child, which got the TERM too.
    expect(result.text).toMatch(/^hi\nbye\n(\[stderr\]\nTerminated\n)?\[timed out after 400ms\]$/)
  })

  it('a TERM-ignoring command is killed by SIGKILL after the grace period', async () => {
    const result = await bash("trap '' TERM; echo x; while :; do sleep 0.05; done", { timeoutMs: 300 })
    expect(result).toEqual({ text: 'x\n[timed out after 300ms]\n[killed by signal: SIGKILL]', isError: false })
  })

  it('truncated output names a real spill file that holds the whole stream', async () => {
    const { text, isError } = await bash('seq 1 200000')
    expect(isError).toBe(false)
    const match = /\n\n\[output truncated; full output: (\/.*\/dsh-bash-[^/]*-stdout\.log)\]$/.exec(text)
    expect(match).not.toBeNull()
    const tail = text.slice(0, match!.index + 1)
    expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(64_000)
    expect(tail.endsWith('199999\n200000\n')).toBe(true)
    const full = readFileSync(match![1], 'utf8')
    expect(full).toBe(Array.from({ length: 200000 }, (_, i) => `${i + 1}\n`).join(''))
    expect(full.endsWith(tail)).toBe(true)
  })

  it('truncated stderr gets its own truncation line after the stderr section', async () => {
    const { text } = await bash('echo out; seq 1 100000 >&2')
    expect(text.startsWith('out\n[stderr]\n')).toBe(true)
    expect(text).toMatch(/\n\n\[output truncated; full output: \/.*-stderr\.log\]$/)
  })

  it.each([
    [{ command: '   ', description: 'x' }, 'Error: invalid command: expected a non-empty string'],
    [{ command: '', description: 'x' }, 'Error: invalid command: expected a non-empty string'],
    [{ command: 'echo', description: ' \n ' }, 'Error: invalid description: expected a non-empty string'],
    [{ command: 'echo', description: 'x', timeoutMs: -5 }, 'Error: invalid timeoutMs: expected a positive number, got -5'],
    [{ command: 'echo', description: 'x', timeoutMs: 0 }, 'Error: invalid timeoutMs: expected a positive number, got 0'],
    [{ description: 'x' }, 'Error: invalid arguments: missing required property "command"'],
    [{ command: 'echo' }, 'Error: invalid arguments: missing required property "description"'],
    [{ command: 42, description: 'x' }, 'Error: invalid arguments: "command" must be a string'],
    [{ command: 'echo', description: 'x', timeoutMs: '5' }, 'Error: invalid arguments: "timeoutMs" must be a number'],
    [{ command: 'echo', description: 'x', run_in_background: 'yes' }, 'Error: invalid arguments: "run_in_background" must be a boolean'],
    [{ command: 'echo', description: 'x', workdir: 7 }, 'Error: invalid arguments: "workdir" must be a string'],
    [{ command: 'echo', description: 'x', timeoutMs: Number.NaN }, 'Error: invalid arguments: "timeoutMs" is not a finite number (NaN)'],
  ])('rejects %j', async (args, expected) => {
    expect(await app.text('bash', args)).toEqual({ text: expected, isError: true })
  })

  it('several schema violations are joined by "; "', async () => {
    const { text, isError } = await app.text('bash', { command: 1, description: 2 })
    expect(isError).toBe(true)
    expect(text).toBe('Error: invalid arguments: "command" must be a string; "description" must be a string')
  })

  it('env and stdin keys from a model have no effect', async () => {
    const result = await app.text('bash', {
      command: 'echo "[${INJECTED-unset}]"; cat',
      description: 'x',
      env: { INJECTED: 'yes' },
      stdin: 'secret input',
    })
    expect(result).toEqual({ text: '[unset]\n', isError: false })
  })

  it('a missing workdir is an infrastructure error', async () => {
    const result = await app.text('bash', { command: 'pwd', description: 'x', workdir: '/definitely/not/here' })
    expect(result).toEqual({ text: 'Error: workdir does not exist: /definitely/not/here', isError: true })
  })

  it('background: start, read, finish, kill twice', async () => {
    const gate = `${app.workspace}/go`
    const started = await app.text('bash', {
      command: `echo first; while [ ! -e ${gate} ]; do sleep 0.02; done; echo second`,
      description: 'x',
      run_in_background: true,
    })
    expect(started.isError).toBe(false)
    const id = /^started background task (bash-\d+)$/.exec(started.text)![1]
    let read = await app.text('bash_output', { task_id: id })
    await until(async () => {
      if (read.text !== '(no new output)\n[status: running]') return true
      read = await app.text('bash_output', { task_id: id })
      return false
    })
    expect(read).toEqual({ text: 'first\n[status: running]', isError: false })
    writeFileSync(gate, '')
    await app.root.bash.get(id)!.done
    expect(await app.text('bash_output', { task_id: id })).toEqual({
      text: 'second\n[status: completed, exit code: 0]',
      isError: false,
    })
    expect(await app.text('bash_output', { task_id: id })).toEqual({
      text: '(no new output)\n[status: completed, exit code: 0]',
      isError: false,
    })
    expect(await app.text('bash_kill', { task_id: id })).toEqual({ text: `task ${id} had already finished`, isError: false })

    const other = (await app.text('bash', { command: 'sleep 100', description: 'x', run_in_background: true })).text.split(' ').pop()!
    expect(await app.text('bash_kill', { task_id: other })).toEqual({ text: `killed background task ${other}`, isError: false })
    expect(await app.text('bash_kill', { task_id: other })).toEqual({ text: `task ${other} had already finished`, isError: false })
    expect(await app.text('bash_output', { task_id: other })).toEqual({
      text: '(no new output)\n[status: killed by SIGTERM]',
      isError: false,
    })
  })

  it('a task that exits non-zero and one killed by its own signal', async () => {
    const a = (await app.text('bash', { command: 'echo e >&2; exit 4', description: 'x', run_in_background: true })).text.split(' ').pop()!
    const b = (await app.text('bash', { command: 'kill -KILL $$', description: 'x', run_in_background: true })).text.split(' ').pop()!
    await app.root.bash.get(a)!.done
    await app.root.bash.get(b)!.done
    expect((await app.text('bash_output', { task_id: a })).text).toBe('[stderr]\ne\n[status: completed, exit code: 4]')
    expect((await app.text('bash_output', { task_id: b })).text).toBe('(no new output)\n[status: killed by SIGKILL]')
  })

  it('unknown ids are errors for both task tools', async () => {
    expect(await app.text('bash_output', { task_id: 'bash-99' })).toEqual({ text: 'Error: unknown bash task "bash-99"', isError: true })
    expect(await app.text('bash_kill', { task_id: 'bash-99' })).toEqual({ text: 'Error: unknown bash task "bash-99"', isError: true })
    expect(await app.text('bash_kill', { task_id: '' })).toEqual({ text: 'Error: invalid task_id: expected a non-empty string', isError: true })
    expect(await app.text('bash_kill', {})).toEqual({ text: 'Error: invalid arguments: missing required property "task_id"', isError: true })
  })

  it('an abort is a tool failure that keeps the output', async () => {
    const controller = new AbortController()
    const pending = app.call('bash', { command: 'echo before; sleep 30', description: 'x' }, undefined, controller.signal)
    setTimeout(() => controller.abort(), 300)
    const result = await pending
    expect(result.isError).toBe(true)
    expect(result.content[0].text).toBe('Error: the command was aborted\nbefore\n[killed by signal: SIGTERM]')
  })
})

describe('live progress', () => {
  it('reports the newest complete output line while a foreground command runs, and never changes the result', async () => {
    const app = await createApp()
    try {
      const updates: string[] = []
      const result = await app.root.tools.execute({
        callId: 'p',
        name: 'bash',
        arguments: { command: 'echo one; echo two; sleep 0.3; printf "thr"; sleep 0.2; echo ee; echo four >&2', description: 'x' },
        onProgress: (update) => updates.push(update.message),
      })
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'one\ntwo\nthree\n[stderr]\nfour\n' }], isError: false })
      expect(result.content).toHaveLength(1)
      expect(updates[0]).toMatch(/^(one|two)$/)
      expect(updates).toContain('three')
      expect(updates.at(-1)).toBe('four')
      // A line is reported only when it changes, and never half a line.
      for (let i = 1; i < updates.length; i++) expect(updates[i]).not.toBe(updates[i - 1])
      expect(updates).not.toContain('thr')
    } finally {
      await app.dispose()
    }
  })

  it('a throwing progress sink harms nothing', async () => {
    const app = await createApp()
    try {
      const result = await app.root.tools.execute({
        callId: 'p',
        name: 'bash',
        arguments: { command: 'echo a', description: 'x' },
        onProgress: () => {
          throw new Error('ui down')
        },
      })
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'a\n' }], isError: false, structured: { status: 'completed' } })
    } finally {
      await app.dispose()
    }
  })
})
