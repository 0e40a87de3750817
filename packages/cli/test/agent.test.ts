import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { MAIN, marker, pidsWith, ROOT, waitFor } from './helpers.js'

/** What the fake model server received: one entry per request. */
interface Received {
  url: string
  headers: IncomingMessage['headers']
  body: any
}

type Reply = { status?: number; body: unknown }
type Step = (received: Received, all: Received[]) => Reply | Promise<Reply>

/** Variables the CLI reads: never inherited from the machine running the tests. */
const MODEL_ENV = ['DSH_MODEL_BASE_URL', 'OPENAI_BASE_URL', 'DSH_MODEL', 'OPENAI_MODEL', 'DSH_MODEL_API_KEY', 'OPENAI_API_KEY']

let server: Server | undefined
const children: ChildProcess[] = []

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  if (server) {
    server.closeAllConnections()
    server.close()
    await once(server, 'close')
    server = undefined
  }
})

/**
 * A small chat-completions server on 127.0.0.1 (port 0): each POST gets the next scripted reply;
 * once the script is exhausted it answers 500.
 */
async function serve(steps: Step[]) {
  const received: Received[] = []
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8')
    const entry: Received = { url: req.url ?? '', headers: req.headers, body: text ? JSON.parse(text) : undefined }
    received.push(entry)
    const step = steps[received.length - 1]
    let reply: Reply
    try {
      reply = step ? await step(entry, received) : { status: 500, body: { error: 'script exhausted' } }
    } catch (error) {
      reply = { status: 500, body: { error: String(error) } }
    }
    if (res.destroyed) return
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' })
    res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body))
  }
  // A request that fails here (an aborted body, bad JSON) ends its connection instead of
  // becoming an unhandled rejection in the test run.
  server = createServer((req, res) => {
    answer(req, res).catch((error: Error) => res.destroy(error))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return { baseUrl: `http://127.0.0.1:${port}/v1`, received }
}

function completion(message: Record<string, unknown>): Reply {
  return {
    body: {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      model: 'test',
      choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
    },
  }
}

function toolCall(id: string, name: string, args: Record<string, unknown>): Reply {
  return completion({ tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] })
}

function answer(content: string): Reply {
  return completion({ content })
}

/** The content of the tool message answering `id` in a request. */
function toolResult(received: Received, id: string): string {
  const message = received.body.messages.find((m: any) => m.role === 'tool' && m.tool_call_id === id)
  if (!message) throw new Error(`no tool message for ${id}`)
  return message.content
}

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const result: NodeJS.ProcessEnv = { ...process.env }
  for (const name of MODEL_ENV) delete result[name]
  return { ...result, ...extra }
}

/** Runs the real built CLI (`node dist/main.js agent ARGS`) without blocking the fake server. */
function startAgent(args: string[], options: { env?: Record<string, string>; input?: string; keepStdinOpen?: boolean } = {}) {
  const proc = spawn(process.execPath, [MAIN, 'agent', ...args], { cwd: ROOT, env: env(options.env), stdio: ['pipe', 'pipe', 'pipe'] })
  children.push(proc)
  let stdout = ''
  let stderr = ''
  proc.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  if (!options.keepStdinOpen) proc.stdin!.end(options.input ?? '')
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.once('close', (code) => resolve({ code, stdout, stderr })),
  )
  return { proc, exited, stdout: () => stdout, stderr: () => stderr }
}

function runAgent(args: string[], options: { env?: Record<string, string>; input?: string } = {}) {
  return startAgent(args, options).exited
}

describe('dsh-bash agent against an OpenAI-compatible server', () => {
  let dir: string

  beforeAll(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-agent-')))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('runs the loop: a bash call, then the final answer on stdout; flags win over the environment', async () => {
    const { baseUrl, received } = await serve([
      () => toolCall('call_1', 'bash', { command: 'echo hello > f.txt; cat f.txt', description: 'Write and read a file' }),
      (request) => answer(`The file says: ${toolResult(request, 'call_1').trim()}`),
    ])
    const result = await runAgent(
      ['--base-url', baseUrl, '--model', 'test', '--api-key-env', 'MY_TEST_KEY', '--workdir', dir, '--system', 'Be brief.', 'write', 'a', 'file'],
      { env: { MY_TEST_KEY: 'sk-test-123', DSH_MODEL: 'not-this-model', DSH_MODEL_BASE_URL: 'http://127.0.0.1:1/not-this-url', DSH_MODEL_API_KEY: 'not-this-key' } },
    )
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('The file says: hello\n')
    expect(readFileSync(join(dir, 'f.txt'), 'utf8')).toBe('hello\n')

    expect(received).toHaveLength(2)
    for (const request of received) {
      expect(request.url).toBe('/v1/chat/completions')
      expect(request.headers.authorization).toBe('Bearer sk-test-123')
      expect(request.body.model).toBe('test')
      expect(request.body.tools.map((tool: any) => [tool.type, tool.function.name])).toEqual([
        ['function', 'bash'],
        ['function', 'bash_output'],
        ['function', 'bash_kill'],
        ['function', 'bash_input'],
      ])
      expect(request.body.tools[0].function.parameters.required).toEqual(['command', 'description'])
    }
    expect(received[0].body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'write a file' },
    ])
    expect(received[1].body.messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: 'echo hello > f.txt; cat f.txt', description: 'Write and read a file' }) } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'hello\n' },
    ])
    // stderr: the call and an excerpt of its result, for a person to follow; never the key.
    expect(result.stderr).toBe('$ echo hello > f.txt; cat f.txt\n  hello\n')
    expect(result.stdout + result.stderr).not.toContain('sk-test-123')
  })

  it('reads the model settings from the environment and the prompt from stdin (-)', async () => {
    const { baseUrl, received } = await serve([() => answer('Nothing to do.')])
    const result = await runAgent(['--workdir', dir, '-'], {
      env: { DSH_MODEL_BASE_URL: baseUrl, OPENAI_MODEL: 'env-model', OPENAI_API_KEY: 'sk-env' },
      input: 'first line\nsecond line\n',
    })
    expect(result).toEqual({ code: 0, stdout: 'Nothing to do.\n', stderr: '' })
    expect(received).toHaveLength(1)
    expect(received[0].body.model).toBe('env-model')
    expect(received[0].headers.authorization).toBe('Bearer sk-env')
    expect(received[0].body.messages).toEqual([{ role: 'user', content: 'first line\nsecond line' }])
  })

  it('an HTTP 500 is a failure (exit 1) naming the URL and the status; no key, no Authorization header', async () => {
    const { baseUrl, received } = await serve([() => ({ status: 500, body: { error: 'model crashed' } })])
    const result = await runAgent(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, 'hello'])
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `dsh-bash: model request to ${baseUrl}/chat/completions failed: HTTP 500 Internal Server Error: {"error":"model crashed"}\n`,
    })
    expect(received).toHaveLength(1)
    expect(received[0].headers.authorization).toBeUndefined()
  })

  it('--max-steps bounds the model requests (exit 1)', async () => {
    const again = () => toolCall('call_x', 'bash', { command: 'echo again', description: 'Say it again' })
    const { baseUrl, received } = await serve([again, again, again])
    const result = await runAgent(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, '--max-steps', '2', 'loop'])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toBe(
      '$ echo again\n  again\n$ echo again\n  again\ndsh-bash: agent "agent" stopped after 2 model requests (maxSteps) without a final answer\n',
    )
    expect(received).toHaveLength(2)
  })

  it('a background notice is admitted into the next request; tasks still running at the end are killed', async () => {
    const tag = marker()
    const gate = `gate-${tag}`
    const background = `while [ ! -e ${gate} ]; do sleep 0.05; done; echo from-background`
    const notice = 'background bash task bash-1 finished [status: completed, exit code: 0]. Read its output with bash_output.'
    let agent: ReturnType<typeof startAgent> | undefined
    const { baseUrl, received } = await serve([
      () => toolCall('c1', 'bash', { command: background, description: 'Start a task', run_in_background: true }),
      // The task ends only now, after this request was sent; answered once the CLI has shown the
      // notice, which is then queued for the next request.
      async () => {
        writeFileSync(join(dir, gate), '')
        await waitFor('the notice on stderr', () => agent!.stderr().includes('[notice]'))
        return toolCall('c2', 'bash_output', { task_id: 'bash-1' })
      },
      () => toolCall('c3', 'bash', { command: `exec -a ${tag} sleep 300`, description: 'Start a long task', run_in_background: true }),
      () => answer('done'),
    ])
    agent = startAgent(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, 'go'])
    const result = await agent.exited
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('done\n')
    expect(received).toHaveLength(4)
    const notices = (request: Received) => request.body.messages.filter((m: any) => m.role === 'user' && m.content === notice).length
    expect(received.map(notices)).toEqual([0, 0, 1, 1])
    expect(toolResult(received[2], 'c2')).toBe('from-background\n[status: completed, exit code: 0]')
    expect(result.stderr).toBe(
      `$ ${background}  [background]\n  started background task bash-1\n` +
        `[notice] ${notice}\n` +
        'bash_output bash-1\n  from-background\n  [status: completed, exit code: 0]\n' +
        `$ exec -a ${tag} sleep 300  [background]\n  started background task bash-2\n` +
        'dsh-bash: killing 1 running background task(s)\n',
    )
    expect(pidsWith(tag)).toEqual([])
  })

  it('an ask of the policy is denied without a terminal, with the reason', async () => {
    const policy = join(dir, 'policy.json')
    writeFileSync(policy, JSON.stringify({ default: 'allow', ask: ['touch *'] }))
    const { baseUrl } = await serve([
      () => toolCall('c1', 'bash', { command: 'touch asked.txt', description: 'Touch a file' }),
      (request) => answer(toolResult(request, 'c1')),
    ])
    const result = await runAgent(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, '--policy', policy, 'touch it'])
    const denial = 'Error: denied: approval unavailable: command needs approval (rule "touch *"): touch asked.txt'
    expect(result).toEqual({ code: 0, stdout: `${denial}\n`, stderr: `$ touch asked.txt\n  ${denial}\n` })
    expect(existsSync(join(dir, 'asked.txt'))).toBe(false)
  })

  // `script` (util-linux) gives the CLI a terminal on stdin: the y/N prompt of the REPL.
  const hasScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0
  /** Runs `dsh-bash agent ARGS` in a terminal, answers the approval prompt with `reply`; stdout and stderr together. */
  const inTerminal = async (args: string[], reply: string) => {
    const quote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`
    const command = [process.execPath, MAIN, 'agent', ...args]
    const proc = spawn('script', ['-qefc', command.map(quote).join(' '), '/dev/null'], { cwd: ROOT, env: env(), stdio: ['pipe', 'pipe', 'pipe'] })
    children.push(proc)
    let out = ''
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => proc.once('close', resolve))
    // An upper bound for a saturated machine (node starts, the policy's parser loads).
    await waitFor('the approval prompt', () => out.includes('allow once? [y/N] '), 90_000)
    proc.stdin.write(`${reply}\n`)
    const code = await exited
    // Through the terminal: stdout and stderr together, with CRLF line ends.
    return { code, out: out.replace(/\r\n/g, '\n') }
  }

  it.skipIf(!hasScript)('an ask of the policy is a y/N prompt when stdin is a terminal', async () => {
    const policy = join(dir, 'policy-tty.json')
    writeFileSync(policy, JSON.stringify({ default: 'allow', ask: ['touch *'] }))
    const { baseUrl } = await serve([
      () => toolCall('c1', 'bash', { command: 'touch tty-made.txt && echo done', description: 'Touch a file' }),
      (request) => answer(`result: ${toolResult(request, 'c1').trim()}`),
      () => toolCall('c2', 'bash', { command: 'touch tty-refused.txt', description: 'Touch a file' }),
      (request) => answer(`result: ${toolResult(request, 'c2').trim()}`),
    ])
    const args = ['--base-url', baseUrl, '--model', 'test', '--workdir', dir, '--policy', policy, 'touch it']

    const allowed = await inTerminal(args, 'y')
    expect(allowed.code).toBe(0)
    // On a terminal the prompt first resets the attributes and the character set earlier output may have changed.
    expect(allowed.out).toContain(
      '\x1b[0m\x1b(B\x0fapproval needed for bash: touch tty-made.txt && echo done\nDescription: Touch a file\n' +
        'Reason: command needs approval (rule "touch *"): touch tty-made.txt\nallow once? [y/N] ',
    )
    expect(allowed.out.endsWith('  done\nresult: done\n')).toBe(true)
    expect(existsSync(join(dir, 'tty-made.txt'))).toBe(true)

    const refused = await inTerminal(args, 'n')
    expect(refused.code).toBe(0)
    expect(refused.out.endsWith('result: Error: rejected by the user: command needs approval (rule "touch *"): touch tty-refused.txt\n')).toBe(true)
    expect(existsSync(join(dir, 'tty-refused.txt'))).toBe(false)
  }, 240_000)

  it.skipIf(!hasScript)('the prompt shows the whole line, every command that needs approval, and escapes model text (issue 25, rows 4 and 11)', async () => {
    const policy = join(dir, 'policy-two.json')
    writeFileSync(policy, JSON.stringify({ allow: ['echo *'], ask: ['touch *'] }))
    const line = `touch two-a.txt # ${'x'.repeat(2100)}\ntouch two-b.txt`
    const description = 'Touch\nReason: allowed by rule "echo *"\x1b[8m\r\u202e'
    const { baseUrl } = await serve([
      () => toolCall('c1', 'bash', { command: line, description }),
      (request) => answer(`result: ${toolResult(request, 'c1').trim()}`),
    ])
    const refused = await inTerminal(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, '--policy', policy, 'touch them'], 'n')
    expect(refused.code).toBe(0)
    const prompt = refused.out.slice(refused.out.indexOf('approval needed for'), refused.out.indexOf('allow once? [y/N] '))
    expect(prompt).toBe(
      `approval needed for bash: touch two-a.txt # ${'x'.repeat(2100)}␊touch two-b.txt\n` +
        '(2 lines: each ␊ is a line break)\n' +
        'Description: Touch␊Reason: allowed by rule "echo *"␛[8m␍\\u{202E}\n' +
        'Reasons (2):\n' +
        '- command needs approval (rule "touch *"): touch two-a.txt\n' +
        '- command needs approval (rule "touch *"): touch two-b.txt\n',
    )
    // The trace line of the call is escaped too (it is printed before the prompt).
    expect(refused.out).toContain(`$ touch two-a.txt # ${'x'.repeat(142)}…\n`)
    // No ESC reaches the terminal but the prompt's own reset.
    expect(refused.out.replaceAll('\x1b[0m\x1b(B\x0f', '')).not.toContain('\x1b')
    expect(existsSync(join(dir, 'two-a.txt'))).toBe(false)
    expect(existsSync(join(dir, 'two-b.txt'))).toBe(false)
  }, 240_000)

  it('SIGINT aborts the turn and kills the running command (exit 130)', async () => {
    const tag = marker()
    const { baseUrl, received } = await serve([() => toolCall('c1', 'bash', { command: `exec -a ${tag} sleep 300`, description: 'Wait a long time' })])
    const agent = startAgent(['--base-url', baseUrl, '--model', 'test', '--workdir', dir, 'wait'])
    await waitFor('the command to run', () => pidsWith(tag).length === 1)
    agent.proc.kill('SIGINT')
    const result = await agent.exited
    expect(result.code).toBe(130)
    expect(result.stdout).toBe('')
    expect(result.stderr.startsWith(`$ exec -a ${tag} sleep 300\n`)).toBe(true)
    expect(result.stderr.endsWith('dsh-bash: SIGINT: the turn was aborted\n')).toBe(true)
    expect(received).toHaveLength(1)
    expect(pidsWith(tag)).toEqual([])
  })
})

describe('dsh-bash agent: help and usage errors', () => {
  function run(args: string[], extraEnv: Record<string, string> = {}, input = '') {
    const result = spawnSync(process.execPath, [MAIN, 'agent', ...args], { cwd: ROOT, env: env(extraEnv), encoding: 'utf8', timeout: 30_000, input })
    return { code: result.status, stdout: result.stdout, stderr: result.stderr }
  }
  const url = ['--base-url', 'http://127.0.0.1:1/v1']
  const model = ['--model', 'm']

  it.each([[['--help']], [['-h']], [[...url, '--max-steps', '0', '--help']]])('%j prints the help (exit 0)', (args) => {
    const { code, stdout, stderr } = run(args)
    expect(code).toBe(0)
    expect(stdout.split('\n')[0]).toBe('Usage: dsh-bash agent [flags] PROMPT')
    expect(stdout).toContain('--api-key-env VAR')
    expect(stderr).toBe('')
  })

  it.each([
    [[...url, 'hi'], {}, '--model: required (or set DSH_MODEL or OPENAI_MODEL)'],
    [[...model, 'hi'], {}, '--base-url: required (or set DSH_MODEL_BASE_URL or OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1'],
    [['--base-url', 'ftp://host/v1', ...model, 'hi'], {}, '--base-url: expected an http(s) URL such as http://127.0.0.1:8000/v1, got "ftp://host/v1"'],
    [[...model, 'hi'], { OPENAI_BASE_URL: 'localhost:8000' }, 'OPENAI_BASE_URL: expected an http(s) URL such as http://127.0.0.1:8000/v1, got "localhost:8000"'],
    [[...url, '--model', '', 'hi'], {}, '--model: expected a model name, got ""'],
    [[...url, ...model, '--max-steps', '0', 'hi'], {}, '--max-steps: expected a positive integer, got "0"'],
    [[...url, ...model, '--max-steps', 'many', 'hi'], {}, '--max-steps: expected a positive integer, got "many"'],
    [[...url, ...model, '--api-key-env', 'DSH_TEST_UNSET_KEY', 'hi'], {}, '--api-key-env: the variable DSH_TEST_UNSET_KEY is not set (or empty)'],
    [[...url, ...model, '--api-key-env', 'sk-123', 'hi'], {}, '--api-key-env: expected the name of an environment variable holding the key, got "sk-123"'],
    [
      [...url, ...model, '--api-key', 'sk-123', 'hi'],
      {},
      '--api-key: not accepted (a key on the command line ends up in shell history and ps); put it in a variable and name it with --api-key-env',
    ],
    [[...url, ...model, '--system', '', 'hi'], {}, '--system: expected the text of a system prompt, got ""'],
    [[...url, ...model], {}, 'missing PROMPT: the request as words, or - to read it from stdin'],
    [[...url, ...model, '-'], {}, 'the prompt read from stdin is empty'],
    [[...url, ...model, '--temperature', '0', 'hi'], {}, 'unknown flag --temperature'],
    [[...url, ...model, '--workdir', '/no/such/dir', 'hi'], {}, '--workdir: no such directory "/no/such/dir"'],
  ] as [string[], Record<string, string>, string][])('%j %j is a usage error (exit 2)', (args, extraEnv, message) => {
    expect(run(args, extraEnv)).toEqual({ code: 2, stdout: '', stderr: `dsh-bash: ${message}\nTry "dsh-bash agent --help".\n` })
  })
})
