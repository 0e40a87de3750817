import { Context } from 'cordis'
import { type ApprovalRequest, ToolRegistry } from '@deepseek-ai/dsh-tools'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BashPolicy, decide, definePolicy, parsePolicy } from '../src/index.js'

const readOnly = definePolicy({ allow: ['less *', 'ls *', 'cat *', 'git status', 'timeout *'], ask: ['git push *'], interactive: ['less *'] })

describe('every command that needs approval is reported, not only the first', () => {
  it('a harmless-looking first command cannot hide the second one (issue 25, row 4)', async () => {
    const line = `git push origin main # ${'x'.repeat(2100)}\ncp f /tmp/m`
    const decision = await decide(readOnly, line)
    expect(decision.kind).toBe('ask')
    // The comment is no word of the command: the reason shows what runs.
    expect(decision.reason).toBe('command needs approval (rule "git push *"): git push origin main')
    expect(decision.reasons).toEqual([decision.reason, 'command needs approval (no rule allows it): cp f /tmp/m'])
    expect(decision.command).toBe('git push origin main')
  })

  it('in reading order, without repeats, then what lies outside the safe subset', async () => {
    // Backticks: `$(id)` in argument position is inside the safe subset since issue 25's item 9.
    const decision = await decide(readOnly, 'cp a b; ls; cp a b; mv c d; echo `id`')
    expect(decision.reasons).toEqual([
      'command needs approval (no rule allows it): cp a b',
      'command needs approval (no rule allows it): mv c d',
      'command needs approval (no rule allows it): id',
      'command needs approval (no rule allows it): echo `id`',
      'command needs approval (outside the safe subset: a command substitution `id`)',
    ])
    expect(decision.reason).toBe(decision.reasons![0])
  })

  it('an allowed line has none; a denied line names its denial only', async () => {
    expect(await decide(readOnly, 'ls && cat f')).toEqual({ kind: 'allow' })
    const policy = definePolicy({ deny: ['rm *'] })
    expect(await decide(policy, 'cp a b; rm x')).toEqual({ kind: 'deny', reason: 'command denied by rule "rm *": rm x', command: 'rm x', rule: 'rm *' })
  })
})

describe('interactive tasks need an "interactive" rule (issue 25, row 3)', () => {
  it('old policy files stay valid and ask about every interactive call, whatever "default" says', async () => {
    const old = parsePolicy(JSON.stringify({ default: 'allow', allow: ['less *'] }), 'old.json')
    expect(old.interactive).toEqual([])
    expect(await decide(old, 'less long.txt')).toEqual({ kind: 'allow' })
    expect(await decide(old, 'less long.txt', { interactive: true })).toEqual({
      kind: 'ask',
      reason: 'command needs approval (interactive: no "interactive" rule allows it): less long.txt',
      reasons: ['command needs approval (interactive: no "interactive" rule allows it): less long.txt'],
      command: 'less long.txt',
    })
  })

  it('a matching rule allows it; the line must be allowed anyway (an interactive rule allows nothing by itself)', async () => {
    expect(await decide(readOnly, 'less long.txt', { interactive: true })).toEqual({ kind: 'allow' })
    const onlyInteractive = definePolicy({ interactive: ['python3 *'] })
    expect((await decide(onlyInteractive, 'python3 -q', { interactive: true })).reasons).toEqual(['command needs approval (no rule allows it): python3 -q'])
    // What the allow rules refuse stays refused: an executing option of less.
    expect((await decide(readOnly, 'less +!touch\\ m f', { interactive: true })).kind).toBe('ask')
  })

  it('every command of the line needs one, wrappers included and not seen through', async () => {
    // `env -i` or `env -u LESSSECURE` would run less without its secure mode.
    for (const line of ['env -i less f', 'env -u LESSSECURE less f', 'timeout 60 less f']) {
      const decision = await decide(readOnly, line)
      expect(decision, line).toEqual({ kind: 'allow' })
      const interactive = await decide(readOnly, line, { interactive: true })
      expect(interactive.kind, line).toBe('ask')
      expect(interactive.reasons, line).toEqual([`command needs approval (interactive: no "interactive" rule allows it): ${line}`])
    }
    expect((await decide(readOnly, 'cat f | less', { interactive: true })).reasons).toEqual([
      'command needs approval (interactive: no "interactive" rule allows it): cat f',
    ])
    expect(await decide(definePolicy({ allow: ['*'], interactive: ['*'] }), 'env -i less f', { interactive: true })).toEqual({ kind: 'allow' })
  })

  it('the key is checked like the other rule lists', () => {
    expect(() => parsePolicy('{\n  "interactive": "less *"\n}', 'p.json')).toThrow('p.json:2:18: "interactive" must be a list of strings')
    expect(() => parsePolicy('{\n  "interactive": [" "]\n}', 'p.json')).toThrow('p.json:2:19: "interactive" has an empty pattern')
    expect(() => parsePolicy('{"interactiv": []}', 'p.json')).toThrow(
      'p.json:1:2: unknown key "interactiv" (expected one of default, deny, ask, allow, interactive, maxCommands, maxCommandBytes, description)',
    )
    expect(parsePolicy('allow: [less *]\ninteractive:\n  - less *\n', 'p.yaml').interactive).toEqual(['less *'])
  })
})

describe('the plugin passes interactive and every reason through ctx.tools', () => {
  function setup() {
    const ctx = new Context()
    ctx.plugin(ToolRegistry)
    const ran: string[] = []
    ctx.plugin({
      name: 'fake-bash-schema',
      inject: ['tools'],
      apply(ctx: Context) {
        ctx.tools.register({
          name: 'bash',
          description: 'Records the command (never runs it).',
          parameters: z.object({ command: z.string(), interactive: z.boolean().optional() }),
          execute: (args) => (ran.push(args.command), 'ok'),
        })
      },
    })
    ctx.plugin(BashPolicy, { policy: { allow: ['less *', 'git push *'], ask: ['git push *'], interactive: ['less *'] } })
    const requests: ApprovalRequest[] = []
    ctx.set('approval', { request: async (request: ApprovalRequest) => (requests.push(request), 'rejected' as const) })
    const run = (args: Record<string, unknown>) => ctx.tools.execute({ callId: 'c', name: 'bash', arguments: args })
    return { ran, requests, run }
  }

  it('an interactive call of a command no interactive rule names is asked; a named one runs', async () => {
    const { ran, requests, run } = setup()
    expect((await run({ command: 'less f', interactive: true })).isError).toBe(false)
    const refused = await run({ command: 'env -i less f', interactive: true })
    expect(refused.content[0].text).toBe('Error: rejected by the user: command needs approval (interactive: no "interactive" rule allows it): env -i less f')
    expect(ran).toEqual(['less f'])
    expect(requests[0].arguments).toEqual({ command: 'env -i less f', interactive: true })
  })

  it('the approval request lists every command that needs approval', async () => {
    const { requests, run } = setup()
    await run({ command: 'git push origin main\ncp f /tmp/m' })
    expect(requests[0].reason).toBe('command needs approval (rule "git push *"): git push origin main')
    expect(requests[0].reasons).toEqual([requests[0].reason, 'command needs approval (no rule allows it): cp f /tmp/m'])
  })
})
