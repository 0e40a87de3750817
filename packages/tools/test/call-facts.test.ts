import { describe, expect, it } from 'vitest'
import type { ApprovalDecision, ApprovalRequest, CallFacts, ToolExecution } from '../src/index.js'
import { createContext, echoTool, text } from './helpers.js'

/** The observers' third argument: what the pipeline learned about a call, for audit logs and traces. */

function observe(ctx: ReturnType<typeof createContext>) {
  const seen: { execution: ToolExecution; facts: CallFacts }[] = []
  ctx.tools.onResult((execution, _result, facts) => void seen.push({ execution, facts }))
  return seen
}

function approvals(ctx: ReturnType<typeof createContext>, answers: ApprovalDecision[], via?: string) {
  const asked: ApprovalRequest[] = []
  ctx.set('approval', {
    ...(via ? { via } : {}),
    request: async (request: ApprovalRequest) => {
      asked.push(request)
      return answers.shift() ?? 'unavailable'
    },
  })
  return asked
}

describe('CallFacts', () => {
  it('an allowed call: the validated arguments, ran, no decision when no listener decided', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const seen = observe(ctx)
    await ctx.tools.execute({ callId: 'a', name: 'echo', arguments: { command: 'ls', stray: 1 } })
    expect(seen[0].facts).toEqual({ args: { command: 'ls' }, ran: true, approvals: [] })
    expect(Object.isFrozen(seen[0].facts)).toBe(true)
  })

  it('a denied call: its decision with the rule, and that the tool never ran', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute(() => ({ kind: 'deny', reason: 'no deleting', rule: 'rm *', extra: 'dropped' }) as never)
    const seen = observe(ctx)
    await ctx.tools.execute({ callId: 'd', name: 'echo', arguments: { command: 'rm x' } })
    expect(seen[0].facts).toEqual({ args: { command: 'rm x' }, ran: false, decision: { kind: 'deny', reason: 'no deleting', rule: 'rm *' }, approvals: [] })
  })

  it('an asked call: every approval with its answer and the front end that asked', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute(() => ({ kind: 'ask', reason: 'first', reasons: ['first', 'second'], rule: 'git push *' }))
    approvals(ctx, ['allowed-once', 'rejected'], 'mcp-elicitation')
    const seen = observe(ctx)
    expect(text(await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'git push' } }))).toBe('ran git push')
    expect(text(await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'git push' } }))).toBe('Error: rejected by the user: first')
    expect(seen.map((s) => s.facts)).toEqual([
      { args: { command: 'git push' }, ran: true, decision: { kind: 'ask', reason: 'first', reasons: ['first', 'second'], rule: 'git push *' }, approvals: [{ reason: 'first', answer: 'allowed-once', via: 'mcp-elicitation' }] },
      { args: { command: 'git push' }, ran: false, decision: { kind: 'ask', reason: 'first', reasons: ['first', 'second'], rule: 'git push *' }, approvals: [{ reason: 'first', answer: 'rejected', via: 'mcp-elicitation' }] },
    ])
  })

  it("a middleware's changed arguments are what the facts name, with the decision made for them", async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    ctx.tools.onPreExecute((call) => (call.args.command === 'safe' ? { kind: 'allow', rule: 'safe' } : { kind: 'ask', reason: `ask ${call.args.command}` }))
    approvals(ctx, ['allowed-once'])
    ctx.tools.useMiddleware((_call, next) => next({ args: { command: 'safe' } }))
    const seen = observe(ctx)
    expect(text(await ctx.tools.execute({ callId: 'm', name: 'echo', arguments: { command: 'risky' } }))).toBe('ran safe')
    // The first decision asked (and was approved) about what the model sent; what ran is the change.
    expect(seen[0].facts).toEqual({ args: { command: 'safe' }, ran: true, decision: { kind: 'allow', rule: 'safe' }, approvals: [{ reason: 'ask risky', answer: 'allowed-once' }] })
  })

  it("a tool's own question through requestApproval is recorded for its call", async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool('echo', async (args, call) => {
      const answer = await ctx.tools.requestApproval(call, { callId: call.callId, tool: call.name, arguments: call.args, reason: 'wider sandbox' })
      return `${args.command}: ${answer}`
    }))
    const asked = approvals(ctx, ['cancelled'], 'terminal')
    const seen = observe(ctx)
    expect(text(await ctx.tools.execute({ callId: 't', name: 'echo', arguments: { command: 'x' } }))).toBe('x: cancelled')
    expect(asked.map((r) => r.reason)).toEqual(['wider sandbox'])
    expect(seen[0].facts.approvals).toEqual([{ reason: 'wider sandbox', answer: 'cancelled', via: 'terminal' }])
  })

  it('requestApproval without a service, or with a throwing one, answers unavailable', async () => {
    const ctx = createContext()
    const answers: string[] = []
    ctx.tools.register(echoTool('echo', async (_args, call) => {
      answers.push(await ctx.tools.requestApproval(call, { callId: call.callId, tool: call.name, arguments: call.args }))
      return 'ok'
    }))
    const seen = observe(ctx)
    await ctx.tools.execute({ callId: '1', name: 'echo', arguments: { command: 'x' } })
    ctx.set('approval', { request: async () => { throw new Error('broken') } })
    await ctx.tools.execute({ callId: '2', name: 'echo', arguments: { command: 'x' } })
    expect(answers).toEqual(['unavailable', 'unavailable'])
    // Nobody was asked the first time: nothing recorded; the broken service was asked.
    expect(seen.map((s) => s.facts.approvals)).toEqual([[], [{ answer: 'unavailable' }]])
  })

  it('an unknown tool or invalid arguments: no arguments, nothing ran', async () => {
    const ctx = createContext()
    ctx.tools.register(echoTool())
    const seen = observe(ctx)
    await ctx.tools.execute({ callId: 'u', name: 'nope', arguments: {} })
    await ctx.tools.execute({ callId: 'i', name: 'echo', arguments: { command: 1 } })
    expect(seen.map((s) => s.facts)).toEqual([{ ran: false, approvals: [] }, { ran: false, approvals: [] }])
  })
})
