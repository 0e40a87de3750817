import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UntilMatcher } from '../src/index.js'
import { type App, createApp, until } from './harness.js'

/**
 * bash_output {wait_ms, until} and bash_input's wait (issue 28 items 1 and 4), through the real
 * pipeline and real bash. Whether a call returned on the quiet window, a match or the deadline is
 * told by what it holds (output printed later is not there), never by timing it closely.
 */
describe('bash_output waits: wait_ms and until', () => {
  let app: App
  beforeAll(async () => {
    app = await createApp()
  })
  afterAll(async () => {
    await app.dispose()
  })

  const background = async (command: string) => (await app.text('bash', { command, description: 'x', run_in_background: true })).text.split(' ').pop()!
  const output = (args: Record<string, unknown>, signal?: AbortSignal) =>
    app.root.tools.execute({ callId: 'c', name: 'bash_output', arguments: args, signal }).then((r) => ({ text: r.content.map((c) => c.text).join('\n'), isError: r.isError, code: r.meta?.code }))

  it('without wait_ms it returns at once, as before', async () => {
    const id = await background('sleep 1; echo late; sleep 60')
    expect(await output({ task_id: id })).toEqual({ text: '(no new output)\n[status: running]', isError: false, code: undefined })
    await app.text('bash_kill', { task_id: id })
  })

  it('with wait_ms it returns once new output went quiet: not at once, and not at the deadline', async () => {
    const id = await background('sleep 1; echo hi; sleep 4; echo later; sleep 60')
    const started = Date.now()
    // At once would be "(no new output)"; at the deadline it would hold "later" too.
    expect(await output({ task_id: id, wait_ms: 30_000 })).toEqual({ text: 'hi\n[status: running]', isError: false, code: undefined })
    expect(Date.now() - started).toBeLessThan(4_000)
    await app.text('bash_kill', { task_id: id })
  })

  it('with until it returns when a line matches, with everything before it, not on the quiet window', async () => {
    const id = await background('for i in 1 2 3; do echo $i; sleep 0.5; done; echo READY; sleep 3; echo after; sleep 60')
    expect(await output({ task_id: id, wait_ms: 30_000, until: '^READY$' })).toEqual({ text: '1\n2\n3\nREADY\n[status: running]', isError: false, code: undefined })
    await app.text('bash_kill', { task_id: id })
  })

  it('until sees stderr lines, output already waiting, and an unfinished last line (a prompt)', async () => {
    const a = await background('echo "error: disk full" >&2; sleep 60')
    await until(() => app.root.bash.get(a) !== undefined)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect((await output({ task_id: a, wait_ms: 30_000, until: 'disk full' })).text).toBe('[stderr]\nerror: disk full\n[status: running]')
    const b = await background('sleep 0.5; printf "Continue? [y/N] "; sleep 60')
    expect((await output({ task_id: b, wait_ms: 30_000, until: '\\[y/N\\] $' })).text).toBe('Continue? [y/N] \n[status: running]')
    await app.text('bash_kill', { task_id: a })
    await app.text('bash_kill', { task_id: b })
  })

  it('a task that ends returns at once with its last output; a finished task returns at once', async () => {
    const id = await background('sleep 0.5; echo done')
    const started = Date.now()
    expect(await output({ task_id: id, wait_ms: 30_000, until: 'never matches' })).toEqual({ text: 'done\n[status: completed, exit code: 0]', isError: false, code: undefined })
    expect(await output({ task_id: id, wait_ms: 30_000 })).toEqual({ text: '(no new output)\n[status: completed, exit code: 0]', isError: false, code: undefined })
    expect(Date.now() - started).toBeLessThan(15_000)
  })

  it('the deadline: no matching line within wait_ms returns what there is', async () => {
    const id = await background('echo one; sleep 60')
    expect(await output({ task_id: id, wait_ms: 800, until: '^two$' })).toEqual({ text: 'one\n[status: running]', isError: false, code: undefined })
    await app.text('bash_kill', { task_id: id })
  })

  it('bad arguments get clear errors naming what is wrong', async () => {
    const id = await background('sleep 60')
    const cases: [Record<string, unknown>, string][] = [
      [{ wait_ms: 30_001 }, 'Error: invalid wait_ms: expected a number of ms from 0 to 30000, got 30001'],
      [{ wait_ms: -1 }, 'Error: invalid wait_ms: expected a number of ms from 0 to 30000, got -1'],
      [{ wait_ms: 1000, until: '(' }, 'Error: invalid until: not an ECMAScript regular expression (Invalid regular expression: /(/: Unterminated group)'],
      [{ wait_ms: 1000, until: '' }, 'Error: invalid until: expected a non-empty regular expression'],
      [{ wait_ms: 1000, until: 'x'.repeat(1001) }, 'Error: invalid until: 1001 characters is more than the 1000 an expression may have'],
      [{ until: 'READY' }, 'Error: invalid until: it needs wait_ms, how long to wait for a matching line (up to 30000)'],
    ]
    for (const [extra, text] of cases) expect(await output({ task_id: id, ...extra })).toEqual({ text, isError: true, code: 'DSH_INVALID_ARGUMENTS' })
    await app.text('bash_kill', { task_id: id })
  })

  it('a cancel ends the wait at once, and what the wait had read comes with the next read', async () => {
    const id = await background('echo before-cancel; sleep 60')
    await until(() => app.root.bash.get(id) !== undefined)
    const controller = new AbortController()
    const started = Date.now()
    const waiting = output({ task_id: id, wait_ms: 30_000, until: '^never$' }, controller.signal)
    await new Promise((resolve) => setTimeout(resolve, 700))
    controller.abort()
    expect(await waiting).toEqual({ text: `Error: the wait for task ${id} was cancelled; what it read comes with the next bash_output of that task`, isError: true, code: 'DSH_WAIT_CANCELLED' })
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(await output({ task_id: id })).toEqual({ text: 'before-cancel\n[status: running]', isError: false, code: undefined })
    await app.text('bash_kill', { task_id: id })
  })

  it('the fence holds for waits: another session waits for nothing', async () => {
    const a = app.agent('wait-a')
    const b = app.agent('wait-b')
    const id = (await app.text('bash', { command: 'sleep 60', description: 'x', run_in_background: true }, a)).text.split(' ').pop()!
    expect(await app.text('bash_output', { task_id: id, wait_ms: 5000, until: 'x' }, b)).toEqual({ text: `Error: task ${id} belongs to another session`, isError: true })
    await app.text('bash_kill', { task_id: id }, a)
  })
})

describe('until runs off the event loop, within a time limit (ReDoS)', () => {
  let app: App
  beforeAll(async () => {
    app = await createApp()
  })
  afterAll(async () => {
    await app.dispose()
  })

  it('a catastrophic expression ends the call with an error after the limit; the loop keeps serving; the output is kept', async () => {
    const id = (await app.text('bash', { command: `printf '%s\\n' ${'a'.repeat(40)}b; sleep 60`, description: 'x', run_in_background: true })).text.split(' ').pop()!
    await until(() => app.root.bash.get(id) !== undefined)
    await new Promise((resolve) => setTimeout(resolve, 300))
    // The loop's pulse while the worker backtracks: a 10 ms interval must keep firing.
    let beats = 0
    const pulse = setInterval(() => beats++, 10)
    const other = app.text('bash', { command: 'echo served', description: 'x' })
    const result = await app.text('bash_output', { task_id: id, wait_ms: 30_000, until: '^(a+)+$' })
    clearInterval(pulse)
    expect(result).toEqual({ text: "Error: invalid until: matching it took longer than 1000 ms on the task's output; use a simpler expression", isError: true })
    expect(await other).toEqual({ text: 'served\n', isError: false })
    expect(beats).toBeGreaterThan(20)
    // The line the failed wait read is not lost; a sane expression works again (a fresh worker).
    expect(await app.text('bash_output', { task_id: id, wait_ms: 2000, until: 'b$' })).toEqual({ text: `${'a'.repeat(40)}b\n[status: running]`, isError: false })
    await app.text('bash_kill', { task_id: id })
  })

  it('control: the same expression really is catastrophic (it does not finish within the limit), a simple one answers', async () => {
    const matcher = new UntilMatcher(300)
    try {
      await expect(matcher.firstMatch('^(a+)+$', [`${'a'.repeat(40)}b`])).rejects.toThrow(/took longer than 300 ms/)
      expect(await matcher.firstMatch('^a+b$', ['x', `${'a'.repeat(40)}b`])).toBe(1)
      expect(await matcher.firstMatch('^z', ['x', 'y'])).toBe(-1)
    } finally {
      matcher.dispose()
    }
  })
})

describe('bash_input waits for the answer, not for the echo (issue 28 item 4)', () => {
  let app: App
  beforeAll(async () => {
    app = await createApp()
  })
  afterAll(async () => {
    await app.dispose()
  })

  const start = async (command: string) =>
    (await app.text('bash', { command, description: 'x', run_in_background: true, interactive: true })).text.split(' ').pop()!

  it('text typed before the program reads it: the echo alone does not end the wait, the answer does', async () => {
    // The program prints its answer 1.5 s after the typing; the echo comes at once.
    const id = await start(`sleep 1.5; read -r line; echo "got:$line"; sleep 60`)
    const { text } = await app.text('bash_input', { task_id: id, text: 'hello\n', wait_ms: 20_000 })
    expect(text).toBe('hello\ngot:hello\n[status: running]')
    await app.text('bash_kill', { task_id: id })
  })

  it('empty text waits for the first output', async () => {
    const id = await start(`sleep 1.5; echo first; sleep 60`)
    expect((await app.text('bash_input', { task_id: id, text: '', wait_ms: 20_000 })).text).toBe('first\n[status: running]')
    await app.text('bash_kill', { task_id: id })
  })

  it('until works for bash_input too; what was printed before the typing is returned first', async () => {
    const id = await start(`echo ready; read -r x; for i in 1 2 3; do echo step $i; sleep 0.5; done; echo DONE; sleep 60`)
    await until(async () => (await app.root.bash.get(id)) !== undefined)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const { text } = await app.text('bash_input', { task_id: id, text: 'go\n', wait_ms: 20_000, until: '^DONE$' })
    expect(text).toBe('ready\ngo\nstep 1\nstep 2\nstep 3\nDONE\n[status: running]')
    await app.text('bash_kill', { task_id: id })
  })
})
