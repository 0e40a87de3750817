import { recordLogs } from '@deepseek-ai/dsh-bash'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { z } from 'zod'
import { type ApprovalDecision, type ApprovalRequest, MAX_APPROVAL_TEXT, type ToolCaller } from '../src/index.js'
import { createContext, echoTool, text, usePlugin } from './helpers.js'

const agent: ToolCaller = { id: 'agent-1', session: { header: { id: 'session-1', cwd: '/tmp' } } }

afterEach(() => {
  vi.restoreAllMocks()
})

/** An error result; `code` is the stable code the pipeline attaches (none for foreign errors). */
function errorOf(message: string, code?: string) {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, ...(code ? { meta: { code } } : {}) }
}

describe('stage order', () => {
  it('runs snapshot, schema, pre-execute (by order), middleware, tool, observers', async () => {
    const ctx = createContext()
    const log: string[] = []
    ctx.tools.register({
      name: 'probe',
      description: 'Records the stages.',
      parameters: z.object({
        command: z.string().refine(() => {
          log.push('schema')
          return true
        }),
      }),
      execute: (args) => {
        log.push('tool')
        return `ran ${args.command}`
      },
    })
    ctx.tools.onPreExecute(() => void log.push('pre:10'), { order: 10 })
    ctx.tools.onPreExecute(() => void log.push('pre:0a'))
    ctx.tools.onPreExecute(() => void log.push('pre:-5'), { order: -5 })
    ctx.tools.onPreExecute(() => void log.push('pre:0b'), { order: 0 })
    ctx.tools.useMiddleware(async (_call, next) => {
      log.push('mw:outer:before')
      const result = await next()
      log.push('mw:outer:after')
      return result
    }, { order: -1 })
    ctx.tools.useMiddleware(async (_call, next) => {
      log.push('mw:inner:before')
      const result = await next()
      log.push('mw:inner:after')
      return result
    })
    ctx.tools.onResult((call, result) => void log.push(`observer:${call.callId}:${text(result)}`))

    const args = {
      get command() {
        log.push('snapshot')
        return 'ls'
      },
    }
    const result = await ctx.tools.execute({ callId: 'c1', name: 'probe', arguments: args })
    expect(result).toEqual({ content: [{ type: 'text', text: 'ran ls' }], isError: false })
    expect(log).toEqual([
      'snapshot',
      'schema',
      'pre:-5',
      'pre:0a',
      'pre:0b',
      'pre:10',
      'mw:outer:before',
      'mw:inner:before',
      'tool',
      'mw:inner:after',
      'mw:outer:after',
      'observer:c1:ran ls',
    ])
  })

  it('gives every stage the same frozen call with the agent and the signal', async () => {
    const ctx = createContext()
    const seen: unknown[] = []
    ctx.tools.register(echoTool('echo', (_args, call) => {
      seen.push(call)
      return 'ok'
    }))
    ctx.tools.onPreExecute((call) => void seen.push(call))
    ctx.tools.useMiddleware((call, next) => {
      seen.push(call)
      return next()
    })
    const signal = new AbortController().signal
    await ctx.tools.execute({ callId: 'c9', name: 'echo', arguments: { command: 'ls' }, agent, signal })
    expect(seen).toHaveLength(3)
    expect(seen[0]).toBe(seen[1])
    expect(seen[1]).toBe(seen[2])
    const call = seen[0] as Record<string, unknown>
    expect(Object.isFrozen(call)).toBe(true)
    expect(call).toMatchObject({ callId: 'c9', name: 'echo', args: { command: 'ls' }, agent, signal })
  })
})

describe('tools/pre-execute', () => {
  it('deny without a reason', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.onPreExecute(() => ({ kind: 'deny' }))
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(
      errorOf('tool "echo" was denied', 'DSH_DENIED'),
    )
    expect(execute).not.toHaveBeenCalled()
  })

  it('deny with a reason', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.onPreExecute(() => ({ kind: 'deny', reason: 'rm is not allowed here' }))
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'rm x' } })).toEqual(
      errorOf('rm is not allowed here', 'DSH_DENIED'),
    )
    expect(execute).not.toHaveBeenCalled()
  })

  it('the first listener that answers decides; later ones are not asked', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const later = vi.fn(() => ({ kind: 'deny' as const }))
    ctx.tools.onPreExecute(later, { order: 5 })
    ctx.tools.onPreExecute(() => undefined, { order: 1 })
    ctx.tools.onPreExecute(() => ({ kind: 'allow' }), { order: 2 })
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } }))).toBe('ran ls')
    expect(later).not.toHaveBeenCalled()
  })

  it('async listeners are awaited', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute(async () => ({ kind: 'deny', reason: 'later' }))
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } }))).toBe('Error: later')
  })

  it('a throwing listener fails the call with its message', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.onPreExecute(() => {
      throw new Error('policy file is corrupt')
    })
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(
      errorOf('policy file is corrupt'),
    )
    expect(execute).not.toHaveBeenCalled()
  })

  it('an unknown decision kind fails the call', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute(() => ({ kind: 'maybe' }) as never)
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } }))).toBe(
      'Error: invalid pre-execute decision "maybe"',
    )
  })

  it('listeners registered by a plugin are removed when it unloads', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const observed: string[] = []
    const fork = usePlugin(ctx, 'policy', (ctx) => {
      ctx.tools.onPreExecute(() => ({ kind: 'deny', reason: 'policy' }))
      ctx.tools.useMiddleware(async (_call, next) => {
        const result = await next()
        return { ...result, content: [{ type: 'text', text: `wrapped ${text(result)}` }] }
      })
      ctx.tools.onResult((call) => void observed.push(call.callId))
    })
    expect(text(await ctx.tools.execute({ callId: 'c1', name: 'echo', arguments: { command: 'ls' } }))).toBe('Error: policy')
    fork.dispose()
    expect(text(await ctx.tools.execute({ callId: 'c2', name: 'echo', arguments: { command: 'ls' } }))).toBe('ran ls')
    expect(observed).toEqual(['c1'])
  })

  it('the disposer returned by onPreExecute removes the listener', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const dispose = ctx.tools.onPreExecute(() => ({ kind: 'deny', reason: 'no' }))
    dispose()
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } }))).toBe('ran ls')
  })
})

describe('ask and the approval service', () => {
  function setup(answer?: (request: ApprovalRequest) => Promise<ApprovalDecision>, reason?: string) {
    const ctx = createContext()
    const execute = vi.fn((args: { command: string }) => `ran ${args.command}`)
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.onPreExecute(() => ({ kind: 'ask', reason }))
    const requests: ApprovalRequest[] = []
    if (answer) {
      ctx.set('approval', {
        request: (request: ApprovalRequest) => {
          requests.push(request)
          return answer(request)
        },
      })
    }
    const run = (signal?: AbortSignal) =>
      ctx.tools.execute({ callId: 'c7', name: 'echo', arguments: { command: 'ls', extra: 1 }, agent, signal })
    return { ctx, execute, requests, run }
  }

  it('allowed-once runs the tool; the service sees the call as it will run (unknown keys stripped)', async () => {
    const { execute, requests, run } = setup(async () => 'allowed-once', 'writes files')
    expect(await run()).toEqual({ content: [{ type: 'text', text: 'ran ls' }], isError: false })
    expect(execute).toHaveBeenCalledTimes(1)
    expect(requests).toHaveLength(1)
    expect(requests[0]).toMatchObject({
      callId: 'c7',
      tool: 'echo',
      arguments: { command: 'ls' },
      reason: 'writes files',
      agent,
    })
    expect(requests[0].arguments).not.toHaveProperty('extra')
  })

  it('a call aborted while waiting for approval does not run', async () => {
    const controller = new AbortController()
    const { execute, run } = setup(async () => {
      controller.abort()
      return 'allowed-once'
    }, 'slow person')
    expect(await run(controller.signal)).toEqual(errorOf('the call was aborted before it started', 'DSH_ABORTED_BEFORE_START'))
    expect(execute).not.toHaveBeenCalled()
  })

  it('rejected, with and without a reason', async () => {
    const withReason = setup(async () => 'rejected', 'writes files')
    expect(await withReason.run()).toEqual(errorOf('rejected by the user: writes files', 'DSH_REJECTED'))
    expect(withReason.execute).not.toHaveBeenCalled()
    const withoutReason = setup(async () => 'rejected')
    expect(await withoutReason.run()).toEqual(errorOf('rejected by the user', 'DSH_REJECTED'))
  })

  it('cancelled', async () => {
    const { execute, run } = setup(async () => 'cancelled', 'writes files')
    expect(await run()).toEqual(errorOf('approval was cancelled: writes files', 'DSH_APPROVAL_CANCELLED'))
    expect(execute).not.toHaveBeenCalled()
  })

  it('unavailable', async () => {
    const { execute, run } = setup(async () => 'unavailable', 'writes files')
    expect(await run()).toEqual(errorOf('denied: approval unavailable: writes files', 'DSH_DENIED'))
    expect(execute).not.toHaveBeenCalled()
  })

  it('an answer it does not know counts as unavailable', async () => {
    const { run } = setup(async () => 'yes' as never)
    expect(await run()).toEqual(errorOf('denied: approval unavailable', 'DSH_DENIED'))
  })

  it('a throwing approval service counts as unavailable and is logged', async () => {
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const { execute, run } = setup(async () => {
      throw new Error('terminal went away')
    }, 'writes files')
    expect(await run()).toEqual(errorOf('denied: approval unavailable: writes files', 'DSH_DENIED'))
    expect(execute).not.toHaveBeenCalled()
    expect(logs.lines).toContainEqual({ name: 'dsh-tools', type: 'error', content: 'approval service failed: terminal went away' })
  })

  it('no approval service: denied with a reason saying so', async () => {
    const withReason = setup(undefined, 'writes files')
    expect(await withReason.run()).toEqual(
      errorOf('denied: approval required but no approval service is available: writes files', 'DSH_DENIED'),
    )
    expect(withReason.execute).not.toHaveBeenCalled()
    const withoutReason = setup(undefined)
    expect(await withoutReason.run()).toEqual(errorOf('denied: approval required but no approval service is available', 'DSH_DENIED'))
  })

  it('every reason of the listener reaches the service (reasons), the first one names the error', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo'))
    ctx.tools.onPreExecute(() => ({ kind: 'ask', reason: 'first', reasons: ['first', 'second'] }))
    const requests: ApprovalRequest[] = []
    ctx.set('approval', { request: async (request: ApprovalRequest) => (requests.push(request), 'rejected' as const) })
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'a\nb' } })).toEqual(errorOf('rejected by the user: first', 'DSH_REJECTED'))
    expect(requests[0]).toMatchObject({ reason: 'first', reasons: ['first', 'second'] })
    expect(Object.isFrozen(requests[0].reasons)).toBe(true)
  })

  it('a call too long to show whole is refused before anyone is asked (never shown cut)', async () => {
    const { execute, requests, ctx } = setup(async () => 'allowed-once', 'writes files')
    // As shown: "echo: echo ok # " + 8000 x + "␊rm -rf build", the line count, the reason: 8084 characters.
    const command = `echo ok # ${'x'.repeat(MAX_APPROVAL_TEXT)}\nrm -rf build`
    const result = await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command } })
    expect(result).toEqual(
      errorOf(
        `denied: the call is too long to show for approval (${MAX_APPROVAL_TEXT + 84} characters, at most ${MAX_APPROVAL_TEXT}): split it into shorter calls: writes files`,
        'DSH_APPROVAL_TOO_LONG',
      ),
    )
    expect(requests).toHaveLength(0)
    expect(execute).not.toHaveBeenCalled()
  })

  it('an approval service provided by a plugin stops answering when it unloads', async () => {
    const { ctx, run } = setup(undefined)
    const fork = ctx.plugin({
      name: 'approver',
      apply: (ctx) => {
        ctx.set('approval', { request: async () => 'allowed-once' as const })
      },
    })
    expect(text(await run())).toBe('ran ls')
    fork.dispose()
    expect(text(await run())).toBe('Error: denied: approval required but no approval service is available')
  })
})

describe('tools/execute middleware', () => {
  it('vetoes by returning its own result: the tool never runs', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.useMiddleware(async () => ({ content: [{ type: 'text', text: 'Error: vetoed' }], isError: true }))
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(errorOf('vetoed'))
    expect(execute).not.toHaveBeenCalled()
  })

  it('vetoes by throwing: Error: <message>', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.useMiddleware(async () => {
      throw new Error('sandbox is offline')
    })
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(
      errorOf('sandbox is offline'),
    )
    expect(execute).not.toHaveBeenCalled()
  })

  it('wraps the result of the tool', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.useMiddleware(async (_call, next) => {
      const result = await next()
      return { content: [...result.content, { type: 'text', text: '[note]' }], isError: result.isError }
    })
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual({
      content: [{ type: 'text', text: 'ran ls' }, { type: 'text', text: '[note]' }],
      isError: false,
    })
  })
})

describe('the tool', () => {
  it('a synchronous throw becomes Error: <message>', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', () => {
      throw new Error('spawn bash ENOENT')
    }))
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(
      errorOf('spawn bash ENOENT'),
    )
  })

  it('an asynchronous throw becomes Error: <message>', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', async () => {
      await Promise.resolve()
      throw new Error('connection reset')
    }))
    expect(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })).toEqual(
      errorOf('connection reset'),
    )
  })

  it('a thrown non-Error is stringified', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', () => {
      throw 'plain string'
    }))
    expect(text(await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } }))).toBe('Error: plain string')
  })

  it('a full result is passed through; isError is only true when it is exactly true', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('full', () => ({ content: [{ type: 'text', text: 'exit 1' }], isError: false })))
    ctx.tools.register(echoTool('loose', () => ({ content: [{ type: 'text', text: 'x' }], isError: 'yes' as never })))
    ctx.tools.register(echoTool('bad', () => ({ nothing: true }) as never))
    const args = { command: 'ls' }
    expect(await ctx.tools.execute({ callId: 'c', name: 'full', arguments: args })).toEqual({
      content: [{ type: 'text', text: 'exit 1' }],
      isError: false,
    })
    expect((await ctx.tools.execute({ callId: 'c', name: 'loose', arguments: args })).isError).toBe(false)
    expect(await ctx.tools.execute({ callId: 'c', name: 'bad', arguments: args })).toEqual(
      errorOf('the tool returned an invalid result', 'DSH_PIPELINE_CONTRACT'),
    )
  })

  it('a call whose signal is already aborted never starts', async () => {
    const ctx = createContext()
    const execute = vi.fn(() => 'ran')
    ctx.tools.register(echoTool('echo', execute))
    const controller = new AbortController()
    controller.abort()
    expect(
      await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' }, signal: controller.signal }),
    ).toEqual(errorOf('the call was aborted before it started', 'DSH_ABORTED_BEFORE_START'))
    expect(execute).not.toHaveBeenCalled()
  })
})

describe('observers', () => {
  it('see failures too, and a throwing observer harms nothing', async () => {
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const seen: string[] = []
    ctx.tools.onResult(() => {
      throw new Error('log disk full')
    })
    ctx.tools.onResult((call, result) => void seen.push(`${call.callId}:${text(result)}`))
    expect(await ctx.tools.execute({ callId: 'ok', name: 'echo', arguments: { command: 'ls' } })).toEqual({
      content: [{ type: 'text', text: 'ran ls' }],
      isError: false,
    })
    expect(await ctx.tools.execute({ callId: 'bad', name: 'echo', arguments: {} })).toEqual(
      errorOf('invalid arguments: missing required property "command"', 'DSH_INVALID_ARGUMENTS'),
    )
    expect(await ctx.tools.execute({ callId: 'gone', name: 'nope', arguments: {} })).toEqual(errorOf('unknown tool "nope"', 'DSH_UNKNOWN_TOOL'))
    expect(seen).toEqual([
      'ok:ran ls',
      'bad:Error: invalid arguments: missing required property "command"',
      'gone:Error: unknown tool "nope"',
    ])
    expect(logs.lines).toContainEqual({ name: 'dsh-tools', type: 'error', content: 'result observer failed: log disk full' })
  })
})

describe('middleware guards', () => {
  it('a middleware that calls next() twice does not run the tool twice', async () => {
    const ctx = createContext()
    const execute = vi.fn((args: { command: string }) => `ran ${args.command}`)
    ctx.tools.register(echoTool('echo', execute))
    ctx.tools.useMiddleware(async (_call, next) => {
      await next()
      return next()
    })
    const result = await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })
    expect(result).toEqual({
      content: [{ type: 'text', text: 'Error: a tools/execute middleware called next() more than once' }],
      isError: true,
      meta: { code: 'DSH_PIPELINE_CONTRACT' },
    })
    expect(execute).toHaveBeenCalledTimes(1)
  })

  it('an async observer that rejects harms nothing', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', (args: { command: string }) => `ran ${args.command}`))
    ctx.tools.onResult((async () => {
      throw new Error('observer down')
    }) as never)
    const result = await ctx.tools.execute({ callId: 'c', name: 'echo', arguments: { command: 'ls' } })
    expect(result.isError).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 10))
  })
})
