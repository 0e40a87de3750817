/**
 * The client side of the agent without a transport: the frame reader, the container archive (read
 * back by GNU tar) and the installer (a real bash running install.sh into real directories).
 */
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { agentArchOf, agentBinary, containerAgentArchive, encodeFrame, FrameReader, INSTALL_SCRIPT, installArgs, runInstall } from '../src/index.js'

const binary = agentBinary(agentArchOf(process.arch) ?? 'x64')

describe('FrameReader', () => {
  function read(chunks: Buffer[], preamble = 0) {
    const frames: string[] = []
    const broken: string[] = []
    const reader = new FrameReader((op, id, payload) => frames.push(`${op} ${id} ${payload.toString()}`), (data) => broken.push(data.toString()), preamble)
    for (const chunk of chunks) reader.push(chunk)
    return { frames, broken }
  }

  it('splits frames whatever the chunks; payloads are bytes (newlines, NULs)', () => {
    const bytes = Buffer.concat([encodeFrame('out', '1', 'a\nb\0c'), encodeFrame('eof1', '1'), encodeFrame('exit', '1', 'c 0 0')])
    const oneByOne = [...bytes].map((byte) => Buffer.from([byte]))
    expect(read(oneByOne).frames).toEqual(['out 1 a\nb\0c', 'eof1 1 ', 'exit 1 c 0 0'])
  })

  it('skips a preamble before the hello only when allowed, and only so much', () => {
    const hello = encodeFrame('hello', '0', 'dsh-bash-agent 1 x')
    expect(read([Buffer.from('noise from bashrc '), hello], 1024).frames).toEqual(['hello 0 dsh-bash-agent 1 x'])
    expect(read([Buffer.from('noise from bashrc '), hello]).broken).toHaveLength(1)
    expect(read([Buffer.alloc(2048, 'x')], 1024).broken).toHaveLength(1)
  })

  it('a malformed header breaks the stream', () => {
    expect(read([Buffer.from('out 1 x\n')]).broken).toEqual(['out 1 x\n'])
    expect(read([Buffer.from('out 1 2 3\nab')]).broken).toHaveLength(1)
    expect(read([Buffer.alloc(600, 'a')]).broken).toHaveLength(1)
  })
})

describe('the container archive', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-agent-tar-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('holds a root-owned directory and the agent, read-only, byte for byte (GNU tar reads it)', () => {
    const archive = containerAgentArchive(binary)
    const list = spawnSync('tar', ['-tvf', '-', '--numeric-owner'], { input: archive, encoding: 'utf8' })
    expect(list.status).toBe(0)
    const lines = list.stdout.trim().split('\n').map((line) => line.split(/\s+/))
    expect(lines.map((f) => [f[0], f[1], f.at(-1)])).toEqual([
      ['drwxr-xr-x', '0/0', '.dsh-bash/'],
      ['-r-xr-xr-x', '0/0', `.dsh-bash/agent-${binary.sha256}`],
    ])
    expect(spawnSync('tar', ['-xf', '-', '-C', dir], { input: archive }).status).toBe(0)
    expect(readFileSync(join(dir, `.dsh-bash/agent-${binary.sha256}`)).equals(binary.bytes)).toBe(true)
  })
})

describe('install.sh, run by a real bash', () => {
  const dirs: string[] = []
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

  function install(where: string, env: Record<string, string> = {}): Promise<string> {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', INSTALL_SCRIPT, 'install', ...installArgs(where)], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
    return runInstall({ stdin: child.stdin, stdout: child.stdout, stderr: child.stderr, closed }, 'here')
  }

  it("installs into <base>/<uid>, private, checked by its SHA-256; a cache directory under $HOME", async () => {
    const base = mkdtempSync(join(tmpdir(), 'dsh-agent-inst-'))
    dirs.push(base)
    const uid = process.getuid!()
    const path = await install(base)
    expect(path).toBe(join(base, String(uid), `agent-${binary.sha256}`))
    expect(readFileSync(path).equals(binary.bytes)).toBe(true)
    expect(statSync(path).mode & 0o7777).toBe(0o500)
    expect(statSync(join(base, String(uid))).mode & 0o7777).toBe(0o700)
    const home = mkdtempSync(join(tmpdir(), 'dsh-agent-home-'))
    dirs.push(home)
    expect(await install('cache', { HOME: home, XDG_CACHE_HOME: '' })).toBe(join(home, '.cache/dsh-bash', `agent-${binary.sha256}`))
    expect(await install('cache', { HOME: home, XDG_CACHE_HOME: join(home, 'xdg') })).toBe(join(home, 'xdg/dsh-bash', `agent-${binary.sha256}`))
  })

  it('refuses a directory others may write, naming it', async () => {
    const base = mkdtempSync(join(tmpdir(), 'dsh-agent-inst-'))
    dirs.push(base)
    const mine = join(base, String(process.getuid!()))
    mkdirSync(mine)
    chmodSync(mine, 0o777)
    await expect(install(base)).rejects.toMatchObject({ code: 'DSH_AGENT_INSTALL', message: `cannot install the dsh-bash agent on here: ${mine} is writable by others (mode 777)` })
  })
})
