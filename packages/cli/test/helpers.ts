import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type CallToolResult, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { unescapeOutput } from '@deepseek-ai/dsh-tool-bash'

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
/** The real, built entry point: the bundle the package ships (`npm run build` makes it). */
export const MAIN = join(ROOT, 'packages/cli/dist/main.js')

if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" before the tests`)

/** A marker unique to one test: put it in a process's argv0 (`exec -a MARKER sleep 300`) to find it in /proc. */
export function marker(): string {
  return `dsh-e2e-${randomUUID().slice(0, 12)}`
}

/** Live (non-zombie) processes whose command line contains `needle`. */
export function pidsWith(needle: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (!cmdline.includes(needle)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      if (state !== 'Z' && state !== 'X') pids.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return pids
}

export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state !== 'Z' && state !== 'X'
  } catch {
    return false
  }
}

/** Polls until `check` returns a truthy value; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

export interface Connected {
  client: Client
  /** Texts of the `notifications/message` logging messages received, in order. */
  logs: string[]
  close(): Promise<void>
}

function track(client: Client): string[] {
  const logs: string[] = []
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(typeof n.params.data === 'string' ? n.params.data : JSON.stringify(n.params.data))
  })
  return logs
}

export interface StdioServer extends Connected {
  transport: StdioClientTransport
  pid: number
  stderr(): string
}

/**
 * Starts `node dist/main.js mcp ARGS` and connects the SDK client over stdio. `env` adds to the
 * environment; `wrap` gives the command line to run instead (given node's: an outer cgroup, strace).
 */
export async function startStdio(
  args: string[] = [],
  options: { cwd?: string; capabilities?: Record<string, unknown>; env?: Record<string, string>; wrap?: (argv: string[]) => string[] } = {},
): Promise<StdioServer> {
  const argv = [process.execPath, MAIN, 'mcp', ...args]
  const [command, ...rest] = options.wrap ? options.wrap(argv) : argv
  const transport = new StdioClientTransport({
    command,
    args: rest,
    cwd: options.cwd ?? ROOT,
    env: { ...(process.env as Record<string, string>), ...(options.env ?? {}) },
    stderr: 'pipe',
  })
  let err = ''
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const client = new Client({ name: 'dsh-e2e', version: '1.0.0' }, { capabilities: options.capabilities ?? {} })
  const logs = track(client)
  await client.connect(transport)
  return { client, transport, logs, pid: transport.pid!, stderr: () => err, close: () => client.close() }
}

export interface HttpServer {
  proc: ChildProcess
  url: string
  token: string
  stderr(): string
  exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts `node dist/main.js mcp --http 127.0.0.1:0 ARGS`; reads the URL (and the generated token) from stderr. */
export async function startHttp(
  args: string[] = [],
  env: Record<string, string> = {},
  /** `detached`: in a session of its own; `wrap`: the command line to run instead (given node's). */
  how: { detached?: boolean; wrap?: (argv: string[]) => string[] } = {},
): Promise<HttpServer> {
  const argv = [process.execPath, MAIN, 'mcp', '--http', '127.0.0.1:0', ...args]
  const [file, ...rest] = how.wrap ? how.wrap(argv) : argv
  const proc = spawn(file, rest, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: how.detached ?? false,
  })
  let err = ''
  proc.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  // A generous wait: on a saturated machine (load 100 on 2 CPUs) `node -e 0` alone took 9 s and this start 21 s.
  let url: string
  try {
    url = await waitFor(
      'the listening line',
      () => {
        if (proc.exitCode !== null) throw new Error(`server exited: ${err}`)
        return /listening on (http:\S+)/.exec(err)?.[1]
      },
      60_000,
    )
  } catch (error) {
    // Nobody else holds it yet: a server that never said where it listens must not outlive the test.
    proc.kill('SIGKILL')
    throw error
  }
  const token = env.DSH_BASH_TOKEN ?? tokenArg(args) ?? (await waitFor('the token line', () => /bearer token: (\S+)/.exec(err)?.[1]))
  return {
    proc,
    url,
    token,
    stderr: () => err,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null) proc.kill(signal)
      return exited
    },
  }
}

/** The token of a `--token-file` argument, read as the server reads it (one line). */
function tokenArg(args: string[]): string | undefined {
  const index = args.indexOf('--token-file')
  return index >= 0 ? readFileSync(args[index + 1], 'utf8').replace(/\r?\n$/, '') : undefined
}

export interface HttpConnected extends Connected {
  transport: StreamableHTTPClientTransport
}

/** An SDK client over Streamable HTTP with the bearer header. */
export async function connectHttp(url: string, token: string, capabilities: Record<string, unknown> = {}): Promise<HttpConnected> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  })
  const client = new Client({ name: 'dsh-e2e-http', version: '1.0.0' }, { capabilities })
  const logs = track(client)
  await client.connect(transport)
  return { client, transport, logs, close: () => client.close() }
}

/**
 * Calls a tool; returns the texts of the blocks and isError. A call with a `timeoutMs` waits for
 * the answer that long and 30 s more (the client's own request timeout is 60 s: a command given
 * 90 s, on a loaded machine, was cut by the client instead of ending by itself).
 */
export async function call(client: Client, name: string, args: Record<string, unknown>) {
  const timeout = typeof args.timeoutMs === 'number' ? Math.max(60_000, args.timeoutMs + 30_000) : undefined
  const result = (await client.callTool({ name, arguments: args }, undefined, timeout === undefined ? undefined : { timeout })) as CallToolResult
  return { texts: result.content.map((block) => (block.type === 'text' ? block.text : `<${block.type}>`)), isError: result.isError === true }
}

/** `bash` with a description (required by the schema). */
export function bash(client: Client, command: string, extra: Record<string, unknown> = {}) {
  return call(client, 'bash', { command, description: 'Run a test command', ...extra })
}

/**
 * A cut result's complete output as a model reads it with its own tools: `bash_output {task_id:
 * PATH, offset}` range after range (each result's last line says which bytes it held), unescaped.
 */
export async function readBack(client: Client, path: string): Promise<string> {
  let whole = ''
  for (let offset = 0, i = 0; i < 10_000; i++) {
    const part = (await client.callTool({ name: 'bash_output', arguments: { task_id: path, offset } })) as CallToolResult
    if (part.isError) throw new Error((part.content[0] as { text: string }).text)
    const text = (part.content[0] as { text: string }).text
    const range = (part.structuredContent as { range: { length: number; size: number } }).range
    const cut = text.lastIndexOf('\n[bytes ')
    // The marker stands on a line of its own: a newline was added only when the range did not end with one.
    const body = unescapeOutput(text.slice(0, cut))
    whole += Buffer.byteLength(body) === range.length ? body : `${body}\n`
    offset += range.length
    if (offset >= range.size) return whole
  }
  throw new Error('readBack: too many ranges')
}
