import { recordLogs } from '@deepseek-ai/dsh-bash'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { ToolRegistry, type ApprovalDecision, type ApprovalRequest, type CallFacts } from '@deepseek-ai/dsh-tools'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { z } from 'zod'
import { BashPolicy, type BashPolicyConfig } from '../src/index.js'

const policy = {
  default: 'ask',
  deny: ['rm -rf *', 'sudo *'],
  ask: ['git push *'],
  allow: ['touch *', 'echo *', 'ls *', 'cat *'],
} as const

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  vi.restoreAllMocks()
})

/**
 * A root context with the real tool registry, a real tool named `bash` that runs its command
 * with bash in a scratch directory, the policy plugin, and optionally an approval service.
 */
function setup(config: BashPolicyConfig | undefined, answer?: ApprovalDecision) {
  const dir = mkdtempSync(join(tmpdir(), 'bash-policy-e2e-'))
  dirs.push(dir)
  mkdirSync(join(dir, 'keep'))
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  const ran: string[] = []
  ctx.plugin({
    name: 'test-bash-tool',
    inject: ['tools'],
    apply(ctx: Context) {
      for (const name of ['bash', 'other']) {
        ctx.tools.register({
          name,
          description: 'Runs a command with bash.',
          parameters: z.object({ command: z.string() }),
          execute: (args) => {
            ran.push(args.command)
            return execFileSync('bash', ['--noprofile', '--norc', '-c', args.command], { cwd: dir, encoding: 'utf8' })
          },
        })
      }
    },
  })
  if (config) ctx.plugin(BashPolicy, config)
  const requests: ApprovalRequest[] = []
  if (answer) {
    ctx.set('approval', {
      request: async (request: ApprovalRequest) => {
        requests.push(request)
        return answer
      },
    })
  }
  const facts: CallFacts[] = []
  ctx.tools.onResult((_call, _result, seen) => void facts.push(seen))
  const run = async (command: string, tool = 'bash') => {
    const result = await ctx.tools.execute({ callId: 'c1', name: tool, arguments: { command } })
    return { text: result.content.map((block) => block.text).join(''), isError: result.isError }
  }
  return { dir, ran, requests, facts, run, exists: (name: string) => existsSync(join(dir, name)) }
}

describe('the BashPolicy plugin through ctx.tools.execute', () => {
  it('runs an allowed command', async () => {
    const { run, exists } = setup({ policy })
    expect(await run('touch allowed.marker && echo done')).toEqual({ text: 'done\n', isError: false })
    expect(exists('allowed.marker')).toBe(true)
  })

  it('a denied command never runs, not even the allowed commands before it', async () => {
    const { run, exists, ran, requests } = setup({ policy }, 'allowed-once')
    expect(await run('touch denied.marker; rm -rf keep')).toEqual({
      text: 'Error: command denied by rule "rm -rf *": rm -rf keep',
      isError: true,
    })
    expect(exists('denied.marker')).toBe(false)
    expect(exists('keep')).toBe(true)
    expect(ran).toEqual([])
    // Deny is final: the approval service is not even asked.
    expect(requests).toEqual([])
  })

  it.each([
    "bash -c 'touch denied.marker; rm -rf keep'",
    'eval "touch denied.marker; rm -rf keep"',
    'touch denied.marker && echo $(rm -rf keep)',
    'touch denied.marker | env -i FOO=1 timeout 5 rm -rf keep',
    'touch denied.marker; r\\\nm -rf keep',
    "touch denied.marker; $'\\x72m' -rf keep",
    'touch denied.marker; /bin/rm -rf keep',
    'find . -name denied.marker -exec rm -rf keep \\;',
    'touch denied.marker; cat <<EOF\n\t$(rm -rf keep)\nEOF',
  ])('a bypass is denied and has no side effect: %j', async (command) => {
    const { run, exists, ran } = setup({ policy }, 'allowed-once')
    const result = await run(command)
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/^Error: command denied by rule "rm -rf \*": /)
    expect(exists('denied.marker')).toBe(false)
    expect(exists('keep')).toBe(true)
    expect(ran).toEqual([])
  })

  it('an asked command runs after the approval service answers allowed-once', async () => {
    const { run, exists, requests } = setup({ policy }, 'allowed-once')
    expect(await run('mkdir asked.dir && echo made')).toEqual({ text: 'made\n', isError: false })
    expect(exists('asked.dir')).toBe(true)
    expect(requests).toHaveLength(1)
    expect(requests[0]).toMatchObject({
      tool: 'bash',
      arguments: { command: 'mkdir asked.dir && echo made' },
      reason: 'command needs approval (no rule allows it): mkdir asked.dir',
    })
  })

  it('an asked command does not run when the approval service rejects it', async () => {
    const { run, exists, ran } = setup({ policy }, 'rejected')
    expect(await run('mkdir asked.dir')).toEqual({
      text: 'Error: rejected by the user: command needs approval (no rule allows it): mkdir asked.dir',
      isError: true,
    })
    expect(exists('asked.dir')).toBe(false)
    expect(ran).toEqual([])
  })

  it('an output redirection is asked about', async () => {
    const { run, exists, requests } = setup({ policy }, 'rejected')
    expect((await run('echo x > written.txt')).text).toBe(
      'Error: rejected by the user: command needs approval (output redirected to written.txt): echo x > written.txt',
    )
    expect(exists('written.txt')).toBe(false)
    expect(requests).toHaveLength(1)
  })

  it('without an approval service an ask is denied, saying why', async () => {
    const { run, exists } = setup({ policy })
    expect(await run('mkdir asked.dir')).toEqual({
      text: 'Error: denied: approval required but no approval service is available: command needs approval (no rule allows it): mkdir asked.dir',
      isError: true,
    })
    expect(exists('asked.dir')).toBe(false)
  })

  it('only checks the tool named bash', async () => {
    const { run, exists } = setup({ policy })
    expect((await run('rm -rf keep', 'other')).isError).toBe(false)
    expect(exists('keep')).toBe(false)
  })

  it('without a policy nothing changes', async () => {
    const { run, exists } = setup({})
    expect((await run('rm -rf keep')).isError).toBe(false)
    expect(exists('keep')).toBe(false)
    const bare = setup(undefined)
    expect((await bare.run('rm -rf keep')).isError).toBe(false)
    expect(bare.exists('keep')).toBe(false)
  })

  it('loads the policy from a YAML file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bash-policy-file-'))
    dirs.push(dir)
    const file = join(dir, 'policy.yaml')
    writeFileSync(file, 'default: deny\nallow:\n  - touch *\n')
    const { run, exists } = setup({ file })
    expect((await run('touch ok.marker')).isError).toBe(false)
    expect(exists('ok.marker')).toBe(true)
    expect(await run('mkdir x')).toEqual({ text: 'Error: command denied (no rule allows it): mkdir x', isError: true })
    expect(exists('x')).toBe(false)
  })

  it('names the deciding rule in the call facts for audit logs (dsh-tools CallFacts), the texts unchanged', async () => {
    const { run, facts } = setup({ policy }, 'rejected')
    expect(await run('rm -rf keep')).toEqual({ text: 'Error: command denied by rule "rm -rf *": rm -rf keep', isError: true })
    expect(facts.at(-1)?.decision).toEqual({ kind: 'deny', reason: 'command denied by rule "rm -rf *": rm -rf keep', rule: 'rm -rf *' })
    await run('git push origin main')
    expect(facts.at(-1)?.decision).toMatchObject({ kind: 'ask', rule: 'git push *' })
    expect(facts.at(-1)?.approvals).toEqual([{ answer: 'rejected', reason: 'command needs approval (rule "git push *"): git push origin main' }])
    // No single rule decided a default ask: no rule is named.
    await run('mkdir x')
    expect(facts.at(-1)?.decision).toEqual({ kind: 'ask', reason: 'command needs approval (no rule allows it): mkdir x', reasons: ['command needs approval (no rule allows it): mkdir x'] })
    await run('echo hi')
    expect(facts.at(-1)).toEqual({ args: { command: 'echo hi' }, ran: true, decision: { kind: 'allow' }, approvals: [] })
  })

  it('a bad policy file leaves no command unguarded: every bash call is denied, saying why', async () => {
    const logs = recordLogs()
    onTestFinished(logs.stop)
    const dir = mkdtempSync(join(tmpdir(), 'bash-policy-file-'))
    dirs.push(dir)
    const file = join(dir, 'policy.json')
    writeFileSync(file, '{\n  "deny": "rm -rf *"\n}\n')
    const { run, exists } = setup({ file })
    expect(await run('touch x.marker')).toEqual({
      text: `Error: the bash policy could not be loaded: ${file}:2:11: "deny" must be a list of strings`,
      isError: true,
    })
    expect(exists('x.marker')).toBe(false)
    expect(logs.lines).toEqual([{ name: 'dsh-bash-policy', type: 'error', content: `${file}:2:11: "deny" must be a list of strings` }])
  })
})
