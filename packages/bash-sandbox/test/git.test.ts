/**
 * Ordinary git work under each mode, exactly as the README says (its "Git metadata" section), and
 * the guards where no `.git` exists. The attacks on git metadata are in attacks.test.ts.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BashRunResult } from '@deepseek-ai/dsh-bash'
import { trackInstances } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, expect, it } from 'vitest'
import type { SandboxExecutorConfigInput } from '../src/index.js'
import { createSandbox, type SandboxInstance, sandboxUnavailable, scratchDir } from './helpers.js'

const reason = sandboxUnavailable()
const IDENTITY = ['-c', 'user.name=t', '-c', 'user.email=t@t']
const git = (cwd: string, ...args: string[]) => execFileSync('git', [...IDENTITY, ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
/** The same identity for git inside the sandbox (the home directory is read-only there). */
const GIT = 'git -c user.name=t -c user.email=t@t'

describe.skipIf(reason !== undefined)('git under the sandbox', () => {
  const dir = scratchDir('dsh-sandbox-git-')
  const outside = realpathSync(mkdtempSync(join('/var/tmp', 'dsh-sandbox-git-')))
  const instances = trackInstances<SandboxInstance>()
  let seq = 0

  afterAll(() => {
    dir.remove()
    rmSync(outside, { recursive: true, force: true })
  })

  function repo(): string {
    const root = join(dir.path, `repo-${++seq}`)
    mkdirSync(root)
    git(root, 'init', '-q')
    writeFileSync(join(root, 'a'), 'one\n')
    git(root, 'add', 'a')
    git(root, 'commit', '-q', '-m', 'init')
    writeFileSync(join(root, 'a'), 'two\n')
    return root
  }

  async function runner(config: SandboxExecutorConfigInput) {
    const instance = await createSandbox(config)
    instances.track(instance)
    const executor = instance.executor
    return (command: string, sandboxMode?: string): Promise<BashRunResult> =>
      executor.run(executor.resolve({ command, workdir: config.workspaceRoot, sandboxMode }))
  }

  for (const mode of ['read-only', 'workspace-write'] as const) {
    it(`${mode}: status, diff and log work; add and commit are refused (a sandbox denial) and change nothing`, async () => {
      const root = repo()
      const run = await runner({ mode, workspaceRoot: root, cwd: root })
      const status = await run('git status --short && git diff --stat && git log --oneline | wc -l')
      expect(status.exitCode).toBe(0)
      expect(status.stdout.text).toBe(' M a\n a | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n1\n')
      const add = await run('git add a')
      expect(add.exitCode).toBe(128)
      expect(add.stderr.text).toMatch(/index\.lock': Read-only file system/)
      expect(add.sandbox).toMatchObject({ mode, accessDenied: true })
      const commit = await run(`${GIT} commit -qam change`)
      expect(commit.exitCode).toBe(128)
      expect(commit.sandbox?.accessDenied).toBe(true)
      expect(git(root, 'status', '--short')).toBe(' M a\n')
      expect(git(root, 'log', '--oneline').trim().split('\n')).toHaveLength(1)
    })
  }

  it('danger-full-access (an approved escalation): add and commit work', async () => {
    const root = repo()
    const run = await runner({ mode: 'workspace-write', workspaceRoot: root, cwd: root })
    const commit = await run(`${GIT} commit -qam change && git log --oneline | wc -l`, 'danger-full-access')
    expect(commit.exitCode).toBe(0)
    expect(commit.stdout.text).toBe('2\n')
    expect(commit.sandbox).toMatchObject({ mode: 'danger-full-access', accessDenied: false })
  })

  it('workspace-write without a repository: no .git can be created at the root; the guard is gone afterwards', async () => {
    const root = join(dir.path, `plain-${++seq}`)
    mkdirSync(root)
    const run = await runner({ mode: 'workspace-write', workspaceRoot: root, cwd: root })
    const init = await run('echo x > file; mkdir -p .git/hooks; git init -q .')
    expect(init.sandbox?.accessDenied).toBe(true)
    expect(readdirSync(root)).toEqual(['file'])
    // A nested repository is the command's own (documented): it may be created.
    const nested = await run('git init -q nested && test -d nested/.git')
    expect(nested.exitCode).toBe(0)
  })

  it('a workspace inside a repository: git works there read-only, and the workspace cannot get its own .git', async () => {
    // Outside /tmp: the sandbox's private /tmp would hide a parent there.
    const parent = join(outside, `repo-${++seq}`)
    mkdirSync(parent)
    git(parent, 'init', '-q')
    const root = join(parent, 'pkg')
    mkdirSync(root)
    writeFileSync(join(root, 'b'), 'b\n')
    const run = await runner({ mode: 'workspace-write', workspaceRoot: root, cwd: root })
    const status = await run('git status --short .')
    expect(status).toMatchObject({ exitCode: 0 })
    expect(status.stdout.text).toBe('?? ./\n')
    const hijack = await run(`git init -q . || (mkdir .git && echo "[core]" > .git/config)`)
    expect(hijack.exitCode).not.toBe(0)
    expect(readdirSync(root)).toEqual(['b'])
  })

  it('the guard is shared by concurrent commands and removed by the last one', async () => {
    const root = join(dir.path, `shared-${++seq}`)
    mkdirSync(root)
    const instance = await createSandbox({ mode: 'workspace-write', workspaceRoot: root, cwd: root })
    instances.track(instance)
    const executor = instance.executor
    const long = executor.start(executor.resolve({ command: 'sleep 1; mkdir .git 2>&1; echo done' }))
    await new Promise((r) => setTimeout(r, 200))
    // A second command starts and ends while the first one holds the guard.
    const quick = await executor.run(executor.resolve({ command: 'mkdir .git' }))
    expect(quick.exitCode).toBe(1)
    expect(existsSync(join(root, '.git'))).toBe(true)
    await long.done
    expect(executor.readOutput(long.id).delta).toMatch(/mkdir: cannot create directory .\.git.: File exists\ndone\n$/)
    expect(existsSync(join(root, '.git'))).toBe(false)
  })
})
