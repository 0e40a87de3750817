/**
 * Secrets unreadable (issue 27, item 2): which paths are masked, how the denial is told apart, the
 * bwrap arguments, and attacks on the masks in the real sandbox (symbolic links, `..`, chmod, a
 * workdir inside, the limits the command cannot raise). The acceptance through `dsh-bash mcp` is
 * packages/cli/test/mcp-egress.test.ts.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bwrapArgs, type BwrapPlan } from '../src/bwrap.js'
import { DEFAULT_DENY_READ, readMasks, showsDeniedRead } from '../src/read-masks.js'
import { ownV1Directory } from '@deepseek-ai/dsh-bash-local'
import { createSandbox, outsideDir, type SandboxInstance, sandboxUnavailable } from './helpers.js'

describe('the masks of a launch', () => {
  const dir = outsideDir('dsh-masks-unit-')
  const home = join(dir.path, 'home')
  beforeAll(() => {
    for (const sub of ['.ssh', '.aws', '.config/gcloud', 'elsewhere/ssh-real', 'vault/inner']) mkdirSync(join(home, sub), { recursive: true })
    writeFileSync(join(home, '.netrc'), 'machine x password y\n')
    writeFileSync(join(home, '.ssh/known_hosts'), 'k\n')
  })
  afterAll(() => dir.remove())

  it('the default list, where it exists: directories and files (a missing entry is no mask)', () => {
    const masks = readMasks({ deny: DEFAULT_DENY_READ, allow: [], home, mounts: [] })
    expect(masks).toEqual([
      { path: join(home, '.aws'), kind: 'dir', inner: [] },
      { path: join(home, '.netrc'), kind: 'file', inner: [] },
      { path: join(home, '.ssh'), kind: 'dir', inner: [] },
      { path: join(home, '.config/gcloud'), kind: 'dir', inner: [] },
    ])
  })

  it('allowRead lifts an entry, or reopens a path inside one; a nested deny inside a mask is covered by it', () => {
    const masks = readMasks({ deny: ['~/.ssh', '~/.aws', '~/vault', '~/vault/inner'], allow: ['~/.aws', join(home, '.ssh/known_hosts')], home, mounts: [] })
    expect(masks).toEqual([
      { path: join(home, '.ssh'), kind: 'dir', inner: [join(home, '.ssh/known_hosts')] },
      { path: join(home, 'vault'), kind: 'dir', inner: [] },
    ])
  })

  it('a symbolic link is masked at its target; a bind mount of the target is masked too', () => {
    const link = join(home, 'linked')
    symlinkSync(join(home, 'elsewhere/ssh-real'), link)
    const real = join(home, 'elsewhere/ssh-real')
    const mounts = [
      { device: '8:1', root: '/', mountPoint: '/' },
      { device: '8:1', root: real, mountPoint: '/srv/alias' },
    ]
    expect(readMasks({ deny: ['~/linked'], allow: [], home, mounts }).map((m) => m.path)).toEqual(['/srv/alias', real])
  })

  it('a refused read is told apart: "Permission denied" on a masked path (absolute, relative to the workdir, or ~/), nothing else', () => {
    const masks = [{ path: join(home, '.ssh'), kind: 'dir' as const, inner: [] }]
    expect(showsDeniedRead(`cat: ${home}/.ssh/id_rsa: Permission denied`, masks, '/work', home)).toBe(true)
    expect(showsDeniedRead(`ls: cannot open directory '${home}/.ssh': Permission denied`, masks, '/work', home)).toBe(true)
    expect(showsDeniedRead('cat: .ssh/id_rsa: Permission denied', masks, home, home)).toBe(true)
    expect(showsDeniedRead("PermissionError: [Errno 13] Permission denied: '~/.ssh/config'", masks, '/work', home)).toBe(true)
    // Not the masks' doing.
    expect(showsDeniedRead(`cat: ${home}/.sshd_config: Permission denied`, masks, '/work', home)).toBe(false)
    expect(showsDeniedRead('bash: ./run.sh: Permission denied', masks, '/work', home)).toBe(false)
    expect(showsDeniedRead(`cat: ${home}/.ssh/id_rsa: No such file or directory`, masks, '/work', home)).toBe(false)
  })

  it('the bwrap arguments: 0000 tmpfs remounted read-only, 0111 where a path inside is reopened, an unreadable file over a file; sizes for /tmp and /dev/shm', () => {
    const plan: BwrapPlan = {
      mode: 'read-only',
      network: false,
      workspaceRoot: '/work',
      protections: [],
      workdir: '/work',
      hidden: [],
      readOnlyExtras: [],
      masks: [
        { path: '/h/.aws', kind: 'dir', inner: [] },
        { path: '/h/.netrc', kind: 'file', inner: [] },
        { path: '/h/.ssh', kind: 'dir', inner: ['/h/.ssh/known_hosts'] },
      ],
      unreadableFile: '/spill/dsh-bash-unreadable',
      tmpBytes: 64 * 2 ** 20,
    }
    const args = bwrapArgs(plan).join(' ')
    expect(args).toContain('--size 67108864 --tmpfs /dev/shm --size 67108864 --tmpfs /tmp')
    expect(args).toContain(
      '--perms 0000 --tmpfs /h/.aws --remount-ro /h/.aws --ro-bind /spill/dsh-bash-unreadable /h/.netrc --perms 0111 --tmpfs /h/.ssh --ro-bind /h/.ssh/known_hosts /h/.ssh/known_hosts --remount-ro /h/.ssh --unshare-pid',
    )
  })
})

const reason = sandboxUnavailable()

describe.skipIf(reason !== undefined)('attacks on the masks (real bwrap)', () => {
  const dir = outsideDir('dsh-masks-attacks-')
  const home = join(dir.path, 'home')
  const ws = join(dir.path, 'ws')
  let instance: SandboxInstance
  const secret = join(home, '.ssh/id_test')

  beforeAll(async () => {
    for (const sub of ['home/.ssh', 'home/.kube', 'ws', 'real-gcloud']) mkdirSync(join(dir.path, sub), { recursive: true })
    writeFileSync(secret, 'SECRET\n')
    writeFileSync(join(dir.path, 'real-gcloud/credentials.db'), 'GCLOUD\n')
    mkdirSync(join(home, '.config'))
    // ~/.config/gcloud is a symbolic link to a directory elsewhere.
    symlinkSync(join(dir.path, 'real-gcloud'), join(home, '.config/gcloud'))
    // The executor's home (`~` of the masks) is read from HOME when it is created.
    const saved = process.env.HOME
    process.env.HOME = home
    try {
      instance = await createSandbox({ workspaceRoot: ws, cwd: ws, mode: 'workspace-write' })
    } finally {
      process.env.HOME = saved
    }
  })
  afterAll(async () => {
    await instance?.dispose()
    dir.remove()
  })

  const run = (command: string, extra: Record<string, unknown> = {}) => instance.executor.run(instance.executor.resolve({ command, ...extra }))

  it('a symbolic link into a mask, .., another path to the same directory, and chmod: all refused', async () => {
    const result = await run(
      [
        `ln -s ${secret} link && cat link`,
        `cat ${home}/.ssh/../.ssh/id_test`,
        `cat ${dir.path}/real-gcloud/credentials.db`,
        `cat ${home}/.config/gcloud/credentials.db`,
        `chmod 755 ${home}/.ssh`,
        `cp -r ${home}/.ssh copy`,
        `mv ${home}/.ssh ${home}/moved`,
        'echo still-here',
      ].join('; '),
    )
    expect(result.stdout.text).toBe('still-here\n')
    expect(result.stderr.text).not.toMatch(/SECRET|GCLOUD/)
    expect(result.stderr.text.trim().split('\n')).toEqual([
      'cat: link: Permission denied',
      `cat: ${home}/.ssh/../.ssh/id_test: Permission denied`,
      `cat: ${dir.path}/real-gcloud/credentials.db: Permission denied`,
      `cat: ${home}/.config/gcloud/credentials.db: Permission denied`,
      `chmod: changing permissions of '${home}/.ssh': Read-only file system`,
      `cp: cannot access '${home}/.ssh': Permission denied`,
      `mv: cannot move '${home}/.ssh' to '${home}/moved': Read-only file system`,
    ])
    // The control: unconfined, every one of them reads.
    const open = await run(`cat link ${dir.path}/real-gcloud/credentials.db; rm link`, { sandboxMode: 'danger-full-access' })
    expect(open.stdout.text).toBe('SECRET\nGCLOUD\n')
  })

  it('a workdir inside a mask is refused, naming it', async () => {
    await expect(run('pwd', { workdir: join(home, '.ssh') })).rejects.toThrow(
      `the workdir is inside a path the sandbox keeps unreadable (deny-read), so no command was run: ${home}/.ssh (masked: ${home}/.ssh; lift it with allowRead, --allow-read)`,
    )
  })

  it('an empty masked directory still shows the marker, and a read outside the masks that fails shows none', async () => {
    const denied = await run('ls ~/.kube', { env: { HOME: home } })
    expect(denied.sandbox?.accessDenied).toBe(true)
    const other = await run('cat /etc/shadow-not-there')
    expect(other.sandbox?.accessDenied).toBe(false)
  })

  it.runIf(ownV1Directory('pids') !== undefined)('the command cannot raise its own limit or leave its cgroup: /sys/fs/cgroup is read-only inside', async () => {
    const limited = await createSandbox({ workspaceRoot: ws, cwd: ws, limits: { pids: 50 } })
    const own = ownV1Directory('pids')!
    // Every command cgroup of executors under this server (its own among them: inside, the cgroup
    // namespace hides which one), and the way out.
    const attack = `for f in ${own}/dsh-bash-*/*/pids.max; do echo max 2>/dev/null > "$f" && echo "raised"; done; echo 0 2>/dev/null > ${own}/cgroup.procs && echo escaped; true`
    // The control, unconfined, touches only its own cgroup (other tests' executors run beside it).
    const mount = ownV1Directory('pids', undefined, '1:pids:/')
    const control = `echo max > "${mount}$(sed -n 's/^[0-9]*:pids://p' /proc/self/cgroup)/pids.max" && echo raised; echo 0 > ${own}/cgroup.procs && echo escaped`
    try {
      const result = await limited.executor.run(limited.executor.resolve({ command: attack }))
      expect(result.stdout.text).toBe('')
      // The control: unconfined, the same writes succeed (the local executor's documented limit).
      const open = await limited.executor.run(limited.executor.resolve({ command: control, sandboxMode: 'danger-full-access' }))
      expect(open.stdout.text).toBe('raised\nescaped\n')
    } finally {
      await limited.dispose()
    }
  })
})
