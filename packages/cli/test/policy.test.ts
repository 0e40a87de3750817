import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { type ElicitRequest, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bash, connectHttp, MAIN, startHttp, startStdio, waitFor } from './helpers.js'

const ASK = 'command needs approval (rule "touch *"): touch made-by-'

/** Answers elicitations from a queue of results, recording the requests. */
function answer(client: Client, results: ElicitResult[]) {
  const seen: ElicitRequest['params'][] = []
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    seen.push(request.params)
    const next = results.shift()
    if (!next) throw new Error('no answer queued')
    return next
  })
  return seen
}

describe('--policy: asks become elicitations, denials are errors', () => {
  let dir: string
  let policy: string

  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-policy-')))
    policy = join(dir, 'policy.json')
    writeFileSync(policy, JSON.stringify({ default: 'allow', deny: ['rm -rf *'], ask: ['touch *'] }))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('over stdio: yes runs the call once, no and cancel refuse it, a denial needs no question', async () => {
    const server = await startStdio(['--policy', policy, '--workdir', dir], { capabilities: { elicitation: {} } })
    try {
      const seen = answer(server.client, [
        { action: 'accept', content: { allow: true } },
        { action: 'accept', content: { allow: false } },
        { action: 'decline' },
        { action: 'cancel' },
      ])
      expect(await bash(server.client, 'touch made-by-yes && echo made')).toEqual({ texts: ['made\n'], isError: false })
      expect(existsSync(join(dir, 'made-by-yes'))).toBe(true)
      expect(seen[0].mode).toBe('form')
      expect(seen[0].message).toBe(`Allow this call? bash: touch made-by-yes && echo made\nDescription: Run a test command\nReason: ${ASK}yes`)
      expect((seen[0] as { requestedSchema: unknown }).requestedSchema).toMatchObject({ type: 'object', required: ['allow'] })

      expect(await bash(server.client, 'touch made-by-no')).toEqual({ texts: [`Error: rejected by the user: ${ASK}no`], isError: true })
      expect(await bash(server.client, 'touch made-by-decline')).toEqual({ texts: [`Error: rejected by the user: ${ASK}decline`], isError: true })
      expect(await bash(server.client, 'touch made-by-cancel')).toEqual({ texts: [`Error: approval was cancelled: ${ASK}cancel`], isError: true })
      expect(existsSync(join(dir, 'made-by-no'))).toBe(false)

      expect(await bash(server.client, 'rm -rf build')).toEqual({ texts: ['Error: command denied by rule "rm -rf *": rm -rf build'], isError: true })
      expect(await bash(server.client, 'echo allowed')).toEqual({ texts: ['allowed\n'], isError: false })
      expect(seen).toHaveLength(4)
    } finally {
      await server.close()
    }
  })

  it('a client without the elicitation capability gets the ask denied with the reason', async () => {
    const server = await startStdio(['--policy', policy, '--workdir', dir])
    try {
      expect(await bash(server.client, 'touch made-by-nobody')).toEqual({
        texts: [`Error: denied: approval unavailable: ${ASK}nobody`],
        isError: true,
      })
    } finally {
      await server.close()
    }
  })

  it('over HTTP the elicitation goes to the calling session only', async () => {
    const server = await startHttp(['--policy', policy, '--workdir', dir])
    const a = await connectHttp(server.url, server.token, { elicitation: {} })
    const b = await connectHttp(server.url, server.token, { elicitation: {} })
    try {
      const seenA = answer(a.client, [{ action: 'accept', content: { allow: true } }])
      const seenB = answer(b.client, [])
      expect(await bash(a.client, 'touch made-by-http && echo ok')).toEqual({ texts: ['ok\n'], isError: false })
      expect(seenA).toHaveLength(1)
      expect(seenB).toHaveLength(0)
    } finally {
      await a.close()
      await b.close()
      await server.stop()
    }
  })

  it('the REPL asks with a y/n prompt', async () => {
    const proc = spawn(process.execPath, [MAIN, 'repl', '--policy', policy, '--workdir', dir], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const exited = new Promise((resolve) => proc.once('exit', resolve))
    proc.stdin.write('touch made-by-repl && echo done\n')
    await waitFor('the prompt', () => out.includes('[y/N] '))
    proc.stdin.write('y\n')
    await waitFor('the result', () => out.includes('done\n'))
    proc.stdin.write('touch made-by-repl-no\n')
    await waitFor('the second prompt', () => out.split('[y/N] ').length === 3)
    proc.stdin.write('n\n')
    await waitFor('the refusal', () => out.includes('Error: rejected'))
    proc.stdin.end()
    expect(await exited).toBe(0)
    expect(out).toBe(
      `approval needed for bash: touch made-by-repl && echo done\nDescription: Run a command typed in the REPL\nReason: ${ASK}repl\nallow once? [y/N] done\n` +
        `approval needed for bash: touch made-by-repl-no\nDescription: Run a command typed in the REPL\nReason: ${ASK}repl-no\nallow once? [y/N] Error: rejected by the user: ${ASK}repl-no\n`,
    )
    expect(existsSync(join(dir, 'made-by-repl'))).toBe(true)
    expect(existsSync(join(dir, 'made-by-repl-no'))).toBe(false)
  })

  it('a policy file with a mistake is a usage error naming the place (exit 2)', () => {
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, '{"default": "maybe"}')
    const result = spawnSync(process.execPath, [MAIN, 'mcp', '--policy', bad], { encoding: 'utf8', input: '' })
    expect(result.status).toBe(2)
    expect(result.stderr).toBe(`dsh-bash: --policy: ${bad}:1:13: "default" must be one of "allow", "ask", "deny"\nTry "dsh-bash mcp --help".\n`)
  })
})
