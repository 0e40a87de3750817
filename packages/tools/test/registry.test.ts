import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createContext, echoTool, text, usePlugin } from './helpers.js'

describe('tool registration', () => {
  it('registers a tool for as long as the registering plugin is loaded', async () => {
    const ctx = createContext()
    const fork = usePlugin(ctx, 'echo-plugin', (ctx) => {
      ctx.tools.register(echoTool())
    })
    expect(ctx.tools.names()).toEqual(['echo'])
    expect(ctx.tools.get('echo')?.name).toBe('echo')
    expect(await ctx.tools.execute({ callId: 'c1', name: 'echo', arguments: { command: 'ls' } })).toEqual({
      content: [{ type: 'text', text: 'ran ls' }],
      isError: false,
    })

    fork.dispose()
    expect(ctx.tools.names()).toEqual([])
    expect(ctx.tools.get('echo')).toBeUndefined()
    expect(ctx.tools.schemas()).toEqual([])
    const result = await ctx.tools.execute({ callId: 'c2', name: 'echo', arguments: { command: 'ls' } })
    expect(result).toEqual({ content: [{ type: 'text', text: 'Error: unknown tool "echo"' }], isError: true, meta: { code: 'DSH_UNKNOWN_TOOL' } })
  })

  it('returns a disposer that unregisters the tool', () => {
    const ctx = createContext()
    const dispose = ctx.tools.register(echoTool())
    expect(ctx.tools.names()).toEqual(['echo'])
    dispose()
    expect(ctx.tools.names()).toEqual([])
    dispose()
    expect(ctx.tools.names()).toEqual([])
  })

  it('refuses a duplicate name, and accepts it again once the first owner unloads', () => {
    const ctx = createContext()
    const first = usePlugin(ctx, 'first', (ctx) => {
      ctx.tools.register(echoTool())
    })
    expect(() => ctx.tools.register(echoTool())).toThrow('tool "echo" is already registered')
    expect(ctx.tools.names()).toEqual(['echo'])
    first.dispose()
    ctx.tools.register(echoTool())
    expect(ctx.tools.names()).toEqual(['echo'])
  })

  it('keeps other plugins\' tools when one plugin unloads', () => {
    const ctx = createContext()
    const a = usePlugin(ctx, 'a', (ctx) => {
      ctx.tools.register(echoTool('a_tool'))
    })
    usePlugin(ctx, 'b', (ctx) => {
      ctx.tools.register(echoTool('b_tool'))
    })
    expect(ctx.tools.names()).toEqual(['a_tool', 'b_tool'])
    a.dispose()
    expect(ctx.tools.names()).toEqual(['b_tool'])
  })

  it('refuses invalid names and tools without execute', () => {
    const ctx = createContext()
    expect(() => ctx.tools.register(echoTool('has space'))).toThrow(
      'invalid tool name "has space": expected 1-64 letters, digits, "_" or "-"',
    )
    expect(() => ctx.tools.register(echoTool(''))).toThrow('invalid tool name ""')
    expect(() => ctx.tools.register({ ...echoTool('x'), execute: undefined as never })).toThrow(
      'tool "x" has no execute function',
    )
    expect(ctx.tools.names()).toEqual([])
  })
})

describe('schemas()', () => {
  it('publishes name, description and JSON Schema parameters only, as plain copies', () => {
    const ctx = createContext()
    ctx.tools.register({
      ...echoTool(),
      presentCall: () => ({ kind: 'generic', title: 'echo' }),
    })
    const [schema] = ctx.tools.schemas()
    expect(Object.keys(schema).sort()).toEqual(['description', 'name', 'parameters'])
    expect(schema.name).toBe('echo')
    expect(schema.description).toBe('Echoes the command.')
    expect(schema.parameters).toMatchObject({
      type: 'object',
      properties: { command: { type: 'string' }, description: { type: 'string' } },
      required: ['command'],
    })
    // Plain data: survives JSON and structured cloning unchanged.
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema)
    expect(structuredClone(schema)).toEqual(schema)

    // Copies: mutating one does not affect the registry or later calls.
    ;(schema.parameters as Record<string, unknown>).type = 'string'
    schema.name = 'changed'
    const [again] = ctx.tools.schemas()
    expect(again.name).toBe('echo')
    expect(again.parameters.type).toBe('object')
  })

  it('lists tools in registration order', () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('b'))
    ctx.tools.register({ name: 'a', description: 'A', parameters: z.object({}), execute: () => 'a' })
    expect(ctx.tools.schemas().map((schema) => schema.name)).toEqual(['b', 'a'])
  })
})

describe('unknown tools', () => {
  it('gives Error: unknown tool "<name>"', async () => {
    const ctx = createContext()
    const result = await ctx.tools.execute({ callId: 'c', name: 'nope', arguments: {} })
    expect(result).toEqual({ content: [{ type: 'text', text: 'Error: unknown tool "nope"' }], isError: true, meta: { code: 'DSH_UNKNOWN_TOOL' } })
    expect(text(await ctx.tools.execute({ callId: 'c', name: 42 as never, arguments: {} }))).toBe(
      'Error: unknown tool "42"',
    )
  })
})
