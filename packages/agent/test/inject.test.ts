import { recordLogs } from '@deepseek-ai/dsh-bash'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { type InjectedContext, ScriptedAdapter } from '../src/index.js'
import { agentOptions, createContext } from './helpers.js'

const source = { kind: 'plugin', plugin: 'tool-bash' } as const
const notice = 'background bash task 3 finished [status: completed, exit code: 0]. Read its output with bash_output.'

afterEach(() => {
  vi.restoreAllMocks()
})

function count(haystack: { content: string }[], text: string): number {
  return haystack.filter((message) => message.content === text).length
}

describe('agent.inject', () => {
  it('does not start a turn on an idle agent', () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([{ text: 'unused' }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    agent.inject([{ type: 'text', text: notice }], { source })
    expect(agent.turns).toBe(0)
    expect(agent.busy).toBe(false)
    expect(adapter.requests).toEqual([])
    expect(agent.history).toEqual([])
    expect(agent.pendingInjections).toBe(1)
  })

  it('appears in the next model request exactly once, as a user message with its source', async () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([{ text: 'first answer' }, { text: 'second answer' }])
    const agent = ctx.agents.create(agentOptions({ adapter, system: 'be brief' }))
    agent.inject([{ type: 'text', text: notice }], { source })
    expect(await agent.run('what happened?')).toBe('first answer')
    expect(agent.turns).toBe(1)
    expect(agent.pendingInjections).toBe(0)

    const [first] = adapter.requests
    expect(first.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: notice, source },
      { role: 'user', content: 'what happened?' },
    ])

    // The next turn: it stays in the history like any message, but is never added twice.
    expect(await agent.run('and now?')).toBe('second answer')
    const second = adapter.requests[1]
    expect(count(second.messages, notice)).toBe(1)
    expect(second.messages.map((message) => message.role)).toEqual(['system', 'user', 'user', 'assistant', 'user'])
    expect(count(agent.history as never, notice)).toBe(1)
  })

  it('several text blocks become one message, joined by newlines', async () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([{ text: 'ok' }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    agent.inject([{ type: 'text', text: 'line one' }, { type: 'text', text: 'line two' }], { source: { kind: 'mcp', session: 'x' } })
    await agent.run('hi')
    expect(adapter.requests[0].messages[0]).toEqual({ role: 'user', content: 'line one\nline two', source: { kind: 'mcp', session: 'x' } })
  })

  it('an injection made during a turn reaches the next request of that same turn, once', async () => {
    const ctx = createContext()
    ctx.tools.register({
      name: 'start_job',
      description: 'Starts a job that reports back.',
      parameters: (await import('zod')).z.object({}),
      execute: (_args, call) => {
        const agent = ctx.agents.list().find((candidate) => candidate.session.header.id === call.agent?.session.header.id)
        agent?.inject([{ type: 'text', text: 'job finished' }], { source })
        return 'started'
      },
    })
    const adapter = new ScriptedAdapter([
      { text: '', toolCalls: [{ id: 'c1', name: 'start_job', arguments: '{}' }] },
      { text: 'done' },
    ])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    expect(await agent.run('go')).toBe('done')
    expect(adapter.requests[0].messages.some((message) => message.content === 'job finished')).toBe(false)
    expect(adapter.requests[1].messages).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'start_job', arguments: '{}' }] },
      { role: 'tool', content: 'started', toolCallId: 'c1' },
      { role: 'user', content: 'job finished', source },
    ])
    expect(agent.turns).toBe(1)
  })

  it('throws the "disposed" error on a disposed agent', () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions({ id: 'gone' }))
    agent.dispose()
    expect(() => agent.inject([{ type: 'text', text: notice }], { source })).toThrow('agent "gone" is disposed')
    expect(() => agent.inject([{ type: 'text', text: notice }], { source })).toThrow(expect.objectContaining({ code: 'DSH_AGENT_DISPOSED' }))
  })

  it('refuses invalid content and sources', () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions())
    expect(() => agent.inject([], { source })).toThrow('invalid injected content: expected a non-empty array')
    expect(() => agent.inject('text' as never, { source })).toThrow('invalid injected content')
    expect(() => agent.inject([{ type: 'image', data: '' }] as never, { source })).toThrow(
      'invalid injected content: block #1 is not a {type: "text", text: string} block',
    )
    expect(() => agent.inject([{ type: 'text', text: 'x' }], {} as never)).toThrow('invalid inject source')
    expect(() => agent.inject([{ type: 'text', text: 'x' }], { source: { kind: 'plugin' } as never })).toThrow(
      'invalid inject source: {kind: "plugin"} needs a plugin name',
    )
    expect(agent.pendingInjections).toBe(0)
  })
})

describe('onInject and takeInjected', () => {
  it('calls listeners synchronously with a frozen entry; the entry stays queued', () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions())
    const seen: InjectedContext[] = []
    const off = agent.onInject((entry) => seen.push(entry))
    const content = [{ type: 'text' as const, text: notice }]
    agent.inject(content, { source })
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ content: [{ type: 'text', text: notice }], source })
    expect(typeof seen[0].at).toBe('number')
    expect(Object.isFrozen(seen[0])).toBe(true)
    // a copy: later changes by the caller do not reach it
    content[0].text = 'changed'
    expect(seen[0].content[0].text).toBe(notice)
    expect(agent.pendingInjections).toBe(1)

    off()
    agent.inject([{ type: 'text', text: 'second' }], { source })
    expect(seen).toHaveLength(1)
  })

  it('a throwing listener is logged and ignored', () => {
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions({ id: 'a1' }))
    const seen: string[] = []
    agent.onInject(() => {
      throw new Error('transport closed')
    })
    agent.onInject((entry) => seen.push(entry.content[0].text))
    expect(() => agent.inject([{ type: 'text', text: notice }], { source })).not.toThrow()
    expect(seen).toEqual([notice])
    expect(agent.pendingInjections).toBe(1)
    expect(logs.lines).toEqual([{ name: 'dsh-agent', type: 'error', content: 'inject listener of agent "a1" failed: transport closed' }])
  })

  it('takeInjected drains the queue, so the loop never delivers those entries again', async () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([{ text: 'ok' }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    agent.inject([{ type: 'text', text: 'one' }], { source })
    agent.inject([{ type: 'text', text: 'two' }], { source })
    const taken = agent.takeInjected()
    expect(taken.map((entry) => entry.content[0].text)).toEqual(['one', 'two'])
    expect(agent.takeInjected()).toEqual([])
    await agent.run('hi')
    expect(adapter.requests[0].messages).toEqual([{ role: 'user', content: 'hi' }])
  })

  it('dispose drops queued injections and listeners', () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions())
    const listener = vi.fn()
    agent.onInject(listener)
    agent.inject([{ type: 'text', text: 'one' }], { source })
    agent.dispose()
    expect(agent.takeInjected()).toEqual([])
    expect(listener).toHaveBeenCalledTimes(1)
  })
})
