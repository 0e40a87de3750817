import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, describe, expect, it } from 'vitest'
import { Agents, type ModelRequest, ScriptedAdapter } from '@deepseek-ai/dsh-agent'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ToolRegistry } from '@deepseek-ai/dsh-tools'
import { ToolBash } from '../src/index.js'
import { settle, until } from './harness.js'

describe('the real agent loop with a scripted model', () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup()
  })

  it('runs a foreground command, then a background one, gets the notice in its next request, reads the output', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'tool-bash-loop-'))
    const root = new Context()
    root.plugin(ToolRegistry)
    root.plugin(Agents)
    root.plugin(LocalExecutor, { graceMs: 500 })
    root.plugin(ToolBash)
    await settle()
    cleanups.push(async () => {
      await root.bash.shutdown()
      rmSync(workspace, { recursive: true, force: true })
    })

    const toolMessages = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool').map((m) => m.content)
    const adapter = new ScriptedAdapter([
      { text: '', toolCalls: [{ id: 't1', name: 'bash', arguments: JSON.stringify({ command: 'pwd; echo hello > f.txt', description: 'write a file' }) }] },
      {
        text: '',
        toolCalls: [
          { id: 't2', name: 'bash', arguments: JSON.stringify({ command: 'cat f.txt; echo done', description: 'read it later', run_in_background: true }) },
        ],
      },
      { text: 'started it' },
      { text: '', toolCalls: [{ id: 't3', name: 'bash_output', arguments: JSON.stringify({ task_id: 'bash-1' }) }] },
      { text: 'read it' },
    ])
    const agent = root.agents.create({ session: { id: 'session-1', cwd: workspace }, adapter })
    expect(await agent.run('write then read in the background')).toBe('started it')
    expect(toolMessages(adapter.requests[1])).toEqual([`${workspace}\n`])
    expect(toolMessages(adapter.requests[2]).at(-1)).toBe('started background task bash-1')

    // The task ends while the agent is idle: the notice is queued, no turn starts.
    await root.bash.get('bash-1')!.done
    await until(() => agent.pendingInjections === 1)
    const turns = agent.turns
    await settle()
    expect(agent.turns).toBe(turns)
    expect(agent.busy).toBe(false)

    expect(adapter.requests.length).toBe(3)
    expect(await agent.run('what happened?')).toBe('read it')
    const notice = 'background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.'
    const firstRequest = JSON.stringify(adapter.requests[3].messages)
    expect(firstRequest).toContain(JSON.stringify(notice).slice(1, -1))
    expect(toolMessages(adapter.requests[4]).at(-1)).toBe('hello\ndone\n[status: completed, exit code: 0]')
    // Admitted exactly once: it is in the history once, even across later requests.
    const occurrences = adapter.requests[4].messages.filter((m) => m.content.includes(notice)).length
    expect(occurrences).toBe(1)
  })
})
