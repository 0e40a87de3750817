/**
 * The published form: `npm pack` of every package, and the CLI's tarball installed alone in an empty
 * directory (third-party dependencies from the npm cache `npm ci` warmed, else the registry), then a
 * real MCP client calling `bash` through `node_modules/.bin/dsh-bash mcp` (with a policy, so the
 * tree-sitter wasm is loaded from the installed package too), and once more over SSH to a real sshd
 * (the far-side agent's binary and scripts are found in the installed bundle and installed on the host).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, describe, expect, it } from 'vitest'
import { ROOT } from './helpers.js'

interface Packed {
  name: string
  filename: string
  files: { path: string; mode: number }[]
}

const npm = (args: string[], cwd: string) =>
  execFileSync('npm', args, { cwd, encoding: 'utf8', timeout: 540_000, env: { ...process.env, npm_config_update_notifier: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] })

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(dir)
  return dir
}

describe('every package tarball', () => {
  const packed = JSON.parse(npm(['pack', '--dry-run', '--json', '--workspaces', '--ignore-scripts'], ROOT)) as Packed[]

  it('covers every workspace package', () => {
    expect(packed.length).toBeGreaterThanOrEqual(13)
  })

  it.each(packed.map((p) => [p.name, p] as const))('%s: LICENSE, README, the manifest fields; no build leftovers, maps or sources', (name, p) => {
    const paths = p.files.map((f) => f.path)
    expect(paths).toContain('LICENSE')
    expect(paths).toContain('README.md')
    expect(paths.filter((path) => /\.tsbuildinfo$|\.map$|^src\/|^test\//.test(path))).toEqual([])
    const dir = join(ROOT, 'packages', name.replace('@deepseek-ai/dsh-', '').replace(/^bash-cli$/, 'cli'))
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    expect(pkg).toMatchObject({ license: 'MIT', engines: { node: '>=20' }, repository: { type: 'git' }, bugs: { url: expect.any(String) } })
    expect(pkg.homepage).toMatch(/^https:\/\//)
    expect(pkg.scripts?.prepare).toBeUndefined()
    expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(ROOT, 'LICENSE'), 'utf8'))
  })
})

describe('the CLI tarball installs alone and serves a call', () => {
  it('npm install ./the.tgz in an empty directory, then dsh-bash mcp answers tools/call', { timeout: 600_000 }, async () => {
    const out = temp('dsh-pack-')
    const [result] = JSON.parse(npm(['pack', '--json', '--pack-destination', out], join(ROOT, 'packages/cli'))) as Packed[]
    const paths = result.files.map((f) => f.path)
    // The bundle, its programs and the assets of the bundled packages (launcher binary, scripts).
    expect(paths).toEqual(
      expect.arrayContaining(['bin/dsh-bash.js', 'dist/main.js', 'dist/launcher-helper.js', 'assets/bash-local/native/dsh-launcher-linux-x64', 'assets/bash-local/scripts/prelude.sh',
        'assets/bash-agent/native/dsh-bash-agent-linux-x64', 'assets/bash-agent/native/dsh-bash-agent-linux-arm64', 'assets/bash-agent/scripts/install.sh',
        'assets/bash-agent/scripts/ssh-serve.sh', 'assets/bash-agent/scripts/pod-boot.sh']),
    )
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages/cli/package.json'), 'utf8'))
    expect(Object.keys(manifest.dependencies).filter((name) => name.startsWith('@deepseek-ai/'))).toEqual([])

    const app = temp('dsh-install-')
    writeFileSync(join(app, 'package.json'), '{"name":"empty","private":true}\n')
    npm(['install', '--prefer-offline', '--no-audit', '--no-fund', join(out, result.filename)], app)
    const bin = join(app, 'node_modules/.bin/dsh-bash')
    expect(execFileSync(bin, ['--version'], { encoding: 'utf8' })).toBe(`${manifest.version}\n`)

    const policy = join(app, 'policy.json')
    writeFileSync(policy, JSON.stringify({ default: 'deny', allow: ['echo *'] }))
    const client = new Client({ name: 'package-test', version: '1' })
    await client.connect(new StdioClientTransport({ command: bin, args: ['mcp', '--workdir', app, '--policy', policy], cwd: app, stderr: 'pipe' }))
    try {
      const ok = await client.callTool({ name: 'bash', arguments: { command: 'echo installed', description: 'say it' } })
      expect(ok).toMatchObject({ isError: false, content: [{ type: 'text', text: 'installed\n' }] })
      const denied = await client.callTool({ name: 'bash', arguments: { command: 'rm -rf x', description: 'remove' } })
      expect(denied.isError).toBe(true)
    } finally {
      await client.close()
    }

    // The SSH executor from the installed bundle: the agent's binary (read to name its copy) and its
    // scripts come from assets/bash-agent/; the host's cache is emptied first, so the installer runs too.
    const sshd = await import('../../bash-ssh/test/sshd.js')
    const reason = sshd.unavailableReason()
    if (reason) {
      console.warn(`skipping the installed CLI over SSH: ${reason}`)
      return
    }
    const keys = sshd.makeKeys('dshtest8')
    const home = spawnSync('getent', ['passwd', keys.user], { encoding: 'utf8' }).stdout.split(':')[5]
    rmSync(join(home, '.cache/dsh-bash'), { recursive: true, force: true })
    const server = await sshd.startSshd(keys, 'package')
    const remote = new Client({ name: 'package-test-ssh', version: '1' })
    try {
      const args = ['mcp', '--executor', 'ssh', '--ssh', `${keys.user}@127.0.0.1:${server.port}`, '--ssh-key', keys.userKeyPath, '--known-hosts', server.knownHostsPath, '--workdir', keys.workdir]
      await remote.connect(new StdioClientTransport({ command: bin, args, cwd: app, stderr: 'pipe' }))
      const ok = await remote.callTool({ name: 'bash', arguments: { command: 'whoami; tr -d "\\0" </proc/$PPID/cmdline; echo', description: 'who and under what' } })
      expect(ok).toMatchObject({ isError: false, content: [{ type: 'text', text: `${keys.user}\ndsh-bash-agent\n` }] })
    } finally {
      await remote.close()
      await server.stop()
      keys.remove()
    }
  })
})
