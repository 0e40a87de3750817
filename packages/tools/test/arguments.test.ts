import { describe, expect, it, vi } from 'vitest'
import { z } from 'zod'
import { formatIssues, snapshotArguments } from '../src/index.js'
import { createContext, echoTool, text } from './helpers.js'

async function run(args: unknown, tool = echoTool()) {
  const ctx = createContext()
  const execute = vi.fn(tool.execute)
  ctx.tools.register({ ...tool, execute })
  const result = await ctx.tools.execute({ callId: 'c', name: tool.name, arguments: args })
  return { result, execute, text: text(result) }
}

describe('stage 1: the lossless JSON snapshot', () => {
  it.each([
    ['NaN', { command: 'ls', n: NaN }, 'Error: invalid arguments: "n" is not a finite number (NaN)'],
    ['Infinity', { command: 'ls', n: Infinity }, 'Error: invalid arguments: "n" is not a finite number (Infinity)'],
    ['-Infinity', { command: 'ls', deep: { n: -Infinity } }, 'Error: invalid arguments: "deep.n" is not a finite number (-Infinity)'],
    ['a function', { command: 'ls', f: () => 1 }, 'Error: invalid arguments: "f" is not JSON (function)'],
    ['a symbol', { command: 'ls', s: Symbol('x') }, 'Error: invalid arguments: "s" is not JSON (symbol)'],
    ['a bigint', { command: 'ls', b: 1n }, 'Error: invalid arguments: "b" is not JSON (bigint)'],
    ['a Date', { command: 'ls', when: new Date(0) }, 'Error: invalid arguments: "when" is not a plain JSON object (Date)'],
    ['a Map', { command: 'ls', m: new Map() }, 'Error: invalid arguments: "m" is not a plain JSON object (Map)'],
    ['undefined in an array', { command: 'ls', list: [1, undefined] }, 'Error: invalid arguments: "list[1]" is undefined'],
    ['a string', 'ls -la', 'Error: invalid arguments: expected a JSON object, got string'],
    ['an array', ['ls'], 'Error: invalid arguments: expected a JSON object, got an array'],
    ['null', null, 'Error: invalid arguments: expected a JSON object, got null'],
    ['undefined', undefined, 'Error: invalid arguments: expected a JSON object, got undefined'],
    ['a number', 42, 'Error: invalid arguments: expected a JSON object, got number'],
  ])('refuses %s', async (_label, args, expected) => {
    const { result, execute } = await run(args)
    expect(result).toEqual({ content: [{ type: 'text', text: expected }], isError: true, meta: { code: 'DSH_INVALID_ARGUMENTS' } })
    expect(execute).not.toHaveBeenCalled()
  })

  it('refuses cycles', async () => {
    const args: Record<string, unknown> = { command: 'ls' }
    args.self = args
    expect((await run(args)).text).toBe('Error: invalid arguments: "self" is a circular reference')
    const nested: Record<string, unknown> = { command: 'ls', a: { list: [] as unknown[] } }
    ;((nested.a as Record<string, unknown>).list as unknown[]).push(nested.a)
    expect((await run(nested)).text).toBe('Error: invalid arguments: "a.list[0]" is a circular reference')
  })

  it('accepts a shared (non-cyclic) object twice', async () => {
    const shared = { x: 1 }
    const tool = { ...echoTool(), parameters: z.object({ command: z.string(), a: z.unknown(), b: z.unknown() }) }
    expect((await run({ command: 'ls', a: shared, b: shared }, tool as never)).text).toBe('ran ls')
  })

  it('drops object properties whose value is undefined, as JSON does', () => {
    expect(snapshotArguments({ command: 'ls', description: undefined })).toEqual({ command: 'ls' })
    expect(Object.keys(snapshotArguments({ command: 'ls', description: undefined }))).toEqual(['command'])
  })

  it('keeps a "__proto__" key as data: it never becomes the prototype', async () => {
    const args = JSON.parse('{"__proto__": {"command": "rm -rf /"}, "description": "harmless"}')
    const snapshot = snapshotArguments(args)
    expect(Object.getPrototypeOf(snapshot)).toBe(Object.prototype)
    expect(Object.keys(snapshot)).toEqual(['__proto__', 'description'])
    expect((snapshot as Record<string, unknown>).command).toBeUndefined()
    const { text: result, execute } = await run(args)
    expect(result).toBe('Error: invalid arguments: missing required property "command"')
    expect(execute).not.toHaveBeenCalled()
  })
})

describe('stage 2: the schema', () => {
  const strict = {
    ...echoTool('strict'),
    parameters: z.object({
      command: z.string(),
      description: z.string(),
      timeoutMs: z.number().int().positive().optional(),
      mode: z.enum(['a', 'b']).optional(),
      options: z.object({ depth: z.number() }).optional(),
    }),
  }

  it('missing required property', async () => {
    expect((await run({ description: 'x' }, strict as never)).text).toBe(
      'Error: invalid arguments: missing required property "command"',
    )
  })

  it('wrong type', async () => {
    const { result, execute } = await run({ command: 1, description: 'x' }, strict as never)
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Error: invalid arguments: "command" must be a string' }],
      isError: true,
      meta: { code: 'DSH_INVALID_ARGUMENTS' },
    })
    expect(execute).not.toHaveBeenCalled()
  })

  it('formatIssues without the input reads issue.input (reportInput), never the message text', () => {
    const schema = z.object({ command: z.string() })
    const reported = schema.safeParse({}, { reportInput: true })
    const plain = schema.safeParse({})
    expect(formatIssues(reported.error!.issues)).toBe('missing required property "command"')
    expect(formatIssues(plain.error!.issues, {})).toBe('missing required property "command"')
    // Without either, the issue is only known as a wrong type: zod's English message is not parsed.
    expect(formatIssues(plain.error!.issues)).toBe('"command" must be a string')
  })

  it('a null value is a wrong type, not a missing property', async () => {
    expect((await run({ command: null, description: 'x' }, strict as never)).text).toBe(
      'Error: invalid arguments: "command" must be a string',
    )
  })

  it('several problems are joined by "; "', async () => {
    expect((await run({ command: 1 }, strict as never)).text).toBe(
      'Error: invalid arguments: "command" must be a string; missing required property "description"',
    )
    expect(
      (await run({ command: 'ls', description: 'x', timeoutMs: 1.5, mode: 'c', options: {} }, strict as never)).text,
    ).toBe(
      'Error: invalid arguments: "timeoutMs" must be an integer; "mode" must be one of "a", "b"; missing required property "options.depth"',
    )
    expect((await run({ command: 'ls', description: 'x', timeoutMs: -1 }, strict as never)).text).toBe(
      'Error: invalid arguments: "timeoutMs" must be greater than 0',
    )
  })

  it('a strict schema names unknown keys instead of stripping them', async () => {
    const tool = { ...echoTool('strict_obj'), parameters: z.strictObject({ command: z.string() }) }
    expect((await run({ command: 'ls', env: {}, stdin: '' }, tool as never)).text).toBe(
      'Error: invalid arguments: unknown properties "env", "stdin"',
    )
    expect((await run({ command: 'ls', env: {} }, tool as never)).text).toBe('Error: invalid arguments: unknown property "env"')
  })

  it('strips unknown keys: they never reach the tool, but stay visible in rawArguments', async () => {
    const ctx = createContext()
    const seen: unknown[] = []
    ctx.tools.register(echoTool('echo', (args, call) => {
      seen.push(args, call.rawArguments)
      return 'ok'
    }))
    const result = await ctx.tools.execute({
      callId: 'c',
      name: 'echo',
      arguments: { command: 'ls', env: { PATH: '/evil' }, stdin: 'y' },
    })
    expect(text(result)).toBe('ok')
    expect(seen[0]).toEqual({ command: 'ls' })
    expect(Object.keys(seen[0] as object)).toEqual(['command'])
    expect(seen[1]).toEqual({ command: 'ls', env: { PATH: '/evil' }, stdin: 'y' })
  })

  it('args and rawArguments are deeply frozen, and later changes to the caller\'s object do not reach them', async () => {
    const ctx = createContext()
    let args!: { command: string; options: { list: string[] } }
    let raw!: Record<string, unknown>
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    ctx.tools.register({
      name: 'deep',
      description: 'Joins a list.',
      parameters: z.object({ command: z.string(), options: z.object({ list: z.array(z.string()) }) }),
      execute: async (a, call) => {
        args = a
        raw = call.rawArguments
        await gate
        return a.options.list.join(',')
      },
    })
    const input = { command: 'ls', options: { list: ['a', 'b'] } }
    const pending = ctx.tools.execute({ callId: 'c', name: 'deep', arguments: input })
    await vi.waitFor(() => expect(args).toBeDefined())
    input.options.list.push('mutated')
    release()
    expect(text(await pending)).toBe('a,b')
    expect(Object.isFrozen(args)).toBe(true)
    expect(Object.isFrozen(args.options)).toBe(true)
    expect(Object.isFrozen(args.options.list)).toBe(true)
    expect(Object.isFrozen(raw)).toBe(true)
    expect(Object.isFrozen(raw.options)).toBe(true)
    expect(() => {
      args.options.list.push('x')
    }).toThrow(TypeError)
    expect(() => {
      ;(args as { command: string }).command = 'rm -rf /'
    }).toThrow(TypeError)
  })
})
