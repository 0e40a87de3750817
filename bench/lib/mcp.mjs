/** The MCP server over stdio (`packages/cli/dist/main.js mcp`), driven by the SDK client. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

export const CLI_MAIN = fileURLToPath(new URL('../../packages/cli/dist/main.js', import.meta.url))

/** Why the MCP server cannot be measured, or undefined when it can. */
export function mcpUnavailable() {
  if (!existsSync(CLI_MAIN)) return `packages/cli/dist/main.js is not built (the CLI has not landed)`
  return undefined
}

/**
 * Starts `node packages/cli/dist/main.js mcp --workdir <tmp> [extra args]` and connects a client.
 * Returns {client, call(name, args) → {text, isError}, close()}.
 */
export async function startMcp(extraArgs = []) {
  const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-mcp-'))
  return connect([CLI_MAIN, 'mcp', '--workdir', workspace, ...extraArgs], workspace)
}

/**
 * Where `mcp-server-commands` is installed for comparison: `DSH_BENCH_COMMANDS=<dir>`, a directory
 * outside the repository where `npm install mcp-server-commands` was run (never in the lockfile).
 * Returns {main} (its bin script) or {why} (the reason it is not measured).
 */
export function commandsServer(dir = process.env.DSH_BENCH_COMMANDS) {
  if (!dir) return { why: 'not measured: mcp-server-commands is not installed (npm install mcp-server-commands in a temp dir, then DSH_BENCH_COMMANDS=<that dir>)' }
  const pkg = join(dir, 'node_modules', 'mcp-server-commands', 'package.json')
  if (!existsSync(pkg)) return { why: `not measured: ${pkg} does not exist (DSH_BENCH_COMMANDS=${dir})` }
  const meta = JSON.parse(readFileSync(pkg, 'utf8'))
  const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin ?? {})[0]
  if (!bin) return { why: `not measured: ${pkg} names no bin` }
  return { main: join(dir, 'node_modules', 'mcp-server-commands', bin), version: meta.version }
}

/** Starts `mcp-server-commands` (its `run_command` runs `sh -c`, keeps nothing) in a temp workspace. */
export async function startCommands(main) {
  const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-commands-'))
  return connect([main], workspace)
}

async function connect(args, workspace) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args,
    cwd: workspace,
    env: { ...process.env },
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (chunk) => {
    if (stderr.length < 20_000) stderr += chunk
  })
  const client = new Client({ name: 'dsh-bench', version: '0.0.0' })
  try {
    await client.connect(transport)
  } catch (error) {
    rmSync(workspace, { recursive: true, force: true })
    throw new Error(`MCP server did not start: ${error.message}\n${stderr}`)
  }
  return {
    client,
    workspace,
    get stderr() {
      return stderr
    },
    async call(name, args) {
      const result = await client.callTool({ name, arguments: args })
      const text = (result.content ?? []).map((c) => c.text ?? '').join('\n')
      return { text, isError: result.isError === true }
    },
    async close() {
      await client.close().catch(() => {})
      rmSync(workspace, { recursive: true, force: true })
    },
  }
}
