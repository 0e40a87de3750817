import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { type CallToolResult, type ElicitResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { bash, connectHttp, MAIN, ROOT, startHttp, startStdio, waitFor } from './helpers.js'

/**
 * Issue 29's audit log through the real `dsh-bash mcp` over stdio with the SDK Client: one line per
 * call (two for a background task) with the facts and none of the output; written before the result
 * is sent (a SIGKILL right after the result finds it); what a person reads stays one line per call;
 * the file is private; a write failure is reported (default) or stops calls (--audit-required).
 */

type Line = Record<string, unknown>
const lines = (file: string): Line[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Line)

// Every test starts the real server, some several times: on a saturated machine (load 100 on 2
// CPUs, `node -e 0` alone 9 s) one start has taken 20 s, so the default 60 s is not enough.
vi.setConfig({ testTimeout: 240_000 })

let dir: string
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-audit-')))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('dsh-bash mcp --audit-log: the acceptance', () => {
  const PROBE = 'probe-value-31337'

  it('an allowed, a denied, an approved, a declined call and a background task: a line each, two for the task, no output', async () => {
    const work = join(dir, 'accept')
    spawnSync('mkdir', ['-p', work])
    const policy = join(dir, 'policy.json')
    writeFileSync(policy, JSON.stringify({ default: 'allow', deny: ['rm -rf *'], ask: ['touch *'] }))
    const log = join(dir, 'accept.log')
    process.env.DSH_AUDIT_PROBE = PROBE
    const server = await startStdio(['--policy', policy, '--workdir', work, '--audit-log', log], { capabilities: { elicitation: {} } })
    delete process.env.DSH_AUDIT_PROBE
    const answers: ElicitResult[] = [{ action: 'accept', content: { allow: true } }, { action: 'decline' }]
    server.client.setRequestHandler(ElicitRequestSchema, () => answers.shift()!)
    let firstFacts: { cpuMs?: number; peakMemoryBytes?: number } = {}
    try {
      // Output that the command text does not contain, and a variable's value.
      const first = (await server.client.callTool({ name: 'bash', arguments: { command: "printf 'out%s\\n' put-one; printenv DSH_AUDIT_PROBE", description: 'Run a test command' } })) as CallToolResult
      expect([first.content, first.isError]).toEqual([[{ type: 'text', text: `output-one\n${PROBE}\n` }], false])
      firstFacts = first.structuredContent as { cpuMs?: number; peakMemoryBytes?: number }
      expect((await bash(server.client, 'rm -rf build')).isError).toBe(true)
      expect(await bash(server.client, "touch approved && printf 'out%s\\n' put-two")).toEqual({ texts: ['output-two\n'], isError: false })
      expect((await bash(server.client, 'touch declined')).texts[0]).toMatch(/^Error: rejected by the user/)
      const started = await bash(server.client, "sleep 0.3; printf 'out%s\\n' put-three", { run_in_background: true })
      expect(started.texts[0]).toBe('started background task bash-1')
      await waitFor('the task-end line', () => lines(log).length === 6)
    } finally {
      await server.close()
    }

    const text = readFileSync(log, 'utf8')
    for (const never of ['output-one', 'output-two', 'output-three', PROBE]) expect(text).not.toContain(never)
    expect(statSync(log).mode & 0o777).toBe(0o600)
    const [allowed, denied, approved, declined, background, ended] = lines(log)
    // The line carries the CPU time and peak memory the tool reported: numbers where the local
    // executor has cgroup containment (as in CI), null (never 0) where it falls back to a marker.
    expect(allowed.cpuMs).toBe(firstFacts.cpuMs ?? null)
    expect(allowed.peakMemoryBytes).toBe(firstFacts.peakMemoryBytes ?? null)
    const usage = firstFacts.cpuMs === undefined ? null : expect.any(Number)
    const common = { event: 'call', session: 'stdio', client: { name: 'dsh-e2e', version: '1.0.0' }, tool: 'bash', executor: 'local', sandboxMode: null }
    expect(allowed).toEqual({
      ...common,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      callId: 's1-1',
      requestId: expect.any(Number),
      command: "printf 'out%s\\n' put-one; printenv DSH_AUDIT_PROBE",
      arguments: { description: 'Run a test command' },
      workdir: work,
      ran: true,
      policy: { decision: 'allow', rule: null, reasons: [] },
      approvals: [],
      taskId: null,
      status: 'completed',
      exitCode: 0,
      signal: null,
      durationMs: expect.any(Number),
      cpuMs: usage,
      peakMemoryBytes: usage,
      outputBytes: { stdout: 11 + PROBE.length + 1, stderr: 0 },
      isError: false,
      code: null,
    })
    expect(denied).toMatchObject({
      ...common,
      command: 'rm -rf build',
      workdir: work,
      ran: false,
      policy: { decision: 'deny', rule: 'rm -rf *', reasons: ['command denied by rule "rm -rf *": rm -rf build'] },
      approvals: [],
      status: 'error',
      exitCode: null,
      isError: true,
      code: 'DSH_DENIED',
    })
    const ask = (what: string) => `command needs approval (rule "touch *"): touch ${what}`
    expect(approved).toMatchObject({
      ...common,
      command: "touch approved && printf 'out%s\\n' put-two",
      ran: true,
      policy: { decision: 'ask', rule: 'touch *' },
      approvals: [{ asked: true, outcome: 'approved', via: 'mcp-elicitation', reason: ask('approved') }],
      status: 'completed',
      exitCode: 0,
    })
    expect(declined).toMatchObject({
      ...common,
      command: 'touch declined',
      ran: false,
      approvals: [{ asked: true, outcome: 'declined', via: 'mcp-elicitation', reason: ask('declined') }],
      status: 'error',
      code: 'DSH_REJECTED',
    })
    expect(background).toMatchObject({ ...common, arguments: { description: 'Run a test command', run_in_background: true }, status: 'running', taskId: 'bash-1', exitCode: null })
    expect(ended).toEqual({
      time: expect.any(String),
      event: 'task-end',
      session: 'stdio',
      client: common.client,
      callId: background.callId,
      taskId: 'bash-1',
      command: "sleep 0.3; printf 'out%s\\n' put-three",
      workdir: work,
      executor: 'local',
      sandboxMode: null,
      status: 'completed',
      exitCode: 0,
      signal: null,
      reason: null,
      durationMs: expect.any(Number),
      cpuMs: usage,
      peakMemoryBytes: usage,
      outputBytes: { stdout: 13, stderr: 0 },
    })
    expect(ended.durationMs as number).toBeGreaterThanOrEqual(300)
  })

  it('a server killed with SIGKILL the moment a result arrives has already written that call\'s line', async () => {
    const log = join(dir, 'sigkill.log')
    const server = await startStdio(['--workdir', dir, '--audit-log', log])
    let atResult = ''
    try {
      const result = await bash(server.client, 'echo sigkill-probe')
      // Read at once, in the same tick the result arrived, then kill.
      atResult = readFileSync(log, 'utf8')
      process.kill(server.pid, 'SIGKILL')
      expect(result.texts).toEqual(['sigkill-probe\n'])
    } finally {
      await server.close().catch(() => {})
    }
    expect(atResult.split('\n').filter(Boolean).map((l) => JSON.parse(l).command)).toEqual(['echo sigkill-probe'])
    expect(lines(log).map((l) => l.command)).toEqual(['echo sigkill-probe'])
  })
})

describe('dsh-bash mcp --http --audit-log: sessions', () => {
  it("each line names its client's MCP session id; the bearer token is never in the file", async () => {
    const log = join(dir, 'http.log')
    const server = await startHttp(['--workdir', dir, '--audit-log', log])
    try {
      const one = await connectHttp(server.url, server.token)
      const two = await connectHttp(server.url, server.token)
      try {
        await bash(one.client, 'echo one')
        await bash(two.client, 'echo two')
        const ids = [one.transport.sessionId, two.transport.sessionId]
        expect(ids[0]).toMatch(/.{16,}/)
        expect(ids[0]).not.toBe(ids[1])
        expect(lines(log).map((l) => [l.command, l.session, (l.client as { name: string }).name])).toEqual([
          ['echo one', ids[0], 'dsh-e2e-http'],
          ['echo two', ids[1], 'dsh-e2e-http'],
        ])
      } finally {
        await one.close()
        await two.close()
      }
    } finally {
      await server.stop()
    }
    expect(readFileSync(log, 'utf8')).not.toContain(server.token)
  })
})

describe('dsh-bash mcp --audit-log: a reply typed by the person', () => {
  it('bash_input {ask_user}: the question is recorded, the reply typed on the one-time page never', async () => {
    const REPLY = 'typed-reply-8675309'
    const log = join(dir, 'reply.log')
    const server = await startStdio(['--workdir', dir, '--audit-log', log], { capabilities: { elicitation: { url: {} } } })
    server.client.setRequestHandler(ElicitRequestSchema, async (request) => {
      // The person opens the page and types the reply there.
      const url = (request.params as { url: string }).url
      await fetch(url)
      setTimeout(() => void fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ reply: REPLY, action: 'send' }).toString() }), 20)
      return { action: 'accept' }
    })
    try {
      const started = await bash(server.client, "read -s -p 'Password: ' p; echo; echo ${#p}", { run_in_background: true, interactive: true })
      const id = /bash-\d+/.exec(started.texts[0])![0]
      await waitFor('the prompt', async () => (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, text: '' } }) as CallToolResult).content.some((b) => (b as { text: string }).text.includes('Password:')))
      const typed = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password for the test' } })) as CallToolResult
      expect(typed.isError).toBeFalsy()
      await waitFor('the task-end line', () => lines(log).some((l) => l.event === 'task-end'))
      // The control: the reply did reach the program (it prints the length of what it read).
      const read = (await server.client.callTool({ name: 'bash_output', arguments: { task_id: id } })) as CallToolResult
      const seen = [typed, read].flatMap((r) => r.content.map((b) => (b as { text: string }).text)).join('')
      expect(seen).toContain(`\n${REPLY.length}\n`)
    } finally {
      await server.close()
    }
    const text = readFileSync(log, 'utf8')
    expect(text).not.toContain(REPLY)
    // Running or already completed when the call returned: the program ends right after the reply.
    expect(lines(log).find((l) => (l.arguments as { ask_user?: string } | undefined)?.ask_user !== undefined)).toMatchObject({ tool: 'bash_input', arguments: { ask_user: 'Password for the test' }, status: expect.stringMatching(/^(running|completed)$/) })
    expect(lines(log).find((l) => l.event === 'task-end')).toMatchObject({ status: 'completed', exitCode: 0 })
  })
})

describe('dsh-bash mcp --audit-log: a sandbox escalation', () => {
  const sandboxBuilt = existsSync(join(ROOT, 'packages/bash-sandbox/dist/index.js'))
  const bwrapWorks = spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true']).status === 0

  it.runIf(sandboxBuilt && bwrapWorks)("tool-bash's own question is recorded with its answer, and the mode the command ran under", async () => {
    const work = join(dir, 'sandboxed')
    spawnSync('mkdir', ['-p', work])
    const log = join(dir, 'sandbox.log')
    const server = await startStdio(['--executor', 'sandbox', '--workdir', work, '--sandbox-mode', 'read-only', '--network', 'off', '--audit-log', log], { capabilities: { elicitation: {} } })
    const answers: ElicitResult[] = [{ action: 'accept', content: { allow: true } }, { action: 'decline' }]
    server.client.setRequestHandler(ElicitRequestSchema, () => answers.shift()!)
    const escalate = { sandbox_permissions: 'workspace-write', justification: 'write the file' }
    try {
      expect(await bash(server.client, 'echo hi > f', escalate)).toEqual({ texts: ['(no output)'], isError: false })
      expect((await bash(server.client, 'echo again > f', escalate)).isError).toBe(true)
      await bash(server.client, 'true')
    } finally {
      await server.close()
    }
    const why = 'run with sandbox mode "workspace-write" (now "read-only"): write the file'
    const [approved, declined, plain] = lines(log)
    expect(approved).toMatchObject({ executor: 'sandbox', sandboxMode: 'workspace-write', policy: null, approvals: [{ asked: true, outcome: 'approved', via: 'mcp-elicitation', reason: why }], status: 'completed' })
    expect(declined).toMatchObject({ sandboxMode: 'read-only', approvals: [{ asked: true, outcome: 'declined', reason: why }], ran: true, status: 'error' })
    expect(plain).toMatchObject({ sandboxMode: 'read-only', approvals: [], status: 'completed' })
  })
})

describe('dsh-bash mcp --audit-log: what a person reads, and who may read it', () => {
  it('a command with line breaks, NEL, U+2028, ESC and a bidi override is one line, exact once decoded, none of them raw', async () => {
    const log = join(dir, 'hostile.log')
    const command = 'echo one\necho two # \u0085 \u2028 \u2029 \u001b[2J\u001b]0;title\u0007 \u009b31m \u202eevil\u202c \r'
    // The control: JSON alone leaves NEL, U+2028/2029, C1 controls and bidi overrides raw.
    expect(JSON.stringify(command)).toMatch(/[\u0085\u2028\u202e\u009b]/)
    const server = await startStdio(['--workdir', dir, '--audit-log', log])
    try {
      expect((await bash(server.client, command)).texts[0]).toBe('one\ntwo\n')
      await bash(server.client, 'echo after')
    } finally {
      await server.close()
    }
    const raw = readFileSync(log, 'utf8')
    expect(raw.split('\n')).toHaveLength(3)
    expect(raw).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/)
    expect(lines(log).map((l) => l.command)).toEqual([command, 'echo after'])
  })

  it('refuses a file others can read or write, a symbolic link, another user\'s file; a directory is a usage error', () => {
    const start = (...args: string[]) => spawnSync(process.execPath, [MAIN, 'mcp', '--workdir', dir, ...args], { encoding: 'utf8', input: '' })
    const open = join(dir, 'open.log')
    writeFileSync(open, '')
    chmodSync(open, 0o644)
    expect(start('--audit-log', open)).toMatchObject({ status: 1, stderr: `dsh-bash: --audit-log: ${open} can be read or written by other users (mode 0644): make it private (chmod 600 ${open})\n` })
    const link = join(dir, 'link.log')
    symlinkSync(join(dir, 'target.log'), link)
    expect(start('--audit-log', link)).toMatchObject({ status: 1, stderr: `dsh-bash: --audit-log: ${link} is a symbolic link: name the file itself\n` })
    expect(existsSync(join(dir, 'target.log'))).toBe(false)
    if (process.getuid?.() === 0) {
      const theirs = join(dir, 'theirs.log')
      writeFileSync(theirs, '', { mode: 0o600 })
      chownSync(theirs, 65534, 65534)
      expect(start('--audit-log', theirs)).toMatchObject({ status: 1, stderr: `dsh-bash: --audit-log: ${theirs} belongs to another user (uid 65534): it must be yours or root's\n` })
    }
    expect(start('--audit-log', dir)).toMatchObject({ status: 2, stderr: `dsh-bash: --audit-log: "${dir}" is a directory, expected a file\nTry "dsh-bash mcp --help".\n` })
    expect(start('--audit-required')).toMatchObject({ status: 2, stderr: 'dsh-bash: --audit-required: only used with --audit-log FILE\nTry "dsh-bash mcp --help".\n' })
    expect(start('--audit-log', join(dir, 'no/such/dir.log')).stderr).toMatch(/^dsh-bash: --audit-log: cannot open .*no\/such\/dir\.log: ENOENT/)
    // A file it creates is private; an existing private one is appended to.
    const fresh = join(dir, 'fresh.log')
    expect(start('--audit-log', fresh).status).toBe(0)
    expect(statSync(fresh).mode & 0o777).toBe(0o600)
  })
})

/**
 * Write failures, made real: the server runs under a file size limit (RLIMIT_FSIZE, set on the
 * running process with prlimit; SIGXFSZ ignored, as a shell's `trap "" XFSZ` leaves it across exec)
 * and the audit file is at the limit, so every append fails with EFBIG; lifting the limit heals it.
 */
describe('dsh-bash mcp --audit-log: when a line cannot be written', () => {
  async function start(log: string, extra: string[] = []) {
    const transport = new StdioClientTransport({
      command: 'bash',
      args: ['--noprofile', '--norc', '-c', 'trap "" XFSZ; exec "$0" "$@"', process.execPath, MAIN, 'mcp', '--workdir', dir, '--audit-log', log, ...extra],
      env: { ...(process.env as Record<string, string>) },
      stderr: 'pipe',
    })
    let err = ''
    transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()))
    const client = new Client({ name: 'dsh-e2e', version: '1.0.0' }, { capabilities: {} })
    await client.connect(transport)
    const limit = (bytes: number | 'unlimited') => {
      // The soft limit only: lifting it again needs no privilege.
      const result = spawnSync('prlimit', ['--pid', String(transport.pid), `--fsize=${bytes}:unlimited`], { encoding: 'utf8' })
      if (result.status !== 0) throw new Error(`prlimit failed: ${result.stderr}`)
    }
    const run = async (command: string) => {
      const result = (await client.callTool({ name: 'bash', arguments: { command, description: 'Run a test command' } })) as CallToolResult
      return { text: (result.content[0] as { text: string }).text, isError: result.isError === true, code: (result._meta?.['dsh-bash'] as { code?: string } | undefined)?.code }
    }
    return { client, limit, run, stderr: () => err }
  }

  it('by default: reported on stderr once, calls go on; when it heals an audit-gap line counts what was lost', async () => {
    const log = join(dir, 'full.log')
    const server = await start(log)
    try {
      await server.run('echo first')
      server.limit(statSync(log).size)
      expect(await server.run('echo second')).toEqual({ text: 'second\n', isError: false, code: undefined })
      expect(await server.run('echo third')).toEqual({ text: 'third\n', isError: false, code: undefined })
      const reported = server.stderr().match(/audit log: cannot write .*EFBIG: file too large, write; calls go on unrecorded/g)
      expect(reported).toHaveLength(1)
      server.limit('unlimited')
      await server.run('echo fourth')
      await waitFor('the recovery message', () => server.stderr().includes('audit log: writing to'))
    } finally {
      await server.client.close()
    }
    expect(lines(log).map((l) => (l.event === 'audit-gap' ? `gap ${l.lost}` : l.command))).toEqual(['echo first', 'gap 2', 'echo fourth'])
    expect(lines(log)[1].reason).toMatch(/EFBIG: file too large/)
  })

  it('--audit-required: the call whose line fails ran but gets an error; later calls do not run until a line can be written', async () => {
    const log = join(dir, 'required.log')
    const server = await start(log, ['--audit-required'])
    try {
      await server.run('echo first')
      server.limit(statSync(log).size)
      const failed = await server.run(`touch ${join(dir, 'ran-unrecorded')}; echo done`)
      expect(failed.isError).toBe(true)
      expect(failed.code).toBe('DSH_MCP_AUDIT_LOG')
      expect(failed.text).toMatch(/^Error: the audit log could not record this call \(cannot write .*EFBIG: file too large, write\): it ran, but its result is withheld; this server runs nothing more until the audit log can be written$/)
      expect(existsSync(join(dir, 'ran-unrecorded'))).toBe(true)
      const refused = await server.run(`touch ${join(dir, 'never-ran')}`)
      expect(refused.text).toMatch(/^Error: not run: the audit log cannot be written \(cannot write .*EFBIG: file too large, write\), and this server runs nothing it cannot record$/)
      expect(refused.code).toBe('DSH_MCP_AUDIT_LOG')
      expect(existsSync(join(dir, 'never-ran'))).toBe(false)
      server.limit('unlimited')
      expect(await server.run('echo healed')).toEqual({ text: 'healed\n', isError: false, code: undefined })
    } finally {
      await server.client.close()
    }
    // One line lost: the call that ran; the refused one never ran.
    expect(lines(log).map((l) => (l.event === 'audit-gap' ? `gap ${l.lost}` : l.command))).toEqual(['echo first', 'gap 1', 'echo healed'])
  })

  it('a line cut by a failure half way is ended before the next one, so every later line parses', async () => {
    const log = join(dir, 'half.log')
    const server = await start(log)
    try {
      await server.run('echo first')
      // Room for a few bytes of the next line only.
      server.limit(statSync(log).size + 20)
      await server.run('echo second, whose line does not fit')
      server.limit('unlimited')
      await server.run('echo third')
    } finally {
      await server.client.close()
    }
    const raw = readFileSync(log, 'utf8').split('\n')
    expect(raw[1]).toHaveLength(20)
    expect(raw.slice(2).filter(Boolean).map((l) => JSON.parse(l)).map((l) => (l.event === 'audit-gap' ? 'gap' : l.command))).toEqual(['gap', 'echo third'])
    truncateSync(log, 0)
  })
})
