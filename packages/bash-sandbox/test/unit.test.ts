import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, describe, expect, it } from 'vitest'
import {
  bwrapArgs,
  type BwrapPlan,
  buildSeccompFilter,
  checkRequestedMode,
  findGitMetadata,
  gitMounts,
  parseSandboxConfig,
  SandboxExecutor,
  showsDeniedWrite,
  UNAVAILABLE_PREFIX,
  widerModes,
} from '../src/index.js'
import { checkWorkdirOutsideTmp, checkWorkdirPrivacy, mountAliases, parseMountinfo, physicalPath } from '../src/privacy.js'
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
    expect(() => parseSandboxConfig({ network: 'yes' })).toThrow('invalid sandbox executor config: network must be true, false or { allow, deny, hosts }')
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
    expect(() => new SandboxExecutor(ctx, { workspaceRoot: join(dir.path, 'missing') })).toThrow(
      expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }),
    )
  })

  it('refuses an unknown requested mode with DSH_INVALID_REQUEST', () => {
    expect(() => checkRequestedMode('everything')).toThrow(
      expect.objectContaining({ code: 'DSH_INVALID_REQUEST', message: 'invalid sandboxMode: expected one of read-only, workspace-write, danger-full-access, got "everything"' }),
    )
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

describe('privacy: mount aliases and the workdir rules', () => {
  const mountinfo = [
    '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
    '40 26 0:40 / /tmp rw - tmpfs tmpfs rw',
    '41 26 0:40 / /mnt/all\\040tmp rw - tmpfs tmpfs rw',
    '42 26 0:40 /spill /srv/spill rw - tmpfs tmpfs rw',
    '43 26 0:40 /other /srv/other rw - tmpfs tmpfs rw',
    '44 26 254:0 /var/spill /home/me/ws/mnt rw - ext4 /dev/vda rw',
    '45 26 0:45 / /srv/stacked rw - tmpfs tmpfs rw',
  ].join('\n')
  const mounts = parseMountinfo(mountinfo)

  it('finds every path of a directory: binds of it or of a parent, escaped names; not other subtrees or devices', () => {
    expect(mounts[2]).toEqual({ device: '0:40', root: '/', mountPoint: '/mnt/all tmp' })
    expect(mountAliases('/tmp/spill/dsh-bash-1', mounts)).toEqual(['/tmp/spill/dsh-bash-1', '/mnt/all tmp/spill/dsh-bash-1', '/srv/spill/dsh-bash-1'])
    expect(mountAliases('/var/spill/dsh-bash-1', mounts)).toEqual(['/var/spill/dsh-bash-1', '/home/me/ws/mnt/dsh-bash-1'])
    // Reached through an alias, the same set (its canonical path included).
    expect(mountAliases('/srv/spill/dsh-bash-1', mounts).sort()).toEqual(['/mnt/all tmp/spill/dsh-bash-1', '/srv/spill/dsh-bash-1', '/tmp/spill/dsh-bash-1'])
    expect(mountAliases('/srv/stacked/x', mounts)).toEqual(['/srv/stacked/x'])
    expect(mountAliases('/x', [])).toEqual(['/x'])
  })

  it('physicalPath resolves what exists (symbolic links, dangling ones too) and appends the rest', () => {
    const base = join(dir.path, 'physical')
    mkdirSync(join(base, 'real'), { recursive: true })
    symlinkSync(join(base, 'real'), join(base, 'link'))
    symlinkSync(join(base, 'later'), join(base, 'dangling'))
    expect(physicalPath(join(base, 'link', 'a', 'b'))).toBe(join(base, 'real', 'a', 'b'))
    expect(physicalPath(join(base, 'dangling', 'x'))).toBe(join(base, 'later', 'x'))
    expect(physicalPath(join(base, 'link', '..', 'real'))).toBe(join(base, 'real'))
  })

  it('a workdir inside a hidden path, or under /tmp outside the workspace, is refused with a stable message', () => {
    expect(() => checkWorkdirPrivacy('/w/link', '/tmp/dsh-bash-1/owner-2', ['/tmp/dsh-bash-1'])).toThrow(
      "the workdir is inside the executor's private directory, which sandboxed commands may not see, so no command was run: /w/link, which is /tmp/dsh-bash-1/owner-2 (private: /tmp/dsh-bash-1)",
    )
    expect(() => checkWorkdirPrivacy('/tmp/dsh-bash-10', '/tmp/dsh-bash-10', ['/tmp/dsh-bash-1'])).not.toThrow()
    expect(() => checkWorkdirPrivacy('/', '/', ['/tmp/dsh-bash-1'])).not.toThrow()
    expect(() => checkWorkdirOutsideTmp('/tmp/x', '/tmp/x', '/work/ws')).toThrow(
      'the workdir is under /tmp, which the sandbox replaces with a private, empty one, so no command was run: /tmp/x (use a directory outside /tmp, or inside the workspace root /work/ws)',
    )
    for (const ok of ['/tmp', '/tmpx', '/work/ws/a']) expect(() => checkWorkdirOutsideTmp(ok, ok, '/work/ws')).not.toThrow()
    expect(() => checkWorkdirOutsideTmp('/tmp/ws/a', '/tmp/ws/a', '/tmp/ws')).not.toThrow()
  })
})

describe('bwrapArgs', () => {
  const base: BwrapPlan = {
    mode: 'workspace-write',
    network: false,
    workspaceRoot: '/work/repo',
    protections: [
      { kind: 'pin', path: '/work/repo/lib' },
      { kind: 'read-only', path: '/work/repo/.git' },
      { kind: 'read-only', path: '/work/repo/lib/.git' },
    ],
    workdir: '/work/repo/src',
    hidden: ['/tmp/dsh-bash-abc', '/tmp/dsh-bash-pipes-def'],
    readOnlyExtras: ['/tmp/dsh-bash-abc/owner-1'],
  }

  it('workspace-write: root read-only, the workspace writable with git metadata read-only, private /tmp, namespaces, seccomp', () => {
    expect(bwrapArgs(base)).toEqual([
      '--ro-bind', '/', '/',
      '--bind', '/work/repo', '/work/repo',
      '--bind', '/work/repo/lib', '/work/repo/lib',
      '--ro-bind', '/work/repo/.git', '/work/repo/.git',
      '--ro-bind', '/work/repo/lib/.git', '/work/repo/lib/.git',
      '--dev', '/dev', '--proc', '/proc',
      '--ro-bind', '/proc/sys', '/proc/sys', '--ro-bind-try', '/proc/sysrq-trigger', '/proc/sysrq-trigger',
      '--tmpfs', '/tmp',
      '--ro-bind', '/tmp/dsh-bash-abc/owner-1', '/tmp/dsh-bash-abc/owner-1',
      '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--new-session', '--cap-drop', 'ALL', '--unshare-net',
      '--seccomp', '4',
      '--json-status-fd', '3', '--chdir', '/work/repo/src',
    ])
  })

  it('protections with a source descriptor are bound from it', () => {
    const args = bwrapArgs({ ...base, protections: [{ kind: 'pin', path: '/work/repo/lib', fd: 5 }, { kind: 'read-only', path: '/work/repo/.git', fd: 6 }] })
    expect(args.slice(3, 12)).toEqual(['--bind', '/work/repo', '/work/repo', '--bind-fd', '5', '/work/repo/lib', '--ro-bind-fd', '6', '/work/repo/.git'])
  })

  it('read-only binds nothing writable; network on keeps the network namespace', () => {
    const args = bwrapArgs({ ...base, mode: 'read-only', network: true })
    expect(args).not.toContain('--bind')
    expect(args).not.toContain('--unshare-net')
    expect(args).toContain('--unshare-ipc')
    expect(args.filter((a) => a === '--ro-bind')).toHaveLength(3)
  })

  it('a workspace under /tmp is bound after the private /tmp, its protections right after it', () => {
    const args = bwrapArgs({
      ...base,
      workspaceRoot: '/tmp/ws',
      protections: [{ kind: 'read-only', path: '/tmp/ws/.git' }],
      workdir: '/tmp/ws',
    })
    const tmpfs = args.indexOf('/tmp', args.indexOf('--tmpfs'))
    const bind = args.indexOf('--bind')
    expect(bind).toBeGreaterThan(tmpfs)
    expect(args.slice(bind, bind + 6)).toEqual(['--bind', '/tmp/ws', '/tmp/ws', '--ro-bind', '/tmp/ws/.git', '/tmp/ws/.git'])
  })

  it('the executor\'s private directories are covered by an empty tmpfs after every bind, then the owner\'s own is bound read-only', () => {
    const args = bwrapArgs({
      ...base,
      hidden: ['/var/spill/dsh-bash-abc', '/work/repo/alias/dsh-bash-abc', '/tmp/dsh-bash-pipes-def'],
      readOnlyExtras: ['/var/spill/dsh-bash-abc/owner-1'],
    })
    const line = args.join(' ')
    // Under /tmp (and outside the workspace) the private /tmp hides it already: no mask there.
    expect(line).toContain(
      '--tmpfs /tmp --tmpfs /var/spill/dsh-bash-abc --tmpfs /work/repo/alias/dsh-bash-abc --ro-bind /var/spill/dsh-bash-abc/owner-1 /var/spill/dsh-bash-abc/owner-1 --unshare-pid',
    )
    expect(line).not.toContain('dsh-bash-pipes-def')
    // Inside a workspace under /tmp (which is bound again) it is masked after that bind.
    const underTmp = bwrapArgs({ ...base, workspaceRoot: '/tmp/ws', protections: [], hidden: ['/tmp/ws/spill/dsh-bash-abc'], readOnlyExtras: [] }).join(' ')
    expect(underTmp).toContain('--tmpfs /tmp --bind /tmp/ws /tmp/ws --tmpfs /tmp/ws/spill/dsh-bash-abc --unshare-pid')
  })
})

describe('findGitMetadata and gitMounts', () => {
  const repo = (name: string) => {
    const root = join(dir.path, name)
    mkdirSync(join(root, '.git', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git', 'HEAD'), 'ref: refs/heads/main\n')
    writeFileSync(join(root, '.git', 'config'), '[core]\n\tbare = false\n')
    return root
  }

  it('a repository: its whole .git, read-only', () => {
    const root = repo('plain')
    expect(findGitMetadata(root)).toEqual({ readOnly: [join(root, '.git')], missing: [] })
    expect(gitMounts(root, [join(root, '.git')])).toEqual([{ kind: 'read-only', path: join(root, '.git') }])
  })

  it('no repository: the missing .git is guarded', () => {
    const root = join(dir.path, 'none')
    mkdirSync(root)
    expect(findGitMetadata(root)).toEqual({ readOnly: [], missing: [join(root, '.git')] })
  })

  it('submodule work trees (from modules/*/config core.worktree and .gitmodules), linked worktrees, hooksPath', () => {
    const root = repo('super')
    mkdirSync(join(root, '.git', 'modules', 'lib'), { recursive: true })
    writeFileSync(join(root, '.git', 'modules', 'lib', 'HEAD'), '')
    writeFileSync(join(root, '.git', 'modules', 'lib', 'config'), '[core]\n\tworktree = ../../../vendor/lib\n')
    mkdirSync(join(root, 'vendor', 'lib'), { recursive: true })
    writeFileSync(join(root, 'vendor', 'lib', '.git'), 'gitdir: ../../.git/modules/lib\n')
    // .gitmodules (writable by commands) adds existing paths only, never a guard.
    writeFileSync(join(root, '.gitmodules'), '[submodule "x"]\n\tpath = deps/x\n\turl = ../x\n[submodule "y"]\n\tpath = deps/y\n')
    mkdirSync(join(root, 'deps', 'x'), { recursive: true })
    writeFileSync(join(root, 'deps', 'x', '.git'), 'gitdir: ../../.git/modules/x\n')
    // A submodule named by read-only metadata but not checked out: its .git is guarded.
    mkdirSync(join(root, '.git', 'modules', 'z'), { recursive: true })
    writeFileSync(join(root, '.git', 'modules', 'z', 'HEAD'), '')
    writeFileSync(join(root, '.git', 'modules', 'z', 'config'), '[core]\n\tworktree = ../../../deps/z\n')
    mkdirSync(join(root, '.git', 'worktrees', 'wt'), { recursive: true })
    mkdirSync(join(root, 'wt'))
    writeFileSync(join(root, 'wt', '.git'), `gitdir: ${join(root, '.git', 'worktrees', 'wt')}\n`)
    writeFileSync(join(root, '.git', 'worktrees', 'wt', 'gitdir'), `${join(root, 'wt', '.git')}\n`)
    writeFileSync(join(root, '.git', 'worktrees', 'wt', 'commondir'), '../..\n')
    writeFileSync(join(root, '.git', 'config'), '[core]\n\thooksPath = .husky\n')
    mkdirSync(join(root, '.husky'))
    const plan = findGitMetadata(root)
    expect(plan).toEqual({
      readOnly: [join(root, '.git'), join(root, '.husky'), join(root, 'deps', 'x', '.git'), join(root, 'vendor', 'lib', '.git'), join(root, 'wt', '.git')],
      missing: [join(root, 'deps', 'z', '.git')],
    })
    expect(gitMounts(root, [...plan.readOnly, ...plan.missing])).toEqual([
      { kind: 'pin', path: join(root, 'deps') },
      { kind: 'pin', path: join(root, 'vendor') },
      { kind: 'pin', path: join(root, 'wt') },
      { kind: 'pin', path: join(root, 'deps', 'x') },
      { kind: 'pin', path: join(root, 'deps', 'z') },
      { kind: 'pin', path: join(root, 'vendor', 'lib') },
      { kind: 'read-only', path: join(root, '.git') },
      { kind: 'read-only', path: join(root, '.husky') },
      { kind: 'read-only', path: join(root, 'wt', '.git') },
      { kind: 'read-only', path: join(root, 'deps', 'x', '.git') },
      { kind: 'read-only', path: join(root, 'deps', 'z', '.git') },
      { kind: 'read-only', path: join(root, 'vendor', 'lib', '.git') },
    ])
  })

  it('a .git file: the file and its gitdir inside the root (and that gitdir\'s commondir); one outside is left alone', () => {
    const root = join(dir.path, 'gitfile')
    mkdirSync(join(root, 'meta', 'hooks'), { recursive: true })
    writeFileSync(join(root, '.git'), 'gitdir: meta\n')
    expect(findGitMetadata(root)).toEqual({ readOnly: [join(root, '.git'), join(root, 'meta')], missing: [] })
    writeFileSync(join(root, '.git'), `gitdir: ${dir.path}\n`)
    expect(findGitMetadata(root)).toEqual({ readOnly: [join(root, '.git')], missing: [] })
  })

  it('paths outside the root and symbolic links leading out are ignored', () => {
    const root = repo('escape')
    writeFileSync(join(root, '.gitmodules'), '[submodule "x"]\n\tpath = ../../etc\n')
    expect(findGitMetadata(root)).toEqual({ readOnly: [join(root, '.git')], missing: [] })
  })
})

describe('buildSeccompFilter', () => {
  const instructions = (buffer: Buffer) =>
    Array.from({ length: buffer.length / 8 }, (_, i) => ({
      code: buffer.readUInt16LE(i * 8),
      jt: buffer[i * 8 + 2],
      jf: buffer[i * 8 + 3],
      k: buffer.readUInt32LE(i * 8 + 4),
    }))

  it('checks the architecture first, then refuses keyrings, io_uring, the TIOCSTI and TIOCLINUX ioctls and every socket family but an allowed few', () => {
    const program = instructions(buildSeccompFilter({ network: false, arch: 'x64' }))
    expect(program[0]).toEqual({ code: 0x20, jt: 0, jf: 0, k: 4 })
    expect(program[1]).toEqual({ code: 0x15, jt: 0, jf: program.length - 3, k: 0xc000003e })
    const compared = program.filter((ins) => ins.code === 0x15).map((ins) => ins.k)
    // ioctl (16), socket (41), socketpair (53); then the ioctl's command word (args[1], low 32 bits:
    // offset 24) against TIOCSTI and TIOCLINUX; socket's family (args[0]) against AF_INET, AF_INET6,
    // AF_NETLINK; socketpair's against AF_UNIX.
    expect(compared).toEqual([0xc000003e, 248, 249, 250, 425, 426, 427, 16, 41, 53, 0x5412, 0x541c, 2, 10, 16, 1])
    expect(program).toContainEqual({ code: 0x20, jt: 0, jf: 0, k: 24 })
    expect(program).toContainEqual({ code: 0x20, jt: 0, jf: 0, k: 16 })
    expect(program.at(-1)).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x80000000 })
    expect(program.at(-2)).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x00050001 })
    // With the network on, AF_UNIX too; still an allow-list (AF_VSOCK, 40, is refused either way).
    const networkOn = instructions(buildSeccompFilter({ network: true, arch: 'x64' }))
    expect(networkOn.filter((ins) => ins.code === 0x15).map((ins) => ins.k).slice(12)).toEqual([2, 10, 16, 1, 1])
  })

  it('has a table for arm64 and refuses an architecture it does not know', () => {
    expect(buildSeccompFilter({ network: false, arch: 'arm64' }).length % 8).toBe(0)
    expect(() => buildSeccompFilter({ network: false, arch: 'mips' })).toThrow('no seccomp filter for the mips architecture (supported: x64, arm64)')
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
