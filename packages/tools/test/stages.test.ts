import { describe, expect, it, vi } from 'vitest'
import { UNKNOWN_ERROR, type ToolCall } from '../src/index.js'
import { createContext, echoTool, text } from './helpers.js'

/** `next(changes)`, thrown non-Errors, and the `tools/post-execute` stage. */

describe('next(changes) in tools/execute middleware', () => {
  it('hands the tool a replacement signal; the original stays untouched', async () => {
    const ctx = createContext()
    const outer = new AbortController()
    const replacement = new AbortController()
    let seen: AbortSignal | undefined
    ctx.tools.register(echoTool('echo', (_args, call) => {
      seen = call.signal
      return new Promise((resolve) => call.signal!.addEventListener('abort', () => resolve('stopped by the deadline')))
    }))
    ctx.tools.useMiddleware(async (_call, next) => {
      setTimeout(() => replacement.abort(), 20)
      return next({ signal: replacement.signal })
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'x' }, signal: outer.signal })
    expect(text(result)).toBe('stopped by the deadline')
    expect(seen).toBe(replacement.signal)
    expect(outer.signal.aborted).toBe(false)
  })

  it('validates replaced arguments again and runs the permission stage on them', async () => {
    const ctx = createContext()
    const ran: string[] = []
    ctx.tools.register(echoTool('echo', (args) => {
      ran.push(args.command)
      return `ran ${args.command}`
    }))
    ctx.tools.onPreExecute((call) => (call.args.command === 'rm -rf /' ? { kind: 'deny', reason: 'not that' } : undefined))
    const rewrite = { current: {} as Record<string, unknown> }
    ctx.tools.useMiddleware((_call, next) => next({ args: rewrite.current }))

    rewrite.current = { command: 'ls', extra: 1 }
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'pwd' } }))).toBe('ran ls')

    rewrite.current = { command: 'rm -rf /' }
    expect(await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'pwd' } })).toEqual({
      content: [{ type: 'text', text: 'Error: not that' }],
      isError: true,
      meta: { code: 'DSH_DENIED' },
    })

    rewrite.current = { command: 42 }
    expect(text(await ctx.tools.execute({ callId: '3', name: 'echo', arguments: { command: 'pwd' } }))).toBe(
      'Error: invalid arguments: "command" must be a string',
    )

    rewrite.current = { command: 'x', n: Number.NaN }
    expect(text(await ctx.tools.execute({ callId: '4', name: 'echo', arguments: { command: 'pwd' } }))).toBe(
      'Error: invalid arguments: "n" is not a finite number (NaN)',
    )
    expect(ran).toEqual(['ls'])
  })

  it('gives inner middleware and the tool the changed, frozen call; the outer one keeps its own', async () => {
    const ctx = createContext()
    const calls: ToolCall[] = []
    ctx.tools.register(echoTool('echo', (_args, call) => {
      calls.push(call)
      return 'ok'
    }))
    ctx.tools.useMiddleware(async (call, next) => {
      calls.push(call)
      return next({ args: { command: 'changed' } })
    }, { order: 0 })
    ctx.tools.useMiddleware(async (call, next) => {
      calls.push(call)
      return next()
    }, { order: 1 })
    await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'original' } })
    expect(calls.map((call) => call.args.command)).toEqual(['original', 'changed', 'changed'])
    expect(calls[1]).toBe(calls[2])
    expect(Object.isFrozen(calls[1])).toBe(true)
    expect(Object.isFrozen(calls[1].args)).toBe(true)
    expect(calls[1].rawArguments).toEqual({ command: 'changed' })
    expect(calls[0].args.command).toBe('original')
  })

  it('refuses changes that are not an object or a signal that is not an AbortSignal', async () => {
    const ctx = createContext()
    const tool = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', tool))
    const changes = { current: undefined as unknown }
    ctx.tools.useMiddleware((_call, next) => next(changes.current as never))
    changes.current = 'signal'
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: a tools/execute middleware passed invalid changes to next(): expected an object',
    )
    changes.current = { signal: { aborted: false } }
    expect(text(await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: a tools/execute middleware passed an invalid signal to next(): expected an AbortSignal',
    )
    expect(tool).not.toHaveBeenCalled()
  })

  it('lets a middleware catch the rejection of next() with bad arguments and answer itself', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.useMiddleware(async (_call, next) => {
      try {
        return await next({ args: {} })
      } catch (error) {
        return `middleware saw: ${(error as Error).message}`
      }
    })
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'middleware saw: invalid arguments: missing required property "command"',
    )
  })
})

describe('thrown values that are not Errors', () => {
  const cases: [string, unknown, string][] = [
    ['a plain object with a message', { message: 'x', code: 'E_X' }, 'Error: x'],
    ['a string', 'boom', 'Error: boom'],
    ['a number', 42, 'Error: 42'],
    ['an object without a message', { reason: 'x' }, `Error: ${UNKNOWN_ERROR}`],
    ['an object with a non-string message', { message: 7 }, `Error: ${UNKNOWN_ERROR}`],
    ['null', null, `Error: ${UNKNOWN_ERROR}`],
    ['undefined', undefined, `Error: ${UNKNOWN_ERROR}`],
  ]
  for (const [what, thrown, expected] of cases) {
    it(`${what} reads ${JSON.stringify(expected)}`, async () => {
      const ctx = createContext()
      ctx.tools.register(echoTool('echo', () => {
        throw thrown
      }))
      expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } }))).toBe(expected)
    })
  }

  it('a listener that throws a plain object with a message reads the same', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute(() => {
      throw { message: 'listener down' }
    })
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } }))).toBe('Error: listener down')
  })

  it('carries a string code of the thrown value to result.meta.code', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', () => {
      throw Object.assign(new Error('gone'), { code: 'DSH_UNKNOWN_TASK' })
    }))
    const result = await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })
    expect(result).toEqual({ content: [{ type: 'text', text: 'Error: gone' }], isError: true, meta: { code: 'DSH_UNKNOWN_TASK' } })
  })
})

describe('tools/post-execute', () => {
  it('runs in order after the tool and before observers; each listener sees the result so far', async () => {
    const ctx = createContext()
    const log: string[] = []
    ctx.tools.register(echoTool())
    ctx.tools.onPostExecute((_call, result) => {
      log.push(`post:10:${text(result)}`)
    }, { order: 10 })
    ctx.tools.onPostExecute((_call, result) => {
      log.push(`post:0:${text(result)}`)
      return { kind: 'replace', result: 'replaced' }
    })
    ctx.tools.onResult((_execution, result) => void log.push(`observer:${text(result)}`))
    const result = await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })
    expect(result).toEqual({ content: [{ type: 'text', text: 'replaced' }], isError: false })
    expect(log).toEqual(['post:0:ran x', 'post:10:replaced', 'observer:replaced'])
  })

  it('appends context as its own block and marks meta without touching the text', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPostExecute(() => ({ kind: 'append', text: 'note: the repository is dirty' }))
    ctx.tools.onPostExecute(() => ({ kind: 'mark', meta: { reviewed: true } }))
    ctx.tools.onPostExecute(() => ({ kind: 'mark', meta: { by: 'policy' } }))
    expect(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })).toEqual({
      content: [
        { type: 'text', text: 'ran x' },
        { type: 'text', text: 'note: the repository is dirty' },
      ],
      isError: false,
      meta: { reviewed: true, by: 'policy' },
    })
  })

  it('can block a result by replacing it with an error', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', () => 'secret=hunter2'))
    ctx.tools.onPostExecute((_call, result) =>
      text(result).includes('secret=') ? { kind: 'replace', result: { content: [{ type: 'text', text: 'Error: withheld' }], isError: true } } : undefined,
    )
    expect(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })).toEqual({
      content: [{ type: 'text', text: 'Error: withheld' }],
      isError: true,
    })
  })

  it('fails closed: a throwing listener replaces the result with its error', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', () => 'secret'))
    ctx.tools.onPostExecute(async () => {
      throw new Error('redactor down')
    })
    expect(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })).toEqual({
      content: [{ type: 'text', text: 'Error: redactor down' }],
      isError: true,
    })
  })

  it('refuses invalid actions with a stable error', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const action = { current: undefined as unknown }
    ctx.tools.onPostExecute(() => action.current as never)
    action.current = { kind: 'shout' }
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: invalid post-execute action "shout"',
    )
    action.current = { kind: 'append', text: 5 }
    expect(text(await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: a tools/post-execute listener appended a non-string',
    )
    action.current = { kind: 'mark', meta: ['x'] }
    expect(text(await ctx.tools.execute({ callId: '3', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: a tools/post-execute listener marked a result with a non-object',
    )
    action.current = { kind: 'replace', result: { nope: true } }
    expect(text(await ctx.tools.execute({ callId: '4', name: 'echo', arguments: { command: 'x' } }))).toBe(
      'Error: the tool returned an invalid result',
    )
  })

  it('sees denied calls (with a call object) but not calls that failed the schema', async () => {
    const ctx = createContext()
    const seen: string[] = []
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute((call) => (call.args.command === 'no' ? { kind: 'deny', reason: 'denied' } : undefined))
    ctx.tools.onPostExecute((call, result) => void seen.push(`${call.args.command}:${text(result)}`))
    await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'no' } })
    await ctx.tools.execute({ callId: '2', name: 'echo', arguments: {} })
    await ctx.tools.execute({ callId: '3', name: 'missing', arguments: {} })
    expect(seen).toEqual(['no:Error: denied'])
  })

  it('is undone when the registering plugin unloads', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const fork = ctx.plugin({
      name: 'appender',
      inject: ['tools'],
      apply: (ctx) => void ctx.tools.onPostExecute(() => ({ kind: 'append', text: 'more' })),
    })
    await ctx.lifecycle.flush()
    expect((await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })).content).toHaveLength(2)
    fork.dispose()
    expect((await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'x' } })).content).toHaveLength(1)
  })
})
