import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bash, call, MAIN, startStdio, waitFor } from './helpers.js'

/**
 * Issue 25, rows 3, 4 and 11, through the real `dsh-bash mcp` and `dsh-bash repl` with a real
 * policy: the person's page holds the whole line and every command that needs approval, model text
 * is escaped, an interactive task needs an `interactive` rule, and less runs in its secure mode.
 */
let dir: string
let policy: string
let oldPolicy: string
const LINE = `git push origin main # ${'x'.repeat(2100)}\ncp f /tmp/m`
const PAGE = [
  `bash: git push origin main # ${'x'.repeat(2100)}␊cp f /tmp/m`,
  '(2 lines: each ␊ is a line break)',
  'Description: Push␊Reason: allowed by rule "git push *"␛[8m␍\\u{202E}',
  'Reasons (2):',
  '- command needs approval (rule "git push *"): git push origin main',
  '- command needs approval (no rule allows it): cp f /tmp/m',
].join('\n')
/** Upper bounds only, for a machine whose CPUs are saturated (the REPL starts node and loads the parser). */
const SLOW = 90_000
const LONG_TEST = 240_000
const DESCRIPTION = 'Push\nReason: allowed by rule "git push *"\x1b[8m\r\u202e'

beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-approval-')))
  writeFileSync(join(dir, 'long.txt'), Array.from({ length: 500 }, (_, i) => `line ${i + 1}\n`).join(''))
  policy = join(dir, 'policy.json')
  writeFileSync(policy, JSON.stringify({ allow: ['less *', 'ls *'], ask: ['git push *'], interactive: ['less *'] }))
  oldPolicy = join(dir, 'old-policy.json')
  writeFileSync(oldPolicy, JSON.stringify({ default: 'allow', allow: ['less *'] }))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `dsh-bash mcp --policy FILE` with a client that declines every elicitation and keeps its messages. */
async function declining(policyFile: string) {
  const server = await startStdio(['--policy', policyFile, '--workdir', dir], { capabilities: { elicitation: {} } })
  const asked: string[] = []
  server.client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request.params.message)
    return { action: 'decline' }
  })
  return { server, asked }
}

describe('MCP: the person sees the whole line and every command', () => {
  it('the elicitation holds the whole line, both commands and the escaped description; a longer line is refused unasked', async () => {
    const { server, asked } = await declining(policy)
    try {
      expect(await call(server.client, 'bash', { command: LINE, description: DESCRIPTION })).toEqual({
        texts: ['Error: rejected by the user: command needs approval (rule "git push *"): git push origin main'],
        isError: true,
      })
      expect(asked).toEqual([`Allow this call? ${PAGE}`])
      const long = `git push origin main # ${'x'.repeat(8000)}\ncp f /tmp/m`
      const refused = await bash(server.client, long)
      expect(refused.texts[0]).toMatch(
        /^Error: denied: the call is too long to show for approval \(\d+ characters, at most 8000\): split it into shorter calls: command needs approval \(rule "git push \*"\): git push origin main$/,
      )
      expect(asked).toHaveLength(1)
      expect(existsSync('/tmp/m')).toBe(false)
    } finally {
      await server.close()
    }
  }, LONG_TEST)
})

describe('the REPL: the same page before its y/N', () => {
  it('a :call with a two-command line and a hostile description shows both commands, escaped', async () => {
    const proc = spawn(process.execPath, [MAIN, 'repl', '--policy', policy, '--workdir', dir], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const exited = new Promise((resolve) => proc.once('exit', resolve))
    proc.stdin.write(`:call bash ${JSON.stringify({ command: LINE, description: DESCRIPTION })}\n`)
    await waitFor('the prompt', () => out.includes('[y/N] '), SLOW)
    proc.stdin.write('n\n')
    await waitFor('the refusal', () => out.includes('Error: rejected'), SLOW)
    proc.stdin.end()
    expect(await exited).toBe(0)
    expect(out).toBe(
      `approval needed for ${PAGE}\nallow once? [y/N] ` +
        'Error: rejected by the user: command needs approval (rule "git push *"): git push origin main\n',
    )
  }, LONG_TEST)
})

const hasLess = spawnSync('less', ['--version']).status === 0
if (!hasLess) console.warn('[cli approval] skipped: the secure-less tests need less (.ci/run installs it)')

describe('interactive tasks under a policy (issue 25, row 3)', () => {
  it('an old policy asks before an interactive less; the same line without a terminal needs no question', async () => {
    const { server: old, asked } = await declining(oldPolicy)
    try {
      expect(await bash(old.client, 'less long.txt', { run_in_background: true, interactive: true })).toEqual({
        texts: ['Error: rejected by the user: command needs approval (interactive: no "interactive" rule allows it): less long.txt'],
        isError: true,
      })
      expect(asked[0]).toContain('\nArguments: {"run_in_background":true,"interactive":true}\n')
      // The same line without a terminal needs no question.
      expect(await bash(old.client, 'less long.txt')).toMatchObject({ isError: false })
      expect(asked).toHaveLength(1)
    } finally {
      await old.close()
    }
  }, LONG_TEST)

  it.skipIf(!hasLess)("an allowed interactive less runs in its secure mode: !, | and v run nothing", async () => {
    const { server, asked } = await declining(policy)
    try {
      // Each escape in a fresh less: `!cmd` (shell), `|<mark>cmd` (pipe), `v` then vi's `:!cmd` (editor).
      // The key alone first: secure less answers it at once; the rest is typed as the attack goes on.
      const attacks = [['!', 'touch made-by-bang\n'], ['|', '.touch made-by-pipe\n'], ['v', ':!touch made-by-editor\n']]
      for (const keys of attacks) {
        const started = await bash(server.client, 'less long.txt', { run_in_background: true, interactive: true })
        const id = /started background task (bash-\d+)/.exec(started.texts[0])?.[1]
        expect(id, started.texts[0]).toBeDefined()
        await waitFor('less to draw', async () => (await call(server.client, 'bash_input', { task_id: id, text: '', wait_ms: 500 })).texts[0].includes('line 1\n'), SLOW)
        const answers: string[] = []
        for (const text of keys) answers.push((await call(server.client, 'bash_input', { task_id: id, text, wait_ms: 1500 })).texts[0])
        expect(answers[0]).toContain('Command not available')
        await call(server.client, 'bash_kill', { task_id: id })
      }
      expect(asked).toEqual([])
      for (const made of ['made-by-bang', 'made-by-pipe', 'made-by-editor']) expect(existsSync(join(dir, made)), made).toBe(false)
    } finally {
      await server.close()
    }
  }, LONG_TEST)

  it.skipIf(!hasLess)('control: the same keys in a less without LESSSECURE do run the commands (the test above can fail)', async () => {
    const instance = await loadExecutorPlugin(LocalExecutor, { graceMs: 300 })
    const executor = instance.executor
    try {
      for (const [keys, made] of [['!touch control-bang\n', 'control-bang'], ['|.touch control-pipe\n', 'control-pipe']] as const) {
        // A trusted caller's env wins over TERMINAL_ENV: this turns the secure mode off.
        const task = executor.start(executor.resolve({ command: 'less long.txt', workdir: dir, interactive: true, env: { LESSSECURE: '' } }))
        await waitFor('less to draw', () => executor.readOutput(task.id).delta.includes('line 1\n') || executor.get(task.id)?.status !== 'running', SLOW)
        await executor.write(task.id, keys)
        await waitFor(`${made} to be made`, () => existsSync(join(dir, made)), SLOW)
        await executor.kill(task.id)
      }
    } finally {
      await instance.dispose()
    }
  }, LONG_TEST)
})
