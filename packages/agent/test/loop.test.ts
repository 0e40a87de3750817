import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { type ModelRequest, ScriptedAdapter } from '../src/index.js'
import { agentOptions, createContext, registerAdd, session } from './helpers.js'

describe('the agent loop', () => {
  it('calls a registered tool through ctx.tools and feeds its result back', async () => {
    const ctx = createContext()
    const calls = registerAdd(ctx)
    const adapter = new ScriptedAdapter([
      {
        text: 'Let me add.',
        toolCalls: [
          { id: 'call-1', name: 'add', arguments: '{"a": 2, "b": 3}' },
          { id: 'call-2', name: 'add', arguments: '{"a": 10, "b": -4, "ignored": true}' },
        ],
      },
      (request) => ({ text: `The sums are ${request.messages.filter((m) => m.role === 'tool').map((m) => m.content).join(' and ')}.` }),
    ])
    const agent = ctx.agents.create(agentOptions({ id: 'adder', adapter, system: 'You add numbers.' }))
    const answer = await agent.run('add 2+3 and 10-4')
    expect(answer).toBe('The sums are 5 and 6.')
    expect(agent.turns).toBe(1)
    expect(agent.busy).toBe(false)

    // The tool ran with validated arguments and saw the agent as its caller.
    expect(calls).toEqual([
      { a: 2, b: 3, agentId: 'adder', owner: session.id },
      { a: 10, b: -4, agentId: 'adder', owner: session.id },
    ])

    // Every request carried the published tool schemas.
    expect(adapter.requests).toHaveLength(2)
    for (const request of adapter.requests) {
      expect(request.tools).toEqual(ctx.tools.schemas())
      expect(request.tools.map((tool) => tool.name)).toEqual(['add'])
    }
    expect(adapter.requests[1].messages).toEqual([
      { role: 'system', content: 'You add numbers.' },
      { role: 'user', content: 'add 2+3 and 10-4' },
      {
        role: 'assistant',
        content: 'Let me add.',
        toolCalls: [
          { id: 'call-1', name: 'add', arguments: '{"a": 2, "b": 3}' },
          { id: 'call-2', name: 'add', arguments: '{"a": 10, "b": -4, "ignored": true}' },
        ],
      },
      { role: 'tool', content: '5', toolCallId: 'call-1' },
      { role: 'tool', content: '6', toolCallId: 'call-2' },
    ])
    expect(agent.history.at(-1)).toEqual({ role: 'assistant', content: 'The sums are 5 and 6.' })
    expect(agent.history.some((message) => message.role === 'system')).toBe(false)
  })

  it('the pipeline applies: denials and schema errors are fed back as Error texts', async () => {
    const ctx = createContext()
    const calls = registerAdd(ctx)
    ctx.tools.onPreExecute((call) => ((call.args as { a: number }).a > 100 ? { kind: 'deny', reason: 'too big' } : undefined))
    const adapter = new ScriptedAdapter([
      {
        toolCalls: [
          { id: 'c1', name: 'add', arguments: '{"a": 1000, "b": 1}' },
          { id: 'c2', name: 'add', arguments: '{"a": "1"}' },
          { id: 'c3', name: 'subtract', arguments: '{}' },
        ],
      },
      { text: 'gave up' },
    ])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    expect(await agent.run('try')).toBe('gave up')
    expect(calls).toEqual([])
    expect(adapter.requests[1].messages.filter((m) => m.role === 'tool')).toEqual([
      { role: 'tool', content: 'Error: too big', toolCallId: 'c1' },
      { role: 'tool', content: 'Error: invalid arguments: "a" must be a number; missing required property "b"', toolCallId: 'c2' },
      { role: 'tool', content: 'Error: unknown tool "subtract"', toolCallId: 'c3' },
    ])
  })

  it('bad JSON arguments become an Error tool result, not a crash', async () => {
    const ctx = createContext()
    const calls = registerAdd(ctx)
    const adapter = new ScriptedAdapter([
      { toolCalls: [{ id: 'bad', name: 'add', arguments: '{"a": 1, "b": ' }] },
      { toolCalls: [{ id: 'good', name: 'add', arguments: '{"a": 1, "b": 2}' }] },
      { text: 'three' },
    ])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    expect(await agent.run('add')).toBe('three')
    const toolMessages = agent.history.filter((message) => message.role === 'tool')
    expect(toolMessages[0].toolCallId).toBe('bad')
    expect(toolMessages[0].content).toMatch(/^Error: invalid arguments: not valid JSON \(.+\)$/)
    expect(toolMessages[1]).toEqual({ role: 'tool', content: '3', toolCallId: 'good' })
    expect(calls).toHaveLength(1)
  })

  it('empty arguments mean an empty object', async () => {
    const ctx = createContext()
    ctx.tools.register({ name: 'ping', description: 'Pings.', parameters: z.object({}), execute: () => 'pong' })
    const adapter = new ScriptedAdapter([{ toolCalls: [{ id: 'p', name: 'ping', arguments: '' }] }, { text: 'ok' }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    await agent.run('ping')
    expect(agent.history.find((message) => message.role === 'tool')?.content).toBe('pong')
  })

  it('stops with an Error after maxSteps model requests', async () => {
    const ctx = createContext()
    registerAdd(ctx)
    const loop = () => ({ toolCalls: [{ id: 'again', name: 'add', arguments: '{"a":1,"b":1}' }] })
    const adapter = new ScriptedAdapter([loop, loop, loop, loop])
    const agent = ctx.agents.create(agentOptions({ id: 'looper', adapter, maxSteps: 3 }))
    await expect(agent.run('loop forever')).rejects.toThrow(
      'agent "looper" stopped after 3 model requests (maxSteps) without a final answer',
    )
    expect(adapter.requests).toHaveLength(3)
    expect(agent.busy).toBe(false)
    expect(agent.turns).toBe(1)
  })

  it('one turn at a time', async () => {
    const ctx = createContext()
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    const adapter = new ScriptedAdapter([
      async () => {
        await gate
        return { text: 'slow' }
      },
      { text: 'next' },
    ])
    const agent = ctx.agents.create(agentOptions({ id: 'one', adapter }))
    const first = agent.run('first')
    expect(agent.busy).toBe(true)
    await expect(agent.run('second')).rejects.toThrow('agent "one" is busy: one turn at a time')
    release()
    expect(await first).toBe('slow')
    expect(agent.busy).toBe(false)
    expect(await agent.run('third')).toBe('next')
    expect(agent.turns).toBe(2)
  })

  it('an abort signal ends the turn and reaches the adapter', async () => {
    const ctx = createContext()
    const seen: (AbortSignal | undefined)[] = []
    const agent = ctx.agents.create(
      agentOptions({
        id: 'abortable',
        adapter: {
          next: (_request: ModelRequest, signal?: AbortSignal) => {
            seen.push(signal)
            return new Promise((_resolve, reject) => {
              signal?.addEventListener('abort', () => reject(new Error('request aborted')))
            })
          },
        },
      }),
    )
    const controller = new AbortController()
    const turn = agent.run('hello', { signal: controller.signal })
    await vi.waitFor(() => expect(seen).toHaveLength(1))
    controller.abort()
    await expect(turn).rejects.toThrow('agent "abortable": the turn was aborted')
    expect(seen[0]?.aborted).toBe(true)
    expect(agent.busy).toBe(false)
  })

  it('disposing the agent aborts a running turn with the "disposed" error', async () => {
    const ctx = createContext()
    let signal: AbortSignal | undefined
    const agent = ctx.agents.create(
      agentOptions({
        id: 'short-lived',
        adapter: {
          next: (_request: ModelRequest, s?: AbortSignal) => {
            signal = s
            return new Promise((_resolve, reject) => s?.addEventListener('abort', () => reject(new Error('aborted'))))
          },
        },
      }),
    )
    const turn = agent.run('hello')
    await vi.waitFor(() => expect(signal).toBeDefined())
    agent.dispose()
    await expect(turn).rejects.toThrow('agent "short-lived" is disposed')
    await expect(turn).rejects.toMatchObject({ code: 'DSH_AGENT_DISPOSED' })
    expect(signal?.aborted).toBe(true)
    await expect(agent.run('again')).rejects.toThrow('agent "short-lived" is disposed')
  })

  it('adapter errors fail the turn; the agent can run again', async () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([
      () => {
        throw new Error('HTTP 500')
      },
      { text: 'recovered' },
    ])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    await expect(agent.run('one')).rejects.toThrow('HTTP 500')
    expect(await agent.run('two')).toBe('recovered')
    expect(agent.turns).toBe(2)
  })

  it('without an adapter, run fails clearly', async () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions({ id: 'mute' }))
    await expect(agent.run('hi')).rejects.toThrow('agent "mute" has no model adapter')
    expect(agent.turns).toBe(0)
  })

  it('without ctx.tools, requests carry no tools and a tool call fails clearly', async () => {
    const ctx = createContext({ tools: false })
    const adapter = new ScriptedAdapter([{ text: 'plain answer' }, { toolCalls: [{ id: 'x', name: 'add', arguments: '{}' }] }])
    const agent = ctx.agents.create(agentOptions({ id: 'toolless', adapter }))
    expect(await agent.run('hi')).toBe('plain answer')
    expect(adapter.requests[0].tools).toEqual([])
    await expect(agent.run('use a tool')).rejects.toThrow(
      'agent "toolless" cannot run tool "add": no tool registry (ctx.tools) is loaded',
    )
    // The history stays a valid conversation: the call got its tool message.
    expect(agent.history.at(-1)).toMatchObject({ role: 'tool', toolCallId: 'x' })
  })

  it('resolves ctx.tools lazily: tools registered after the agent was created are offered', async () => {
    const ctx = createContext()
    const adapter = new ScriptedAdapter([{ text: 'a' }, { text: 'b' }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    await agent.run('first')
    registerAdd(ctx)
    await agent.run('second')
    expect(adapter.requests.map((request) => request.tools.map((tool) => tool.name))).toEqual([[], ['add']])
  })
})

describe('ScriptedAdapter', () => {
  it('records every request and errors clearly when the script runs out', async () => {
    const adapter = new ScriptedAdapter([{ text: 'only' }])
    expect(adapter.remaining).toBe(1)
    const request = { messages: [{ role: 'user' as const, content: 'hi' }], tools: [] }
    expect(await adapter.next(request)).toEqual({ text: 'only', toolCalls: [] })
    expect(adapter.remaining).toBe(0)
    await expect(adapter.next(request)).rejects.toThrow('scripted adapter: the script has 1 step(s), but request #2 arrived')
    expect(adapter.requests).toEqual([request, request])
  })

  it('a script that runs out fails the turn', async () => {
    const ctx = createContext()
    registerAdd(ctx)
    const adapter = new ScriptedAdapter([{ toolCalls: [{ id: 'c', name: 'add', arguments: '{"a":1,"b":1}' }] }])
    const agent = ctx.agents.create(agentOptions({ adapter }))
    await expect(agent.run('go')).rejects.toThrow('scripted adapter: the script has 1 step(s), but request #2 arrived')
  })

  it('refuses malformed replies', async () => {
    const adapter = new ScriptedAdapter([{ toolCalls: [{ id: 'x' }] } as never, { text: 42 } as never])
    const request = { messages: [], tools: [] }
    await expect(adapter.next(request)).rejects.toThrow('the model adapter returned an invalid reply: tool call #1 has no name')
    await expect(adapter.next(request)).rejects.toThrow('the model adapter returned an invalid reply: "text" is not a string')
  })
})
