import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { MAIN, ROOT, startHttp } from './helpers.js'

const run = promisify(execFile)
/** The pinned devDependency, not `npx -y`. */
const INSPECTOR = join(ROOT, 'node_modules/.bin/mcp-inspector-cli')
/**
 * Inspector CLI 1.0.3 looks for its own package.json as "../package.json" relative to the *current
 * directory* (then imports it relative to itself), so it must run where "../package.json" exists.
 */
const CWD = join(ROOT, 'packages/cli/test')

async function inspector(args: string[]) {
  const { stdout } = await run(INSPECTOR, args, { cwd: CWD, timeout: 60_000 })
  return JSON.parse(stdout) as Record<string, unknown>
}

describe('the MCP Inspector CLI drives the real server', () => {
  it('over stdio: tools/call of bash returns the contract text', async () => {
    const result = await inspector([
      '--cli', process.execPath, MAIN, 'mcp',
      '--method', 'tools/call', '--tool-name', 'bash',
      '--tool-arg', 'command=echo hello; echo failing >&2; exit 3',
      '--tool-arg', 'description=Print hello and fail',
    ])
    expect(result).toEqual({
      content: [{ type: 'text', text: 'hello\n[stderr]\nfailing\n[exit code: 3]' }],
      isError: false,
      structuredContent: expect.objectContaining({ status: 'failed', exitCode: 3, signal: null, truncated: false }),
    })
  })

  it('over stdio: tools/list lists the four tools', async () => {
    const result = (await inspector(['--cli', process.execPath, MAIN, 'mcp', '--method', 'tools/list'])) as { tools: { name: string }[] }
    expect(result.tools.map((tool) => tool.name)).toEqual(['bash', 'bash_output', 'bash_kill', 'bash_input'])
  })

  it('over HTTP with the bearer token: tools/call of bash returns the contract text', async () => {
    const server = await startHttp([], { DSH_BASH_TOKEN: 'inspector-token' })
    try {
      const result = await inspector([
        '--cli', server.url, '--transport', 'http', '--header', 'Authorization: Bearer inspector-token',
        '--method', 'tools/call', '--tool-name', 'bash',
        '--tool-arg', 'command=echo hello', '--tool-arg', 'description=Say hello',
      ])
      expect(result).toEqual({ content: [{ type: 'text', text: 'hello\n' }], isError: false, structuredContent: expect.objectContaining({ status: 'completed', exitCode: 0 }) })
    } finally {
      await server.stop()
    }
  })
})
