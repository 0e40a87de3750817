import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ToolBash } from '../src/index.js'
import { type App, createApp, settle } from './harness.js'

describe('ownership fence', () => {
  let app: App
  beforeEach(async () => {
    app = await createApp()
  })
  afterEach(async () => {
    await app.dispose()
  })

  async function startAs(agent: ReturnType<App['agent']> | undefined, command = 'sleep 100'): Promise<string> {
    const { text, isError } = await app.text('bash', { command, description: 'x', run_in_background: true }, agent)
    expect(isError).toBe(false)
    return text.split(' ').pop()!
  }

  it("refuses A's task to B for reading and killing, while running and after it ended", async () => {
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    const id = await startAs(a)
    expect(app.root.bash.ownerOf(id)).toBe('session-a')
    const refused = { text: `Error: task ${id} belongs to another session`, isError: true }
    expect(await app.text('bash_output', { task_id: id }, b)).toEqual(refused)
    expect(await app.text('bash_kill', { task_id: id }, b)).toEqual(refused)
    expect(app.root.bash.get(id)!.status).toBe('running')
    expect(await app.text('bash_kill', { task_id: id }, a)).toEqual({ text: `killed background task ${id}`, isError: false })
    expect(await app.text('bash_output', { task_id: id }, b)).toEqual(refused)
    expect(await app.text('bash_kill', { task_id: id }, b)).toEqual(refused)
  })

  it('a second agent object with the same session id is the same owner', async () => {
    const a1 = app.agent('session-a')
    const a2 = app.agent('session-a')
    const id = await startAs(a1, 'echo shared')
    await app.root.bash.get(id)!.done
    expect(await app.text('bash_output', { task_id: id }, a2)).toEqual({
      text: 'shared\n[status: completed, exit code: 0]',
      isError: false,
    })
  })

  it('unowned tasks are open to everyone; an agent-less caller cannot touch an owned task', async () => {
    const a = app.agent('session-a')
    const open = await startAs(undefined, 'echo open')
    await app.root.bash.get(open)!.done
    expect(app.root.bash.ownerOf(open)).toBeUndefined()
    expect((await app.text('bash_output', { task_id: open }, a)).text).toBe('open\n[status: completed, exit code: 0]')
    const owned = await startAs(a)
    expect(await app.text('bash_output', { task_id: owned })).toEqual({ text: `Error: task ${owned} belongs to another session`, isError: true })
    expect(await app.text('bash_kill', { task_id: owned })).toEqual({ text: `Error: task ${owned} belongs to another session`, isError: true })
  })

  it('ownership survives a reload of tool-bash (it lives on the task in the executor)', async () => {
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    const id = await startAs(a)
    app.toolBash.dispose()
    await settle()
    expect(app.root.tools.get('bash')).toBeUndefined()
    const again = app.root.plugin(ToolBash)
    await settle()
    expect(app.root.tools.names()).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
    expect(await app.text('bash_kill', { task_id: id }, b)).toEqual({ text: `Error: task ${id} belongs to another session`, isError: true })
    expect(await app.text('bash_kill', { task_id: id }, a)).toEqual({ text: `killed background task ${id}`, isError: false })
    again.dispose()
  })

  it('workdir defaults to the agent workspace and resolves relative paths against it', async () => {
    const a = app.agent('session-a', app.workspace)
    expect((await app.text('bash', { command: 'pwd', description: 'x' }, a)).text).toBe(`${app.workspace}\n`)
    await app.text('bash', { command: 'mkdir sub', description: 'x' }, a)
    expect((await app.text('bash', { command: 'pwd', description: 'x', workdir: 'sub' }, a)).text).toBe(`${app.workspace}/sub\n`)
    expect((await app.text('bash', { command: 'pwd', description: 'x', workdir: '/' }, a)).text).toBe('/\n')
  })
})
