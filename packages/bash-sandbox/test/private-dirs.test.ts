/**
 * The executor's private directories stay private (issue 25, rows 6 and 7): attacks on the
 * directory that holds every session's output, the executor's own files and the seccomp program,
 * through the workdir (a path into it, a symbolic link, `..`, a directory containing it), the spill
 * directory's placement (outside /tmp, inside the workspace, through TMPDIR or a symbolic link, a
 * bind mount), and a rewritten seccomp program. Judged from the host: what the command printed,
 * and whether it ran at all. Each attack has its control: the secret really is in the other
 * session's file on the host, and the session that owns it can read it.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import type { BashExecutor, BashRunResult } from '@deepseek-ai/dsh-bash'
import { ownerSpillDirName } from '@deepseek-ai/dsh-bash-kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxExecutor } from '../src/index.js'
import { createSandbox, outsideDir, type SandboxInstance, sandboxUnavailable, scratchDir } from './helpers.js'

const reason = sandboxUnavailable()
const random = () => Math.random().toString(36).slice(2, 10)
const secret = `s3cr3t-${random()}${random()}`
/** Prints the secret, then enough lines that the output spills to a file. */
const SPILL = `echo ${secret}; seq 1 3000`
/** Finds the secret in files (the first line of each; output is cut to its last 1000 bytes). */
const steal = (...paths: string[]) => `grep -rsh -m 1 s3cr3t- ${paths.join(' ')}`

const PRIVATE_WORKDIR = "the workdir is inside the executor's private directory, which sandboxed commands may not see, so no command was run"
const SPILL_IN_WORKSPACE = 'invalid sandbox executor config: the spill directory is inside the workspace root, where sandboxed commands can write'


/** What a command printed, or the error that refused it. */
async function attempt(bash: BashExecutor, request: { command: string; owner?: string; workdir?: string }): Promise<BashRunResult | Error> {
  try {
    return await bash.run(bash.resolve({ timeoutMs: 20_000, ...request }))
  } catch (error) {
    return error as Error
  }
}

const printed = (outcome: BashRunResult | Error) => (outcome instanceof Error ? outcome.message : outcome.stdout.text + outcome.stderr.text)

/** The spill path of session `owner`'s big output (read on the host: the control). */
async function spill(bash: BashExecutor, owner: string): Promise<string> {
  const result = await bash.run(bash.resolve({ command: SPILL, owner }))
  const path = result.stdout.spillPath
  expect(path, 'the output spilled').toBeTypeOf('string')
  expect(readFileSync(path!, 'utf8')).toContain(secret)
  return path!
}

describe.skipIf(reason !== undefined)('private directories stay private', () => {
  for (const mode of ['read-only', 'workspace-write'] as const) {
    describe(`${mode}: the workdir`, () => {
      const ws = scratchDir('dsh-private-ws-')
      let instance: SandboxInstance
      let bash: BashExecutor
      let pathA: string
      let privateDir: string

      beforeAll(async () => {
        instance = await createSandbox({ mode, workspaceRoot: ws.path, cwd: ws.path, maxOutputBytes: 1000 })
        bash = instance.executor
        pathA = await spill(bash, 'session-a')
        privateDir = dirname(dirname(pathA))
      })
      afterAll(async () => {
        await instance.dispose()
        ws.remove()
      })

      it('a workdir inside the private directory is refused, however it is named: directly, through a symbolic link, through ..', async () => {
        const ownerA = dirname(pathA)
        symlinkSync(privateDir, join(ws.path, 'private-link'))
        symlinkSync(ownerA, join(ws.path, 'owner-link'))
        const workdirs = [privateDir, ownerA, `${ownerA}/..`, join(ws.path, 'private-link'), join(ws.path, 'owner-link'), join(ws.path, 'private-link', basename(ownerA))]
        for (const workdir of workdirs) {
          const outcome = await attempt(bash, { command: `${steal('owner-*/dsh-bash-*-stdout.log', 'dsh-bash-*-stdout.log', '.')}; ls -A`, owner: 'session-b', workdir })
          expect(printed(outcome), workdir).not.toContain(secret)
          expect(outcome, workdir).toBeInstanceOf(Error)
          expect((outcome as Error).message.startsWith(`${PRIVATE_WORKDIR}: ${resolve(workdir)}`), (outcome as Error).message).toBe(true)
          expect((outcome as Error & { code?: string }).code).toBe('DSH_INVALID_REQUEST')
          expect(() => bash.start(bash.resolve({ command: 'true', owner: 'session-b', workdir }))).toThrow(PRIVATE_WORKDIR)
        }
        // Also the session's own directory: no workdir in the private directory is needed.
        expect(printed(await attempt(bash, { command: 'true', owner: 'session-a', workdir: ownerA }))).toContain(PRIVATE_WORKDIR)
      })

      it('a workdir that contains it (/, /tmp, the workspace) runs; the session sees its own spill files there, and no other session\'s', async () => {
        for (const workdir of ['/', '/tmp', ws.path]) {
          const other = await attempt(bash, { command: `${steal(pathA, privateDir)}; cat ${privateDir}/prelude.sh`, owner: 'session-b', workdir })
          expect(printed(other), workdir).not.toContain(secret)
          expect(printed(other), workdir).not.toContain('BASH_ENV')
          // Only its own directory is there.
          const listing = await attempt(bash, { command: `ls -A ${privateDir}`, owner: 'session-b', workdir })
          expect(printed(listing), workdir).toBe(`${ownerSpillDirName('session-b')}\n`)
          const own = await attempt(bash, { command: `head -n 1 ${pathA}; tail -n 1 ${pathA}`, owner: 'session-a', workdir })
          expect(printed(own), workdir).toBe(`${secret}\n3000\n`)
        }
      })
    })
  }

  describe('a spill directory outside /tmp (the private /tmp does not hide it)', () => {
    for (const mode of ['read-only', 'workspace-write'] as const) {
      it(`${mode}: other sessions' files, the executor's own files and its pipe directory show nothing; the session's own stay readable`, async () => {
        const ws = scratchDir('dsh-private-ws-')
        const spillParent = outsideDir('dsh-private-spill-')
        const instance = await createSandbox({ mode, workspaceRoot: ws.path, cwd: ws.path, maxOutputBytes: 1000, spillDir: spillParent.path })
        try {
          const bash = instance.executor
          const pathA = await spill(bash, 'session-a')
          const privateDir = dirname(dirname(pathA))
          // The control: on the host, the directory holds the other session's output and the executor's files.
          expect(readdirSync(privateDir)).toEqual(expect.arrayContaining([basename(dirname(pathA)), 'prelude.sh']))
          expect(readdirSync(spillParent.path).some((name) => name.startsWith('dsh-bash-pipes-'))).toBe(true)
          const probe = `${steal(pathA, spillParent.path)}; cat ${privateDir}/prelude.sh`
          for (const workdir of [ws.path, '/', spillParent.path]) {
            const other = await attempt(bash, { command: probe, owner: 'session-b', workdir })
            expect(printed(other), workdir).not.toContain(secret)
            expect(printed(other), workdir).not.toContain('BASH_ENV')
            // Only its own directory is there; the pipe directory is empty.
            expect(printed(await attempt(bash, { command: `ls -A ${privateDir}`, owner: 'session-b', workdir })), workdir).toBe(`${ownerSpillDirName('session-b')}\n`)
            expect(printed(await attempt(bash, { command: `ls -A ${spillParent.path}/dsh-bash-pipes-*`, owner: 'session-b', workdir })), workdir).toBe('')
          }
          const own = await attempt(bash, { command: `tail -n 1 ${pathA}; ls -A ${privateDir}`, owner: 'session-a', workdir: spillParent.path })
          expect(printed(own)).toBe(`3000\n${basename(dirname(pathA))}\n`)
          // Writing there changes nothing on the host (an empty tmpfs, thrown away).
          await attempt(bash, { command: `touch ${privateDir}/planted ${dirname(pathA)}/planted`, owner: 'session-a' })
          expect(existsSync(join(privateDir, 'planted'))).toBe(false)
          expect(existsSync(join(dirname(pathA), 'planted'))).toBe(false)
        } finally {
          await instance.dispose()
          ws.remove()
          spillParent.remove()
        }
      })
    }
  })

  describe('a spill directory inside the workspace is refused (a command could rewrite the executor\'s files)', () => {
    const ws = scratchDir('dsh-private-ws-')
    const outside = outsideDir('dsh-private-outside-')
    afterAll(() => {
      ws.remove()
      outside.remove()
    })

    it('spillDir, TMPDIR, a symbolic link leading into it, a workspace root of / or /tmp', async () => {
      symlinkSync(join(ws.path, 'spill'), join(outside.path, 'link'))
      const refused = async (config: Record<string, unknown>, path: string, root = ws.path) => {
        let error: unknown
        try {
          await new SandboxExecutor(new Context(), { workspaceRoot: root, cwd: ws.path, ...config }).shutdown()
        } catch (caught) {
          error = caught
        }
        expect(error).toMatchObject({
          code: 'DSH_INVALID_CONFIG',
          message: `${SPILL_IN_WORKSPACE} (${path}, workspace root ${root}); set spillDir (or TMPDIR) to a directory outside it`,
        })
      }
      await refused({ spillDir: join(ws.path, 'spill') }, join(ws.path, 'spill'))
      await refused({ spillDir: ws.path }, ws.path)
      await refused({ spillDir: join(outside.path, 'link') }, join(ws.path, 'spill'))
      await refused({ spillDir: outside.path }, outside.path, '/')
      await refused({ spillDir: join(outside.path, 'a', 'b') }, join(outside.path, 'a', 'b'), outside.path)
      const saved = process.env.TMPDIR
      process.env.TMPDIR = join(ws.path, '.tmp')
      try {
        await refused({}, join(ws.path, '.tmp'))
      } finally {
        if (saved === undefined) delete process.env.TMPDIR
        else process.env.TMPDIR = saved
      }
      await refused({ spillDir: '/tmp' }, '/tmp', '/tmp')
      // Nothing was created in the workspace.
      expect(readdirSync(ws.path)).toEqual([])
      // The control: the same workspace with the spill directory beside it works.
      const fine = await createSandbox({ workspaceRoot: ws.path, cwd: ws.path, spillDir: outside.path })
      try {
        expect((await fine.executor.run(fine.executor.resolve({ command: 'echo ok' }))).stdout.text).toBe('ok\n')
      } finally {
        await fine.dispose()
      }
    })
  })

  describe('the seccomp program is held in memory, never reopened by path', () => {
    it('rewriting every file of the private directory with an allow-all program leaves the filter in force', async () => {
      const ws = scratchDir('dsh-private-ws-')
      const instance = await createSandbox({ mode: 'workspace-write', workspaceRoot: ws.path, cwd: ws.path, network: false, maxOutputBytes: 1000 })
      try {
        const bash = instance.executor
        const privateDir = dirname(dirname(await spill(bash, 'session-a')))
        // One instruction: SECCOMP_RET_ALLOW.
        const allowAll = Buffer.from([0x06, 0, 0, 0, 0, 0, 0xff, 0x7f])
        const files: string[] = []
        const walk = (path: string) => {
          for (const name of readdirSync(path)) {
            const full = join(path, name)
            if (lstatSync(full).isDirectory()) walk(full)
            else if (lstatSync(full).isFile()) files.push(full)
          }
        }
        walk(privateDir)
        for (const file of files) writeFileSync(file, allowAll)
        writeFileSync(join(privateDir, 'dsh-bash-seccomp.bpf'), allowAll)
        const probe = `grep -E '^Seccomp:' /proc/self/status; perl -e 'print socket(S, 1, 1, 0) ? "unix created\\n" : "unix: $!\\n"; print socket(V, 40, 1, 0) ? "vsock created\\n" : "vsock: $!\\n"'`
        const result = await bash.run(bash.resolve({ command: probe }))
        expect(result.stdout.text).toBe('Seccomp:\t2\nunix: Operation not permitted\nvsock: Operation not permitted\n')
        // The program has no name anywhere: only a descriptor of this process holds it.
        const held = readdirSync('/proc/self/fd').map((fd) => {
          try {
            return readlinkSync(`/proc/self/fd/${fd}`)
          } catch {
            return ''
          }
        })
        expect(held.some((target) => target.startsWith(`${privateDir}/`) && target.endsWith('(deleted)'))).toBe(true)
      } finally {
        await instance.dispose()
        ws.remove()
      }
    })
  })

  describe('a bind mount shows the private directory at a second path (in a private mount namespace)', () => {
    const fixture = fileURLToPath(new URL('./fixtures/alias-probe.mjs', import.meta.url))
    const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url))
    const canMount = process.getuid?.() === 0 && spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0

    it.skipIf(!canMount || !existsSync(dist))('the alias is masked too, a workdir through it is refused, a workspace holding it is refused', () => {
      const base = outsideDir('dsh-private-alias-')
      try {
        const [spillParent, alias, ws] = ['spill', 'alias', 'ws'].map((name) => join(base.path, name))
        for (const dir of [spillParent, alias, ws, join(ws, 'mnt')]) mkdirSync(dir)
        // The mounts exist only in the child's own mount namespace, and end with it.
        const script = `mount --bind "$1" "$2" && mount --bind "$1" "$3/mnt" && exec node "$4" "$5"`
        const input = JSON.stringify({ spillParent, alias, ws, secret })
        const result = spawnSync('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'sh', spillParent, alias, ws, fixture, input], {
          encoding: 'utf8',
          timeout: 60_000,
        })
        expect(result.status, result.stderr).toBe(0)
        const report = JSON.parse(result.stdout) as Record<string, string>
        // The control: the secret is in session A's file, readable through the alias on the host side.
        expect(report.hostThroughAlias).toContain(secret)
        expect(report.ownThroughCanonical).toBe(`${secret}\n`)
        expect(report.otherThroughAlias).not.toContain(secret)
        expect(report.otherListingAlias).not.toContain('owner-')
        expect(report.workdirThroughAlias).toMatch(new RegExp(`^${PRIVATE_WORKDIR}: ${alias}/dsh-bash-`))
        expect(report.workspaceHoldingAlias).toMatch(new RegExp(`^${SPILL_IN_WORKSPACE} \\(${spillParent}, reachable as ${ws}/mnt, workspace root ${ws}\\)`))
      } finally {
        base.remove()
      }
    })
  })
})
