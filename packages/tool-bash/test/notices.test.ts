import { recordLogs } from '@deepseek-ai/dsh-bash'
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { NOTICE_SOURCE } from '../src/index.js'
import { type App, createApp, settle, until } from './harness.js'

describe('completion notices', () => {
  let app: App
  beforeEach(async () => {
    app = await createApp()
  })
  afterEach(async () => {
    await app.dispose()
  })

  const start = async (agent: ReturnType<App['agent']> | undefined, command: string) =>
    (await app.text('bash', { command, description: 'x', run_in_background: true }, agent)).text.split(' ').pop()!

  it('exactly one notice per task, to its owner only, with the exact text and source', async () => {
    const a = app.agent('session-a')
    const b = app.agent('session-b')
    // One after the other: notices come in the order the tasks end, and two tasks started together
    // may end in either order (CI 2026-12-03: `exit 2` was seen to end before `exit 0`).
    const ok = await start(a, 'exit 0')
    await app.root.bash.get(ok)!.done
    const failed = await start(a, 'exit 2')
    await app.root.bash.get(failed)!.done
    const killed = await start(a, 'sleep 100')
    await app.text('bash_kill', { task_id: killed }, a)
    await settle()
    expect(b.injected).toEqual([])
    const texts = a.injected.map((entry) => entry.content)
    expect(texts).toEqual([
      [{ type: 'text', text: `background bash task ${ok} finished [status: completed, exit code: 0]. Read its output with bash_output.` }],
      [{ type: 'text', text: `background bash task ${failed} finished [status: completed, exit code: 2]. Read its output with bash_output.` }],
      [{ type: 'text', text: `background bash task ${killed} finished [status: killed by SIGTERM]. Read its output with bash_output.` }],
    ])
    for (const entry of a.injected) expect(entry.source).toEqual({ kind: 'plugin', plugin: 'tool-bash' })
    expect(NOTICE_SOURCE).toEqual({ kind: 'plugin', plugin: 'tool-bash' })
  })

  it('no notice without an owner, or when the owner is gone; a disposed agent is not an error', async () => {
    const a = app.agent('session-a')
    const unowned = await start(undefined, 'true')
    await app.root.bash.get(unowned)!.done
    a.disposed = true
    const orphan = await start(a, 'true')
    await app.root.bash.get(orphan)!.done
    await settle()
    expect(app.injections).toEqual([])
  })

  it('an agent disposed between lookup and inject: the "disposed" error is swallowed', async () => {
    const a = app.agent('session-a')
    // Still listed, but its inject throws the disposed error.
    a.inject = () => {
      throw Object.assign(new Error(`agent "${a.id}" is disposed`), { code: 'DSH_AGENT_DISPOSED' })
    }
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const id = await start(a, 'true')
    await app.root.bash.get(id)!.done
    await settle()
    expect(app.injections).toEqual([])
    expect(logs.lines).toEqual([])
  })

  it('any other inject failure is logged, classified by its code and never by its text', async () => {
    const a = app.agent('session-a')
    a.inject = () => {
      throw new Error('the disposed-items queue is full')
    }
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const id = await start(a, 'true')
    await app.root.bash.get(id)!.done
    await until(() => logs.lines.length > 0)
    expect(logs.lines[0]).toEqual({ name: 'dsh-tool-bash', type: 'error', content: `could not deliver the notice of ${id}: the disposed-items queue is full` })
  })

  it('twenty tasks ending at once give twenty notices, none twice', async () => {
    const a = app.agent('session-a')
    const gate = `${app.workspace}/release`
    const ids: string[] = []
    for (let i = 0; i < 20; i++) ids.push(await start(a, `while [ ! -e ${gate} ]; do sleep 0.02; done; echo ${i}`))
    const { writeFileSync } = await import('node:fs')
    writeFileSync(gate, '')
    await Promise.all(ids.map((id) => app.root.bash.get(id)!.done))
    await until(() => a.injected.length >= 20)
    await settle()
    const noticed = a.injected.map((entry) => /task (bash-\d+) finished/.exec(entry.content[0].text)![1])
    expect(noticed.sort()).toEqual([...ids].sort())
  })

  it('a notice goes to one agent when several share the session', async () => {
    const a1 = app.agent('session-a')
    const a2 = app.agent('session-a')
    const id = await start(a1, 'true')
    await app.root.bash.get(id)!.done
    await settle()
    expect(a1.injected.length + a2.injected.length).toBe(1)
  })
})
