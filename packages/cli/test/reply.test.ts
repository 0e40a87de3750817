import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CallToolResult, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { connectHttp, MAIN, startHttp, startStdio, type StdioServer, waitFor } from './helpers.js'
import { startTty } from './tty.js'
import { commandOfServer } from '@deepseek-ai/dsh-mcp'

const SECRET = 'hunter2-Zq7'
const SECRET_SHA = createHash('sha256').update(`${SECRET}\n`).digest('hex')
const root = process.getuid?.() === 0
const hasSetpriv = spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0
/** Run as a command of a dsh-bash server (an agent running the tests), every reply here would rightly be refused. */
const nested = commandOfServer(process.pid, -1)
if (nested) console.warn(`[reply tests] skipped: this test runs as a command of a dsh-bash server (${nested})`)
/**
 * A test that starts a server and then `dsh-bash reply` six or more times, one after another: at a
 * load average near 100 each start took several seconds and the default 60 s ran out.
 */
const SEQUENTIAL_STARTS_MS = 180_000

/**
 * The acceptance of a secret typed by a person through a client that declares no elicitation
 * (the brief's row 5): the real `dsh-bash mcp` over stdio with the SDK's Client, a `read -s` task,
 * and `dsh-bash reply` on a real terminal (node-pty) in place of the person; then the attacks on
 * the reply desk — a command of the server answering (plain, escaped from its process tree, and
 * with the desk's key by hand), another user — each beside a control that shows it can fail.
 */
describe.skipIf(nested)('dsh-bash reply: a person answers a question the client could not ask', () => {
  let dir: string
  let runtime: string
  let server: StdioServer
  const env = () => ({ DSH_BASH_RUNTIME_DIR: runtime })
  /** Every text the model could read: tool results and log messages. */
  const modelTexts: string[] = []

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-reply-')))
    // mkdtemp makes it 0700: as private as the server demands.
    runtime = mkdtempSync(join(tmpdir(), 'dsh-reply-run-'))
    server = await startStdio(['--workdir', dir], { capabilities: {}, env: env() })
  })

  afterAll(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
    rmSync(runtime, { recursive: true, force: true })
  })

  async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult & { text: string }> {
    const result = (await server.client.callTool({ name, arguments: args })) as CallToolResult
    const text = result.content.map((b) => (b as { text: string }).text).join('\n')
    modelTexts.push(text)
    return { ...result, text }
  }

  /** A `read -s` task at its prompt: it prints the hash of what it read, never the reply. */
  async function passwordTask(): Promise<string> {
    const started = await call('bash', {
      command: "read -s -p 'Password: ' p; echo; echo \"$p\" | sha256sum",
      description: 'Ask for a password',
      run_in_background: true,
      interactive: true,
    })
    const id = /bash-\d+/.exec(started.text)![0]
    await waitFor('the password prompt', async () => (await call('bash_output', { task_id: id, wait_ms: 1000 })).text.includes('Password:'))
    return id
  }

  /** Runs `dsh-bash reply ARGS` without a terminal; its output. */
  function reply(args: string[], extraEnv: Record<string, string> = {}) {
    const result = spawnSync(process.execPath, [MAIN, 'reply', ...args], { encoding: 'utf8', env: { ...process.env, ...env(), ...extraEnv }, timeout: 30_000 })
    return { code: result.status, out: result.stdout, err: result.stderr }
  }

  const questionOf = (taskId: string) => {
    const listed = reply(['--list'])
    expect(listed.code, listed.err).toBe(0)
    return new RegExp(`^(\\S+)  task ${taskId} `, 'm').exec(listed.out)![1]
  }

  it('read -s through a client without elicitation: the model is told to ask for dsh-bash reply, a person types it on a terminal, the task reads it', async () => {
    const id = await passwordTask()
    const waiting = await call('bash_input', { task_id: id, ask_user: 'Password for the test' })
    expect(waiting.isError).toBeFalsy()
    expect(waiting.text.split('\n')[0]).toBe(
      `[waiting for the user's reply to task ${id}: this client cannot ask them, so they type it by running "dsh-bash reply" in a terminal on the server's machine; tell them so, then wait with bash_output. The request is withdrawn after 300s, when the task ends, or when you type text into it]`,
    )
    expect((waiting.structuredContent as { status: string; taskId: string }).status).toBe('running')
    expect(server.stderr()).toContain(
      `dsh-bash: task ${id} waits for your reply (Password for the test): answer it with "dsh-bash reply" in a terminal on this machine within 300s`,
    )

    // The person, on a terminal of their own: sees the question and the command line, types without echo.
    const person = startTty(dir, ['reply'], [SECRET], env())
    try {
      const shown = await person.type('', 'an empty line declines: ')
      expect(shown).toContain('task ' + id + ' needs your reply: Password for the test')
      expect(shown).toContain(`it goes to this program, which the model started: read -s -p 'Password: ' p; echo; echo "$p" | sha256sum`)
      await person.type(`${SECRET}\r`, `sent to task ${id}`)
      expect(await person.exited).toBe(0)
      expect(person.all()).not.toContain(SECRET)
    } finally {
      person.term.kill()
    }

    const done = await waitFor('the task to read it', async () => {
      const read = await call('bash_output', { task_id: id, wait_ms: 2000 })
      return read.text.includes('[status: completed') && read.text
    })
    expect(done).toContain(SECRET_SHA)
    // The session is told how the question ended (on a result, and as a log message).
    expect(modelTexts.join('\n')).toContain(`[reply for task ${id}: the user typed it with dsh-bash reply; it was sent to the terminal and is not shown]`)
    expect(modelTexts.join('\n') + server.logs.join('\n')).not.toContain(SECRET)
    expect(server.stderr()).not.toContain(SECRET)
    // Answered once: it is gone.
    expect(reply(['--list']).out).toContain('no question waits for a reply')
  })

  it('the question and the command line reach the person\'s terminal with control characters, line breaks and bidi overrides visible', async () => {
    const started = await call('bash', {
      command: "read -s -p 'Password: ' p # \u001b]0;owned\u0007 \u202Eeulav\n: a second line",
      description: 'Ask with a hostile command line',
      run_in_background: true,
      interactive: true,
    })
    const id = /bash-\d+/.exec(started.text)![0]
    try {
      await waitFor('the password prompt', async () => (await call('bash_output', { task_id: id, wait_ms: 1000 })).text.includes('Password:'))
      await call('bash_input', { task_id: id, ask_user: 'Password\u001b[2J for \u202Esudo' })
      const listed = reply(['--list'])
      expect(listed.code, listed.err).toBe(0)
      const ours = listed.out.slice(listed.out.indexOf(`task ${id} `))
      expect(ours).toContain('  asks: Password␛[2J for \\u{202E}sudo\n')
      expect(ours).toContain("  goes to this program, which the model started: read -s -p 'Password: ' p # ␛]0;owned␇ \\u{202E}eulav␊: a second line")
      expect(listed.out).not.toMatch(/[\u001b\u0007\u202E]/)
      // Control: the desk hands the command line raw and whole (to this user, from outside the server); the CLI is what shows it safely.
      const desk = JSON.parse(readFileSync(join(runtime, readdirSync(runtime).find((name) => name.startsWith('reply-'))!), 'utf8')) as { port: number; key: string }
      const raw = await (await fetch(`http://127.0.0.1:${desk.port}/dsh-bash/replies`, { headers: { authorization: `Bearer ${desk.key}` } })).text()
      expect(JSON.parse(raw).waiting.find((q: { taskId: string }) => q.taskId === id).command).toContain('\u001b]0;owned\u0007 \u202Eeulav\n')
    } finally {
      await call('bash_kill', { task_id: id })
    }
  })

  describe('a command the server runs cannot list or answer; the same from outside can (control)', () => {
    let id: string
    let question: string
    beforeAll(async () => {
      id = await passwordTask()
      await call('bash_input', { task_id: id, ask_user: 'Password' })
      question = questionOf(id)
    })
    afterAll(async () => {
      await call('bash_kill', { task_id: id })
    })

    it('dsh-bash reply run by the model\'s command: refused (it descends from the server)', async () => {
      const plain = await call('bash', { command: `${process.execPath} ${MAIN} reply --list; echo "exit $?"`, description: 'Reply myself' })
      expect(plain.text).toContain('refused: this request comes from a command that a dsh-bash server runs')
      expect(plain.text).toContain('exit 1')
      expect(plain.text).not.toContain(`task ${id}`)
    })

    it('out of the process tree (an orphan of a double fork, setsid) with a cleared environment: still refused (its cgroup)', async () => {
      const out = join(dir, 'escaped.txt')
      // A background task that stays (so its cgroup does), whose orphan replies once its parent is gone.
      const started = await call('bash', {
        command: `( setsid sh -c 'sleep 1; ps -o ppid= -p $$ > ${out}.ppid; exec env -i PATH="$PATH" DSH_BASH_RUNTIME_DIR=${runtime} ${process.execPath} ${MAIN} reply --decline ${question}' > ${out} 2>&1 & ); sleep 30`,
        description: 'Escape and reply',
        run_in_background: true,
      })
      const escaper = /bash-\d+/.exec(started.text)![0]
      try {
        const escapedText = await waitFor('the escaped reply to finish', () => {
          try {
            const text = readFileSync(out, 'utf8')
            return /refused|declined/.test(text) && text
          } catch {
            return false
          }
        })
        // It was an orphan (its parent is init, not the task's shell) when it replied.
        expect(readFileSync(`${out}.ppid`, 'utf8').trim()).toBe('1')
        expect(escapedText).toContain('refused: this request comes from a command that a dsh-bash server runs (process ')
        expect(escapedText).toContain('is in a command cgroup of a dsh-bash executor')
      } finally {
        await call('bash_kill', { task_id: escaper })
      }
    })

    it('the desk key read from its file and used by hand: refused', async () => {
      const file = readdirSync(runtime).find((name) => name.startsWith('reply-'))!
      const byHand = await call('bash', {
        command: `${process.execPath} -e 'const d=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));fetch("http://127.0.0.1:"+d.port+"/dsh-bash/replies/${question}",{method:"POST",headers:{authorization:"Bearer "+d.key,"content-type":"application/json"},body:JSON.stringify({action:"send",reply:"not the person"})}).then(async r=>console.log(r.status,await r.text()))' ${join(runtime, file)}`,
        description: 'Use the key',
      })
      expect(byHand.text).toMatch(/^403 .*refused: this request comes from a command that a dsh-bash server runs/m)
    })

    it('a fake desk that a command sets up (to collect what the person types) is not asked: the person sees only the real question', async () => {
      // A desk of the model's own: listens on loopback, writes its address file, shows a harmless command line.
      const fake = `const fs=require("fs"),http=require("http");const s=http.createServer((q,r)=>{r.writeHead(200,{"content-type":"application/json"});r.end(JSON.stringify({waiting:[{id:"fake0001",taskId:"bash-99",prompt:"Password for sudo",command:"sudo -v",waitedMs:0,leftMs:60000}]}))});s.listen(0,"127.0.0.1",()=>{fs.writeFileSync(process.argv[1]+"/reply-"+process.pid+"-"+s.address().port+".json",JSON.stringify({pid:process.pid,port:s.address().port,key:"k"}),{mode:0o600});console.log("FAKE READY")})`
      const started = await call('bash', { command: `${process.execPath} -e '${fake}' ${runtime}`, description: 'A desk of my own', run_in_background: true })
      const faker = /bash-\d+/.exec(started.text)![0]
      try {
        await waitFor('the fake desk', async () => (await call('bash_output', { task_id: faker, wait_ms: 1000 })).text.includes('FAKE READY'))
        const listed = reply(['--list'])
        expect(listed.out).not.toContain('fake0001')
        expect(listed.err).toMatch(/dsh-bash: not asking the desk of pid \d+: it runs as a command of a dsh-bash server \(process \d+ is in a command cgroup of a dsh-bash executor\)/)
        // Control: the real question is listed beside it.
        expect(listed.out).toContain(`${question}  task ${id} `)
      } finally {
        await call('bash_kill', { task_id: faker })
      }
    })

    it('control: nothing reached the task, and from outside the server the question is there and can be declined', async () => {
      expect((await call('bash_output', { task_id: id })).text).toContain('[status: running]')
      expect(questionOf(id)).toBe(question)
      const declined = reply(['--decline', question])
      expect(declined.out).toContain(`declined: nothing was sent to task ${id}`)
      expect(declined.code).toBe(0)
      await waitFor('the declined notice', async () =>
        (await call('bash_output', { task_id: id })).text.includes(`[reply for task ${id}: the user declined it with dsh-bash reply; nothing was sent]`),
      )
    })
  })

  it.skipIf(!root || !hasSetpriv)('another user cannot use the desk: not through the directory, not with the key by hand (the kernel names its uid); the owner can (control)', async () => {
    const id = await passwordTask()
    await call('bash_input', { task_id: id, ask_user: 'Password' })
    const file = join(runtime, readdirSync(runtime).find((name) => name.startsWith('reply-'))!)
    const desk = JSON.parse(readFileSync(file, 'utf8')) as { port: number; key: string }
    const nobody = ['--reuid=65534', '--regid=65534', '--clear-groups']

    const viaDir = spawnSync('setpriv', [...nobody, process.execPath, MAIN, 'reply', '--list'], { encoding: 'utf8', env: { ...process.env, ...env() }, timeout: 30_000 })
    expect(viaDir.status).toBe(1)
    expect(viaDir.stderr).toContain(`${runtime} belongs to another user (uid 0)`)

    // Handed the key (as if it had leaked), the request still comes from uid 65534.
    const script = `fetch("http://127.0.0.1:${desk.port}/dsh-bash/replies",{headers:{authorization:"Bearer "+process.env.KEY}}).then(async r=>console.log(r.status,await r.text()))`
    const byHand = spawnSync('setpriv', [...nobody, process.execPath, '-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH!, KEY: desk.key }, cwd: '/', timeout: 30_000 })
    expect(byHand.stdout).toMatch(/^403 .*refused: this request comes from another user \(uid 65534\)/)
    // Control: the same request from this user, outside the server, lists the question.
    const owner = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env: { PATH: process.env.PATH!, KEY: desk.key }, timeout: 30_000 })
    expect(owner.stdout).toMatch(new RegExp(`^200 .*"taskId":"${id}"`))
    await call('bash_kill', { task_id: id })
  })
})

describe.skipIf(nested)('a client that answers the URL elicitation itself', () => {
  let dir: string
  let runtime: string
  let server: StdioServer | undefined
  afterEach(async () => {
    await server?.close()
    rmSync(dir, { recursive: true, force: true })
    rmSync(runtime, { recursive: true, force: true })
  })

  it.each([
    ['decline', 'declines within milliseconds (as Codex does)'],
    ['cancel', 'cancels within milliseconds (as Claude Code in print mode does)'],
  ] as const)('%s: %s: not reported as the user declining; the question waits for dsh-bash reply', async (action) => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-reply-')))
    runtime = mkdtempSync(join(tmpdir(), 'dsh-reply-run-'))
    server = await startStdio(['--workdir', dir], { capabilities: { elicitation: { url: {} } }, env: { DSH_BASH_RUNTIME_DIR: runtime } })
    let asked = 0
    server.client.setRequestHandler(ElicitRequestSchema, () => {
      asked++
      return { action }
    })
    const started = (await server.client.callTool({
      name: 'bash',
      arguments: { command: "read -s -p 'Password: ' p; echo ${#p}", description: 'Ask', run_in_background: true, interactive: true },
    })) as CallToolResult
    const id = /bash-\d+/.exec((started.content[0] as { text: string }).text)![0]
    await waitFor('the password prompt', async () => {
      const read = (await server!.client.callTool({ name: 'bash_output', arguments: { task_id: id, wait_ms: 1000 } })) as CallToolResult
      return (read.content[0] as { text: string }).text.includes('Password:')
    })
    const result = (await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })) as CallToolResult
    const text = (result.content[0] as { text: string }).text
    expect(asked).toBe(1)
    expect(result.isError).toBeFalsy()
    expect(text).toMatch(
      new RegExp(`^\\[waiting for the user's reply to task ${id}: the client answered the question itself \\("${action}" after \\d+ms\\) without asking them, so they type it by running "dsh-bash reply"`),
    )
    expect(text).not.toMatch(/the user declined/)
    const listed = spawnSync(process.execPath, [MAIN, 'reply', '--list'], { encoding: 'utf8', env: { ...process.env, DSH_BASH_RUNTIME_DIR: runtime }, timeout: 30_000 })
    expect(listed.stdout).toContain(`task ${id} (server pid `)
    await server.client.callTool({ name: 'bash_kill', arguments: { task_id: id } })
  })
})

describe.skipIf(nested)('dsh-bash reply: the other ways it ends', () => {
  it('nothing waits, several wait, no terminal, no directory: exit 1 or 2 with the reason, nothing sent', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-reply-')))
    const runtime = mkdtempSync(join(tmpdir(), 'dsh-reply-run-'))
    const server = await startStdio(['--workdir', dir], { capabilities: {}, env: { DSH_BASH_RUNTIME_DIR: runtime } })
    const run = (args: string[], extra: Record<string, string> = {}) => {
      const result = spawnSync(process.execPath, [MAIN, 'reply', ...args], { encoding: 'utf8', env: { ...process.env, DSH_BASH_RUNTIME_DIR: runtime, ...extra }, timeout: 30_000 })
      return { code: result.status, out: result.stdout, err: result.stderr }
    }
    try {
      expect(run([])).toEqual({ code: 1, out: '', err: 'dsh-bash: no question waits for a reply\n' })
      expect(run([], { DSH_BASH_RUNTIME_DIR: join(runtime, 'none') })).toEqual({
        code: 1,
        out: '',
        err: `dsh-bash: no dsh-bash server of yours has a reply desk on this machine (${join(runtime, 'none')} does not exist)\n`,
      })
      const ids: string[] = []
      for (let i = 0; i < 2; i++) {
        const started = (await server.client.callTool({
          name: 'bash',
          arguments: { command: "read -s -p 'Password: ' p", description: 'Ask', run_in_background: true, interactive: true },
        })) as CallToolResult
        const id = /bash-\d+/.exec((started.content[0] as { text: string }).text)![0]
        await waitFor('the prompt', async () => {
          const read = (await server.client.callTool({ name: 'bash_output', arguments: { task_id: id, wait_ms: 1000 } })) as CallToolResult
          return (read.content[0] as { text: string }).text.includes('Password:')
        })
        await server.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })
        ids.push(id)
      }
      const several = run([])
      expect(several.code).toBe(2)
      expect(several.err).toMatch(/^dsh-bash: 2 questions wait: name one, e\.g\. dsh-bash reply \S+\nTry "dsh-bash reply --help"\.\n$/)
      const question = new RegExp(`^(\\S+)  task ${ids[0]} `, 'm').exec(several.out)![1]
      expect(run([question])).toEqual({ code: 1, out: '', err: 'dsh-bash: dsh-bash reply reads the reply from a terminal, without echo: its input is not a terminal\n' })
      expect(run(['nosuch'])).toMatchObject({ code: 1, err: expect.stringContaining('dsh-bash: no question "nosuch" waits for a reply; waiting: ') })
      // Still waiting: nothing was sent.
      expect(run(['--list']).out).toContain(`task ${ids[0]} `)
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
      rmSync(runtime, { recursive: true, force: true })
    }
  }, SEQUENTIAL_STARTS_MS)

  it('--url: the MCP HTTP server\'s own desk, with its token from the environment; a wrong token is refused', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-reply-')))
    const runtime = mkdtempSync(join(tmpdir(), 'dsh-reply-run-'))
    const token = 'reply-test-token-0123456789abcdef'
    const server = await startHttp(['--workdir', dir], { DSH_BASH_TOKEN: token, DSH_BASH_RUNTIME_DIR: runtime })
    const client = await connectHttp(server.url, token)
    const run = (args: string[], withToken: string) => {
      // No runtime directory: only the URL can find the server.
      const result = spawnSync(process.execPath, [MAIN, 'reply', '--url', server.url, ...args], {
        encoding: 'utf8',
        env: { ...process.env, DSH_BASH_TOKEN: withToken, DSH_BASH_RUNTIME_DIR: join(runtime, 'none') },
        timeout: 30_000,
      })
      return { code: result.status, out: result.stdout, err: result.stderr }
    }
    try {
      const started = (await client.client.callTool({
        name: 'bash',
        arguments: { command: "read -s -p 'Password: ' p; echo; echo \"got ${#p}\"", description: 'Ask', run_in_background: true, interactive: true },
      })) as CallToolResult
      const id = /bash-\d+/.exec((started.content[0] as { text: string }).text)![0]
      await waitFor('the prompt', async () => {
        const read = (await client.client.callTool({ name: 'bash_output', arguments: { task_id: id, wait_ms: 1000 } })) as CallToolResult
        return (read.content[0] as { text: string }).text.includes('Password:')
      })
      const waiting = (await client.client.callTool({ name: 'bash_input', arguments: { task_id: id, ask_user: 'Password' } })) as CallToolResult
      expect((waiting.content[0] as { text: string }).text).toContain("[waiting for the user's reply to task")
      const wrong = run(['--list'], 'not-the-token')
      expect(wrong.code).toBe(1)
      expect(wrong.err).toContain('unauthorized: a valid bearer token is required')
      const listed = run(['--list'], token)
      expect(listed.code, listed.err).toBe(0)
      const question = new RegExp(`^(\\S+)  task ${id} \\(${new URL(server.url).origin.replaceAll('.', '\\.')}\\)`, 'm').exec(listed.out)![1]
      expect(run(['--decline', question], token).out).toContain(`declined: nothing was sent to task ${id}`)
    } finally {
      await client.close()
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
      rmSync(runtime, { recursive: true, force: true })
    }
  }, SEQUENTIAL_STARTS_MS)
})
