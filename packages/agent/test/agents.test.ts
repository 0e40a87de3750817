import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { Agent, Agents, type Agent as AgentType } from '../src/index.js'
import { agentOptions, createContext, session, usePlugin } from './helpers.js'

describe('ctx.agents', () => {
  it('creates agents with generated ids and lists the live ones in creation order', () => {
    const ctx = createContext()
    const a = ctx.agents.create(agentOptions())
    const b = ctx.agents.create(agentOptions({ id: 'named' }))
    const c = ctx.agents.create(agentOptions())
    expect(a).toBeInstanceOf(Agent)
    expect([a.id, b.id, c.id]).toEqual(['agent-1', 'named', 'agent-2'])
    expect(ctx.agents.list()).toEqual([a, b, c])
    expect(ctx.agents.get('named')).toBe(b)
    expect(ctx.agents.get('nope')).toBeUndefined()
    // list() is a copy
    ctx.agents.list().pop()
    expect(ctx.agents.list()).toHaveLength(3)
  })

  it('gives the agent a frozen session header and a fresh state', () => {
    const ctx = createContext()
    const agent = ctx.agents.create(agentOptions())
    expect(agent.session.header).toEqual(session)
    expect(Object.isFrozen(agent.session.header)).toBe(true)
    expect(Object.isFrozen(agent.session)).toBe(true)
    expect(() => {
      ;(agent.session.header as { id: string }).id = 'other'
    }).toThrow(TypeError)
    expect(agent.disposed).toBe(false)
    expect(agent.busy).toBe(false)
    expect(agent.turns).toBe(0)
    expect(agent.history).toEqual([])
    expect(agent.maxSteps).toBe(32)
  })

  it('refuses a relative cwd, naming it, and other invalid options', () => {
    const ctx = createContext()
    expect(() => ctx.agents.create({ session: { id: 's', cwd: 'work/dir' } })).toThrow(
      'session.cwd must be an absolute path, got "work/dir"',
    )
    expect(() => ctx.agents.create({ session: { id: '', cwd: '/tmp' } })).toThrow('session.id must be a non-empty string')
    expect(() => ctx.agents.create({} as never)).toThrow('agent options need a session')
    expect(() => ctx.agents.create(agentOptions({ maxSteps: 0 }))).toThrow('maxSteps must be a positive integer, got 0')
    expect(() => ctx.agents.create(agentOptions({ adapter: {} as never }))).toThrow('adapter must have a next(request, signal) method')
    ctx.agents.create(agentOptions({ id: 'twin' }))
    expect(() => ctx.agents.create(agentOptions({ id: 'twin' }))).toThrow('agent "twin" already exists')
    expect(ctx.agents.list().map((agent) => agent.id)).toEqual(['twin'])
  })

  it('a session may carry its sandbox mode (frozen in the header); a bad one is refused', () => {
    const ctx = createContext()
    const agent = ctx.agents.create({ session: { id: 's1', cwd: '/tmp', sandboxMode: 'read-only' } })
    expect(agent.session.header).toEqual({ id: 's1', cwd: '/tmp', sandboxMode: 'read-only' })
    expect(ctx.agents.create({ session: { id: 's2', cwd: '/tmp' } }).session.header).not.toHaveProperty('sandboxMode')
    expect(() => ctx.agents.create({ session: { id: 's3', cwd: '/tmp', sandboxMode: '' } })).toThrow(
      'session.sandboxMode must be a non-empty string, got ""',
    )
    expect(() => ctx.agents.create({ session: { id: 's4', cwd: '/tmp', sandboxMode: 3 as never } })).toThrow(
      'session.sandboxMode must be a non-empty string, got 3',
    )
  })

  it('generated ids skip ids in use', () => {
    const ctx = createContext()
    ctx.agents.create(agentOptions({ id: 'agent-1' }))
    expect(ctx.agents.create(agentOptions()).id).toBe('agent-2')
  })

  it('agents vanish from list() when the plugin that created them unloads', () => {
    const ctx = createContext()
    const kept = ctx.agents.create(agentOptions({ id: 'root-agent' }))
    let created: AgentType[] = []
    const fork = usePlugin(ctx, 'front-end', (ctx) => {
      created = [ctx.agents.create(agentOptions()), ctx.agents.create(agentOptions())]
    })
    expect(ctx.agents.list()).toEqual([kept, ...created])
    fork.dispose()
    expect(ctx.agents.list()).toEqual([kept])
    expect(created.every((agent) => agent.disposed)).toBe(true)
    expect(kept.disposed).toBe(false)
  })

  it('dispose() is idempotent and removes the agent from list()', () => {
    const ctx = createContext()
    const fork = usePlugin(ctx, 'front-end', (ctx) => {
      ctx.agents.create(agentOptions({ id: 'a' }))
      ctx.agents.create(agentOptions({ id: 'b' }))
    })
    const a = ctx.agents.get('a')!
    a.dispose()
    a.dispose()
    expect(a.disposed).toBe(true)
    expect(ctx.agents.list().map((agent) => agent.id)).toEqual(['b'])
    // its id is free again
    expect(ctx.agents.create(agentOptions({ id: 'a' })).id).toBe('a')
    fork.dispose()
    expect(ctx.agents.list().map((agent) => agent.id)).toEqual(['a'])
  })

  it('unloading the Agents service disposes every agent', () => {
    const ctx = new Context()
    const service = ctx.plugin(Agents)
    const agent = ctx.agents.create(agentOptions())
    service.dispose()
    expect(agent.disposed).toBe(true)
    expect(ctx.get('agents')).toBeUndefined()
  })
})
