/**
 * The MCP servers bench/peers.mjs measures beside dsh-bash, each over stdio with the SDK client:
 *
 * - `mcp-server-commands` (its `run_command`: Node's `exec` of `/bin/sh -c`, 1 MiB `maxBuffer`),
 *   installed with `npm install mcp-server-commands` in a directory outside the repository, named by
 *   `DSH_BENCH_COMMANDS=<dir>` (the same variable as bench/overhead.mjs);
 * - `desktop-commander` (`@wonderwhy-er/desktop-commander`, its `start_process`), installed the same
 *   way and named by `DSH_BENCH_DESKTOP_COMMANDER=<dir>`; run with a home directory of its own (its
 *   config: telemetry off, `/bin/sh` as the shell, so no login shell), telemetry also off by its
 *   environment variable and its feature-flag URL pointed at a closed local port (nothing leaves
 *   the machine);
 * - `naive` (lib/naive-server.mjs, always): spawn, keep everything, return everything.
 *
 * Each starter returns {name, pid, call(command) → {text, isError}, close()} or {why} when it
 * cannot be measured here.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { CLI_MAIN, commandsServer } from './mcp.mjs'

/** Per call: a slow peer must not stop the run (the SDK's default is 60 s). */
const OPTIONS = { timeout: 180_000 }

const NAIVE = fileURLToPath(new URL('./naive-server.mjs', import.meta.url))
const FLOOR = fileURLToPath(new URL('./spawn-floor.mjs', import.meta.url))

/**
 * `spawn`, the floor: lib/spawn-floor.mjs, a Node process that spawns bash itself and keeps every
 * byte. Its answers carry `length` (characters of all the text) and `text` (its first and last 300
 * characters, joined by ` … `).
 */
export async function startSpawnFloor() {
  const child = spawn(process.execPath, [FLOOR], { stdio: ['pipe', 'pipe', 'inherit'] })
  const waiting = new Map()
  let next = 0
  createInterface({ input: child.stdout }).on('line', (line) => {
    const answer = JSON.parse(line)
    waiting.get(answer.id)?.({ text: `${answer.head} … ${answer.tail}`, length: answer.length, isError: answer.isError })
    waiting.delete(answer.id)
  })
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject))
  return {
    name: 'spawn',
    pid: child.pid,
    call(command) {
      const id = next++
      return new Promise((resolve) => {
        waiting.set(id, resolve)
        child.stdin.write(`${JSON.stringify({ id, command })}\n`)
      })
    },
    async close() {
      child.stdin.end()
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)))
    },
  }
}

/** The bin script of an npm package installed under `dir`, or {why}. */
function installed(dir, pkgName, variable) {
  if (!dir) return { why: `not measured: ${pkgName} is not installed (npm install ${pkgName} in a temp dir, then ${variable}=<that dir>)` }
  const pkg = join(dir, 'node_modules', ...pkgName.split('/'), 'package.json')
  if (!existsSync(pkg)) return { why: `not measured: ${pkg} does not exist (${variable}=${dir})` }
  const meta = JSON.parse(readFileSync(pkg, 'utf8'))
  const bin = typeof meta.bin === 'string' ? meta.bin : (meta.bin?.[pkgName.split('/').pop()] ?? Object.values(meta.bin ?? {})[0])
  if (!bin) return { why: `not measured: ${pkg} names no bin` }
  return { main: join(dir, 'node_modules', ...pkgName.split('/'), bin), version: meta.version }
}

async function connect(name, { args, cwd, env = process.env, cleanup = () => {} }, call) {
  const transport = new StdioClientTransport({ command: process.execPath, args, cwd, env: { ...env }, stderr: 'pipe' })
  let stderr = ''
  transport.stderr?.on('data', (chunk) => {
    if (stderr.length < 20_000) stderr += chunk
  })
  const client = new Client({ name: 'dsh-bench-peers', version: '0.0.0' })
  try {
    await client.connect(transport)
  } catch (error) {
    cleanup()
    throw new Error(`${name} did not start: ${error.message}\n${stderr}`)
  }
  const text = (result) => (result.content ?? []).map((c) => c.text ?? '').join('\n')
  return {
    name,
    pid: transport.pid,
    async call(command) {
      try {
        const result = await call(client, command)
        return { text: text(result), isError: result.isError === true }
      } catch (error) {
        // A timeout or a protocol error is an answer too: a wrong one.
        return { text: `call failed: ${error.message}`, isError: true }
      }
    },
    async close() {
      await client.close().catch(() => {})
      cleanup()
    },
  }
}

/** dsh-bash: `node packages/cli/dist/main.js mcp` (or `DSH_BENCH_CLI=<main.js>`, another build). */
export function startDsh(main = process.env.DSH_BENCH_CLI ?? CLI_MAIN) {
  const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-peers-'))
  return connect('dsh-bash', { args: [main, 'mcp', '--workdir', workspace], cwd: workspace, cleanup: () => rmSync(workspace, { recursive: true, force: true }) }, (client, command) =>
    client.callTool({ name: 'bash', arguments: { command, description: 'bench' } }, undefined, OPTIONS),
  )
}

export function startNaive() {
  return connect('naive', { args: [NAIVE], cwd: tmpdir() }, (client, command) => client.callTool({ name: 'run', arguments: { command } }, undefined, OPTIONS))
}

/** mcp-server-commands, or {why}. */
export async function startCommands() {
  const found = commandsServer()
  if (found.why) return { why: found.why }
  const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-commands-'))
  return connect('mcp-server-commands', { args: [found.main], cwd: workspace, cleanup: () => rmSync(workspace, { recursive: true, force: true }) }, (client, command) =>
    client.callTool({ name: 'run_command', arguments: { command } }, undefined, OPTIONS),
  )
}

/** Desktop Commander, or {why}. */
export async function startDesktopCommander(dir = process.env.DSH_BENCH_DESKTOP_COMMANDER) {
  const found = installed(dir, '@wonderwhy-er/desktop-commander', 'DSH_BENCH_DESKTOP_COMMANDER')
  if (found.why) return { why: found.why }
  const home = mkdtempSync(join(tmpdir(), 'dsh-bench-dc-'))
  mkdirSync(join(home, '.claude-server-commander'))
  writeFileSync(join(home, '.claude-server-commander', 'config.json'), JSON.stringify({ telemetryEnabled: false, defaultShell: '/bin/sh' }))
  const env = { ...process.env, HOME: home, DESKTOP_COMMANDER_DISABLE_TELEMETRY: '1', DC_FLAG_URL: 'http://127.0.0.1:9/flags' }
  return connect('desktop-commander', { args: [found.main], cwd: home, env, cleanup: () => rmSync(home, { recursive: true, force: true }) }, (client, command) =>
    client.callTool({ name: 'start_process', arguments: { command, timeout_ms: 120_000 } }, undefined, OPTIONS),
  )
}
