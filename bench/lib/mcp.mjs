/** The MCP server over stdio (`packages/cli/dist/main.js mcp`), driven by the SDK client. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
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
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI_MAIN, 'mcp', '--workdir', workspace, ...extraArgs],
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
