/**
 * README examples run as written. Every ```ts block right after the line
 * `<!-- runs in CI as written: packages/cli/test/readme-examples.test.ts -->` in a Markdown file of
 * the repository is compiled (types stripped, nothing else changed) and run with node from its
 * package's directory, in an empty working directory with an empty TMPDIR: it must exit 0, print
 * nothing on stderr (no warning either), and leave nothing behind in either directory.
 * What a block reads on stdin and must print is in STDIO below, by file; the default is no input.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { transformSync } from 'rolldown/experimental'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers.js'
import { tsBlocks } from './readme-blocks.js'

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'readme', version: '1' } } }
const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo hello', description: 'say hello' } } }

/** What an example gets on stdin (then end of input) and a text its stdout must contain. */
const STDIO: Record<string, { stdin?: string[]; stdout: string }> = {
  'packages/tools/README.md': { stdout: '' },
  'packages/tool-bash/README.md': { stdout: '{"content":[{"type":"text","text":"hello\\n"}],"isError":false,"structured":{"status":"completed","exitCode":0,"signal":null,' },
  // A stdio MCP server: one client session (initialize, a call), then the client goes away.
  'packages/mcp/README.md': {
    stdin: [JSON.stringify(initialize), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), JSON.stringify(call)],
    stdout: '"content":[{"type":"text","text":"hello\\n"}],"structuredContent":{"status":"completed","exitCode":0,"signal":null,',
  },
}

/** Every marked block: [file, index, code]. */
function examples(): [string, number, string][] {
  return tsBlocks().flatMap((block) => (block.marker === 'runs' ? [[block.file, block.runIndex!, block.code] as [string, number, string]] : []))
}

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe('README examples run as written and leave nothing behind', () => {
  const found = examples()

  it('finds the examples (tool-bash and mcp at least)', () => {
    expect(found.map(([file]) => file)).toEqual(expect.arrayContaining(['packages/tool-bash/README.md', 'packages/mcp/README.md']))
  })

  it.each(found)('%s, example %i', { timeout: 120_000 }, async (file, index, code) => {
    const compiled = transformSync(`${file}.ts`, code, { lang: 'ts' })
    expect(compiled.errors).toEqual([])
    // Beside the README, so that its imports resolve as they do for a user of that package.
    const script = join(ROOT, dirname(file), `.readme-example-${index}.mjs`)
    writeFileSync(script, compiled.code)
    const cwd = mkdtempSync(join(tmpdir(), 'dsh-readme-cwd-'))
    const tmp = mkdtempSync(join(tmpdir(), 'dsh-readme-tmp-'))
    dirs.push(cwd, tmp)
    try {
      const io = STDIO[file] ?? { stdout: '' }
      const child = spawn(process.execPath, [script], { cwd, env: { ...process.env, TMPDIR: tmp }, stdio: ['pipe', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk))
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
      for (const line of io.stdin ?? []) child.stdin.write(`${line}\n`)
      if (io.stdin) {
        // The client waits for the call's answer before it goes away.
        const deadline = Date.now() + 60_000
        while (!stdout.includes('"id":2') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 50))
      }
      child.stdin.end()
      const status = await new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
      expect({ file: relative(ROOT, join(ROOT, file)), status, stderr }).toEqual({ file, status: 0, stderr: '' })
      expect(stdout).toContain(io.stdout)
      expect(readdirSync(cwd), 'files left in the working directory').toEqual([])
      expect(readdirSync(tmp), 'files left in TMPDIR').toEqual([])
    } finally {
      rmSync(script, { force: true })
    }
  })
})
