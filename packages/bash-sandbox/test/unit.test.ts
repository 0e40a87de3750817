import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, describe, expect, it } from 'vitest'
import {
  bwrapArgs,
  type BwrapPlan,
  gitProtections,
  parseSandboxConfig,
  SandboxExecutor,
  showsDeniedWrite,
  UNAVAILABLE_PREFIX,
  widerModes,
} from '../src/index.js'
import { scratchDir } from './helpers.js'

const dir = scratchDir()
afterAll(() => dir.remove())

describe('config', () => {
  it('has the documented defaults', () => {
    const config = parseSandboxConfig({})
    expect(config).toMatchObject({ mode: 'workspace-write', network: false, containment: 'auto', timeoutMs: 120_000, shell: 'bash' })
    expect(config.workspaceRoot).toBeUndefined()
    expect(config.bwrapPath).toBeUndefined()
  })

  it('names the key of a bad value', () => {
    expect(() => parseSandboxConfig({ mode: 'everything' })).toThrow(
      'invalid sandbox executor config: mode must be one of read-only, workspace-write, danger-full-access',
    )
    expect(() => parseSandboxConfig({ network: 'yes' })).toThrow('invalid sandbox executor config: network must be a boolean')
    expect(() => parseSandboxConfig({ bwrapPath: '' })).toThrow('bwrapPath must not be empty')
    expect(() => parseSandboxConfig({ workspaceRoot: 3 })).toThrow('workspaceRoot must be a string')
    expect(() => parseSandboxConfig({ timeoutMs: -1 })).toThrow('timeoutMs must be positive')
    expect(() => parseSandboxConfig({ containment: 'pgroup' })).toThrow('containment must be one of auto, cgroup, marker')
    expect(() => parseSandboxConfig({ sandbox: true })).toThrow('unknown key(s) "sandbox"')
  })

  it('refuses a workspace root that does not exist, before registering anything', () => {
    const ctx = new Context()
    expect(() => new SandboxExecutor(ctx, { workspaceRoot: join(dir.path, 'missing') })).toThrow(
      `invalid sandbox executor config: workspaceRoot is not an existing directory: ${join(dir.path, 'missing')}`,
    )
    expect(ctx.get('bash')).toBeUndefined()
  })
})

describe('modes and resolve()', () => {
  it('lists the strictly wider modes', () => {
    expect(widerModes('read-only')).toEqual(['workspace-write', 'danger-full-access'])
    expect(widerModes('workspace-write')).toEqual(['danger-full-access'])
    expect(widerModes('danger-full-access')).toEqual([])
  })

  it('applies the default mode, accepts a requested one, rejects an unknown one', async () => {
    // No bwrap is needed to resolve: point bwrapPath nowhere.
    const executor = new SandboxExecutor(new Context(), { mode: 'read-only', bwrapPath: join(dir.path, 'no-bwrap'), cwd: dir.path })
    try {
      expect(executor.sandboxMode).toBe('read-only')
      expect(executor.resolve({ command: 'true' }).sandboxMode).toBe('read-only')
      expect(executor.resolve({ command: 'true', sandboxMode: 'workspace-write' }).sandboxMode).toBe('workspace-write')
      expect(executor.resolve({ command: 'true', sandboxMode: 'danger-full-access' }).sandboxMode).toBe('danger-full-access')
      expect(() => executor.resolve({ command: 'true', sandboxMode: 'root' })).toThrow(
        'invalid sandboxMode: expected one of read-only, workspace-write, danger-full-access, got "root"',
      )
      // The request is validated as by every executor.
      expect(() => executor.resolve({ command: ' ', sandboxMode: 'root' })).toThrow('invalid command: expected a non-empty string')
    } finally {
      await executor.shutdown()
    }
  })

  it('with bwrap missing: refuses confined commands, saying why, and runs danger-full-access only when asked', async () => {
    const missing = join(dir.path, 'no-bwrap')
    const executor = new SandboxExecutor(new Context(), { bwrapPath: missing, cwd: dir.path })
    try {
      expect(executor.unavailableReason).toBe(
        `${UNAVAILABLE_PREFIX}: bwrap was not found at ${JSON.stringify(missing)} (install the bubblewrap package, or set bwrapPath)`,
      )
      const marker = join(dir.path, 'ran')
      const spec = executor.resolve({ command: `touch ${marker}` })
      await expect(executor.run(spec)).rejects.toThrow(executor.unavailableReason!)
      expect(() => executor.start(spec)).toThrow(executor.unavailableReason!)
      expect(() => executor.start(executor.resolve({ command: `touch ${marker}`, sandboxMode: 'read-only' }))).toThrow(UNAVAILABLE_PREFIX)
      expect(executor.list()).toEqual([])
      expect(existsSync(marker)).toBe(false)
      const full = await executor.run(executor.resolve({ command: 'echo unconfined', sandboxMode: 'danger-full-access' }))
      expect(full.stdout.text).toBe('unconfined\n')
      expect(full.sandbox).toEqual({ mode: 'danger-full-access', accessDenied: false, escalations: [] })
    } finally {
      await executor.shutdown()
    }
  })

  it('with PATH lacking bwrap: the refusal says so', async () => {
    const saved = process.env.PATH
    process.env.PATH = join(dir.path, 'empty-bin')
    let executor: SandboxExecutor
    try {
      executor = new SandboxExecutor(new Context(), { cwd: dir.path, shell: '/bin/bash' })
    } finally {
      process.env.PATH = saved
    }
    try {
      expect(executor.unavailableReason).toBe(`${UNAVAILABLE_PREFIX}: bwrap was not found in PATH (install the bubblewrap package, or set bwrapPath)`)
      await expect(executor.run(executor.resolve({ command: 'true' }))).rejects.toThrow('bwrap was not found in PATH')
    } finally {
      await executor.shutdown()
    }
  })
})

describe('bwrapArgs', () => {
  const base: BwrapPlan = {
    mode: 'workspace-write',
    network: false,
    workspaceRoot: '/work/repo',
    protections: [
      { kind: 'bind', path: '/work/repo/.git/hooks' },
      { kind: 'bind', path: '/work/repo/.git/config' },
    ],
    workdir: '/work/repo/src',
    workdirReal: '/work/repo/src',
    readOnlyExtras: ['/tmp/dsh-bash-abc'],
  }

  it('workspace-write: root read-only, the workspace writable with git metadata read-only, private /tmp, namespaces', () => {
    expect(bwrapArgs(base)).toEqual([
      '--ro-bind', '/', '/',
      '--bind', '/work/repo', '/work/repo',
      '--ro-bind', '/work/repo/.git/hooks', '/work/repo/.git/hooks',
      '--ro-bind', '/work/repo/.git/config', '/work/repo/.git/config',
      '--dev', '/dev', '--proc', '/proc',
      '--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger',
      '--tmpfs', '/tmp',
      '--ro-bind', '/tmp/dsh-bash-abc', '/tmp/dsh-bash-abc',
      '--unshare-pid', '--new-session', '--cap-drop', 'ALL', '--unshare-net',
      '--json-status-fd', '3', '--chdir', '/work/repo/src',
    ])
  })

  it('read-only binds nothing writable; network on keeps the network namespace', () => {
    const args = bwrapArgs({ ...base, mode: 'read-only', network: true })
    expect(args).not.toContain('--bind')
    expect(args).not.toContain('--unshare-net')
    expect(args.filter((a) => a === '--ro-bind')).toHaveLength(3)
  })

  it('a workspace under /tmp is bound after the private /tmp; a missing hooks directory becomes an empty read-only one', () => {
    const args = bwrapArgs({
      ...base,
      workspaceRoot: '/tmp/ws',
      protections: [{ kind: 'empty-dir', path: '/tmp/ws/.git/hooks' }],
      workdir: '/tmp/ws',
      workdirReal: '/tmp/ws',
    })
    const tmpfs = args.indexOf('/tmp', args.indexOf('--tmpfs'))
    const bind = args.indexOf('--bind')
    expect(bind).toBeGreaterThan(tmpfs)
    expect(args.slice(bind, bind + 7)).toEqual(['--bind', '/tmp/ws', '/tmp/ws', '--tmpfs', '/tmp/ws/.git/hooks', '--remount-ro', '/tmp/ws/.git/hooks'])
  })

  it('a workdir under /tmp outside the workspace is bound read-only; /tmp itself is the private one', () => {
    const args = bwrapArgs({ ...base, workdir: '/tmp/other', workdirReal: '/tmp/other', readOnlyExtras: [] })
    expect(args.join(' ')).toContain('--tmpfs /tmp --ro-bind /tmp/other /tmp/other')
    const own = bwrapArgs({ ...base, workdir: '/tmp', workdirReal: '/tmp', readOnlyExtras: [] })
    expect(own.join(' ')).toContain('--tmpfs /tmp --unshare-pid')
  })
})

describe('gitProtections', () => {
  it('protects hooks and config of the repository and its submodules', () => {
    const root = join(dir.path, 'repo')
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git', 'config'), '')
    writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n')
    mkdirSync(join(root, '.git', 'modules', 'lib'), { recursive: true })
    writeFileSync(join(root, '.git', 'modules', 'lib', 'HEAD'), '')
    writeFileSync(join(root, '.git', 'modules', 'lib', 'config'), '')
    expect(gitProtections(root)).toEqual([
      { kind: 'bind', path: join(root, '.git', 'hooks') },
      { kind: 'bind', path: join(root, '.git', 'config') },
      { kind: 'empty-dir', path: join(root, '.git', 'modules', 'lib', 'hooks') },
      { kind: 'bind', path: join(root, '.git', 'modules', 'lib', 'config') },
    ])
  })

  it('follows a .git file to a gitdir inside the root, ignores one outside, and a root without git', () => {
    const root = join(dir.path, 'worktree')
    mkdirSync(join(root, 'meta', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git'), 'gitdir: meta\n')
    expect(gitProtections(root)).toEqual([{ kind: 'bind', path: join(root, 'meta', 'hooks') }])
    writeFileSync(join(root, '.git'), `gitdir: ${dir.path}\n`)
    expect(gitProtections(root)).toEqual([])
    expect(gitProtections(join(dir.path))).toEqual([])
  })
})

describe('showsDeniedWrite', () => {
  it.each([
    "touch: cannot touch '/etc/x': Read-only file system",
    'bash: line 1: /etc/x: Read-only file system',
    "mkdir: cannot create directory '/usr/x': Read-only file system",
    "OSError: [Errno 30] Read-only file system: '/x'",
    "Error: EROFS: read-only file system, open '/x'",
    'error: could not lock config file .git/config: Read-only file system',
    'Error: failed to write /x (os error 30)',
    "touch: cannot touch '/root/x': Permission denied",
    "tee: /x: Permission denied",
    "Error: EACCES: permission denied, mkdir '/x'",
    "cp: cannot create regular file '/x': Permission denied",
  ])('a refused write: %s', (line) => {
    expect(showsDeniedWrite(`some output\n${line}\n`)).toBe(true)
  })

  it.each([
    '',
    "cat: /root/secret: Permission denied",
    'bash: line 1: ./build.sh: Permission denied',
    "cp: cannot open '/root/x' for reading: Permission denied",
    "ls: cannot open directory '/root': Permission denied",
    'grep: nothing matched',
  ])('not a refused write: %s', (line) => {
    expect(showsDeniedWrite(line)).toBe(false)
  })
})
