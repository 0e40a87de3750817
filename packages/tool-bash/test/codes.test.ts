import { afterEach, describe, expect, it } from 'vitest'
import { createApp, type App } from './harness.js'

/** Every error result carries a stable code in `meta.code`; the text stays the contract's. */
describe('error codes of the bash tools', () => {
  let app: App | undefined
  afterEach(async () => {
    await app?.dispose()
    app = undefined
  })

  // Over MCP this is structuredContent: the refusal as data, its code included.
  const errorFacts = (code: string) => ({ status: 'error', exitCode: null, signal: null, taskId: null, truncated: false, fullOutput: null, fullOutputs: { stdout: null, stderr: null }, code })

  it('unknown task, foreign task, invalid arguments', async () => {
    app = await createApp()
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    expect(await app.call('bash_output', { task_id: 'bash-99' }, a)).toEqual({
      content: [{ type: 'text', text: 'Error: unknown bash task "bash-99"' }],
      isError: true,
      meta: { code: 'DSH_UNKNOWN_TASK' },
      structured: errorFacts('DSH_UNKNOWN_TASK'),
    })
    const started = await app.call('bash', { command: 'sleep 5', description: 'wait a while', run_in_background: true }, a)
    const id = /started background task (\S+)/.exec(started.content[0].text)![1]
    expect(await app.call('bash_kill', { task_id: id }, b)).toEqual({
      content: [{ type: 'text', text: `Error: task ${id} belongs to another session` }],
      isError: true,
      meta: { code: 'DSH_FOREIGN_TASK' },
      structured: errorFacts('DSH_FOREIGN_TASK'),
    })
    expect(await app.call('bash', { command: '   ', description: 'nothing' }, a)).toEqual({
      content: [{ type: 'text', text: 'Error: invalid command: expected a non-empty string' }],
      isError: true,
      meta: { code: 'DSH_INVALID_ARGUMENTS' },
      structured: errorFacts('DSH_INVALID_ARGUMENTS'),
    })
    await app.call('bash_kill', { task_id: id }, a)
  })
})
