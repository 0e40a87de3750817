/**
 * Escape attempts against the sandbox, under `read-only` and `workspace-write` with the network
 * off: writes outside the allowed places, git metadata, IPC, keyrings, sockets, descriptors,
 * processes outliving the call, the server's secrets. Each attempt runs as a command and is judged
 * from the host: the only thing that counts is what changed outside the sandbox.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import type { BashRunResult } from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SandboxExecutor } from '../src/index.js'
import { countProcesses, createSandbox, outsideDir, type SandboxInstance, sandboxUnavailable, scratchDir } from './helpers.js'

const reason = sandboxUnavailable()
const random = () => Math.random().toString(36).slice(2, 10)

/** System call numbers used by the attempts (perl's `syscall`). */
const SYSCALLS: Record<string, { addKey: number; requestKey: number; keyctl: number; ioUringSetup: number }> = {
  x64: { addKey: 248, requestKey: 249, keyctl: 250, ioUringSetup: 425 },
  arm64: { addKey: 217, requestKey: 218, keyctl: 219, ioUringSetup: 425 },
}
const nr = SYSCALLS[process.arch]

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'protocol.file.allow=always', ...args], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })


/** Counts connections accepted by a server. */
function listen(server: Server, ...args: unknown[]): Promise<{ accepted: () => number }> {
  let accepted = 0
  server.on('connection', (socket) => {
    accepted++
    socket.destroy()
  })
  return new Promise((resolve) => server.listen(...(args as [number]), () => resolve({ accepted: () => accepted })))
}

describe.skipIf(reason !== undefined)('escape attempts', () => {
  const secret = `s3cr3t-${random()}${random()}`
  const outside = outsideDir('dsh-attack-outside-').path
  const victim = join(outside, 'victim')
  const hostPwned = join(outside, 'PWNED')
  const servers: Server[] = []
  let tcp: { port: number; accepted: () => number }
  let unixSock: { path: string; accepted: () => number }
  let abstract: { name: string; accepted: () => number }
  let hostSleeper: { pid: number; marker: string }
  let hostQueue: { id: string; key: number } | undefined
  let hostKey: { id: number; payload: string } | undefined
  let otherSpill: string

  beforeAll(async () => {
    process.env.DSH_ATTACK_SECRET_TOKEN = secret
    writeFileSync(victim, 'original\n')
    const tcpServer = createServer()
    servers.push(tcpServer)
    const tcpCount = await listen(tcpServer, 0, '0.0.0.0')
    tcp = { port: (tcpServer.address() as { port: number }).port, ...tcpCount }
    const unixServer = createServer()
    servers.push(unixServer)
    const sockPath = join(outside, 'host.sock')
    unixSock = { path: sockPath, ...(await listen(unixServer, sockPath)) }
    const abstractServer = createServer()
    servers.push(abstractServer)
    const name = `dsh-attack-${random()}`
    abstract = { name, ...(await listen(abstractServer, `\0${name}`)) }
    const marker = `dsh-attack-host-${random()}`
    const sleeper = spawn('bash', ['--noprofile', '--norc', '-c', `exec -a ${marker} sleep 300`], { detached: true, stdio: 'ignore' })
    sleeper.unref()
    hostSleeper = { pid: sleeper.pid!, marker }
    const key = 0x5a000000 + Math.floor(Math.random() * 0xffffff)
    const made = spawnSync('perl', ['-e', `my $id = msgget(${key}, 01000 | 0600); defined $id or exit 1; print $id`], { encoding: 'utf8' })
    if (made.status === 0) hostQueue = { id: made.stdout.trim(), key }
    if (nr) {
      const payload = `keypayload-${random()}`
      // perl's syscall needs variables (it may write into its arguments) and numbers as numbers.
      const added = spawnSync('perl', ['-e', `my ($t, $n, $p) = ("user", "dsh-attack-host-${random()}", "${payload}"); print syscall(${nr.addKey}, $t, $n, $p, ${payload.length}, -4)`], { encoding: 'utf8' })
      const id = Number(added.stdout)
      if (id > 0) hostKey = { id, payload }
    }
    // Another executor of the same server (another session's server): its full-output files.
    const other = new LocalExecutor(new Context(), { maxOutputBytes: 1000 })
    const spilled = await other.run(other.resolve({ command: `echo ${secret}; seq 1 2000` }))
    otherSpill = spilled.stdout.spillPath!
    expect(readFileSync(otherSpill, 'utf8')).toContain(secret)
    afterAllCleanups.push(() => other.shutdown())
  })

  const afterAllCleanups: Array<() => unknown> = []
  afterAll(async () => {
    delete process.env.DSH_ATTACK_SECRET_TOKEN
    for (const server of servers) server.close()
    try {
      process.kill(hostSleeper.pid, 'SIGKILL')
    } catch {
      // Gone.
    }
    if (hostQueue) spawnSync('ipcrm', ['-q', hostQueue.id])
    if (hostKey && nr) spawnSync('perl', ['-e', `syscall(${nr.keyctl}, 3, ${hostKey.id})`])
    for (const cleanup of afterAllCleanups) await cleanup()
    rmSync(outside, { recursive: true, force: true })
  })

  for (const mode of ['read-only', 'workspace-write'] as const) {
    describe(`${mode}, network off`, () => {
      const ws = scratchDir('dsh-attack-ws-')
      let instance: SandboxInstance
      let executor: SandboxExecutor
      const markers: string[] = []
      const run = (command: string): Promise<BashRunResult> => executor.run(executor.resolve({ command, workdir: ws.path, timeoutMs: 20_000 }))
      /** A unique process name for a leftover check. */
      const mark = () => {
        const m = `dsh-attack-${random()}${random()}`
        markers.push(m)
        return m
      }

      beforeAll(async () => {
        const root = ws.path
        // The workspace: a repository with a linked worktree and a submodule.
        const upstream = join(root, '..', `${root.split('/').pop()}-upstream`)
        mkdirSync(upstream)
        git(upstream, 'init', '-q')
        git(upstream, 'commit', '-q', '--allow-empty', '-m', 'up')
        git(root, 'init', '-q')
        writeFileSync(join(root, 'tracked'), 'one\n')
        git(root, 'add', 'tracked')
        git(root, 'commit', '-q', '-m', 'init')
        git(root, 'submodule', '-q', 'add', upstream, 'sub')
        git(root, 'commit', '-q', '-m', 'sub')
        git(root, 'worktree', 'add', '-q', 'wt')
        afterAllCleanups.push(() => rmSync(upstream, { recursive: true, force: true }))
        instance = await createSandbox({ mode, workspaceRoot: root, cwd: root, network: false })
        executor = instance.executor
      })

      afterAll(async () => {
        await instance.dispose()
        for (const m of markers) expect(await countProcesses(m), `leftover ${m}`).toBe(0)
        // After everything: git on the host runs no code the sandbox planted.
        for (const dir of ['.', 'wt', 'sub']) spawnSync('git', ['status', '--short'], { cwd: join(ws.path, dir), stdio: 'ignore' })
        expect(existsSync(hostPwned)).toBe(false)
        ws.remove()
      })

      describe('writes outside the allowed places', () => {
        it('a file outside the workspace', async () => {
          await run(`echo pwned > ${victim}; echo pwned > ${join(outside, 'new')}`)
          expect(readFileSync(victim, 'utf8')).toBe('original\n')
          expect(existsSync(join(outside, 'new'))).toBe(false)
        })

        it('the home directory and /etc', async () => {
          const name = `dsh-attack-${random()}`
          await run(`echo x > ~/${name}; echo x > /etc/${name}; mkdir /usr/${name}`)
          for (const dir of [process.env.HOME ?? '/root', '/etc', '/usr']) expect(existsSync(join(dir, name))).toBe(false)
        })

        it('the host /tmp and /dev/shm (both private)', async () => {
          const name = `dsh-attack-${random()}`
          const result = await run(`echo x > /tmp/${name} && echo x > /dev/shm/${name} && ls /tmp/${name} /dev/shm/${name}`)
          expect(result.exitCode).toBe(0)
          expect(existsSync(join('/tmp', name))).toBe(false)
          expect(existsSync(join('/dev/shm', name))).toBe(false)
        })

        it('through a symbolic link in the workspace', async () => {
          await run(`ln -sf ${victim} link; echo pwned > link; echo pwned >> link`)
          expect(readFileSync(victim, 'utf8')).toBe('original\n')
        })

        it('through a hard link (another mount: EXDEV)', async () => {
          await run(`ln ${victim} hard && echo pwned > hard`)
          expect(readFileSync(victim, 'utf8')).toBe('original\n')
        })

        it('by remounting read-write, also inside a new user namespace', async () => {
          await run(`mount -o remount,rw / ; mount -o remount,rw ${outside}; unshare -Urm sh -c 'mount -o remount,rw ${outside}; mount -t tmpfs none ${outside}; echo pwned > ${victim}'; echo pwned > ${victim}`)
          expect(readFileSync(victim, 'utf8')).toBe('original\n')
        })

        it('by moving the workspace root away', async () => {
          // (Emptying it is allowed in workspace-write: that is writing the workspace.)
          await run(`mv ${ws.path} ${ws.path}-moved; mv ${ws.path}/.. /var/tmp/dsh-moved-parent`)
          expect(existsSync(join(ws.path, 'tracked'))).toBe(true)
          expect(existsSync(`${ws.path}-moved`)).toBe(false)
        })

        it('the spill directory (plant a file the executor trusts)', async () => {
          const spillDir = (executor as unknown as { spillDir: string }).spillDir
          await run(`touch ${spillDir}/planted; ln -s /etc/passwd ${spillDir}/dsh-bash-bash-99-stdout.log`)
          expect(existsSync(join(spillDir, 'planted'))).toBe(false)
          expect(existsSync(join(spillDir, 'dsh-bash-bash-99-stdout.log'))).toBe(false)
        })

        it('kernel settings, sysrq, device nodes', async () => {
          const before = readFileSync('/proc/sys/kernel/hostname', 'utf8')
          const result = await run('echo pwned > /proc/sys/kernel/hostname; hostname pwned; echo h > /proc/sysrq-trigger; mknod /dev/dsh-attack b 8 0; ls /dev | grep -E "^(sd|vd|nvme|xvd)" ; true')
          expect(readFileSync('/proc/sys/kernel/hostname', 'utf8')).toBe(before)
          expect(result.stdout.text).toBe('')
        })
      })

      describe('git metadata', () => {
        it('core.fsmonitor in .git/config', async () => {
          await run(`git config core.fsmonitor "touch ${hostPwned}"; printf '[core]\\n\\tfsmonitor = touch ${hostPwned}\\n' >> .git/config`)
          expect(readFileSync(join(ws.path, '.git', 'config'), 'utf8')).not.toContain('fsmonitor')
        })

        it('swapping .git for a hostile copy', async () => {
          await run(`mv .git .git-orig; cp -r .git .git-new && git config -f .git-new/config core.fsmonitor "touch ${hostPwned}" && (mv .git-new .git || (rm -rf .git; mv .git-new .git))`)
          expect(readFileSync(join(ws.path, '.git', 'config'), 'utf8')).not.toContain('fsmonitor')
          expect(existsSync(join(ws.path, '.git-orig'))).toBe(false)
        })

        it('commondir pointing at a hostile copy', async () => {
          await run(`mkdir -p evil && cp -r .git/. evil/ && git config -f evil/config core.fsmonitor "touch ${hostPwned}"; echo "$PWD/evil" > .git/commondir; echo "$PWD/evil" > .git/worktrees/wt/commondir`)
          expect(existsSync(join(ws.path, '.git', 'commondir'))).toBe(false)
          expect(readFileSync(join(ws.path, '.git', 'worktrees', 'wt', 'commondir'), 'utf8')).toBe('../..\n')
        })

        it('hooks, info/ and a hooksPath', async () => {
          await run(`printf '#!/bin/sh\\ntouch ${hostPwned}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; echo '* filter=evil' > .git/info/attributes; git config core.hooksPath "$PWD/myhooks"`)
          expect(existsSync(join(ws.path, '.git', 'hooks', 'pre-commit'))).toBe(false)
          expect(existsSync(join(ws.path, '.git', 'info', 'attributes'))).toBe(false)
        })

        it('removing .git', async () => {
          await run('rm -rf .git; rm -rf .git/*')
          expect(existsSync(join(ws.path, '.git', 'HEAD'))).toBe(true)
          expect(existsSync(join(ws.path, '.git', 'objects'))).toBe(true)
        })

        it('a FIFO as .gitmodules (or a huge one) does not block or flood the next launch', async () => {
          await run('rm -f .gitmodules; mkfifo .gitmodules')
          const next = await run('echo alive')
          expect(next.stdout.text).toBe('alive\n')
          await run('rm -f .gitmodules; git show HEAD:.gitmodules > .gitmodules 2>/dev/null; true')
        })

        it('a linked worktree: its .git file redirected, its directory renamed', async () => {
          const before = readFileSync(join(ws.path, 'wt', '.git'), 'utf8')
          await run(`echo "gitdir: $PWD/evil" > wt/.git; mv wt wt-moved && mkdir -p wt && cp -r evil wt/.git`)
          expect(readFileSync(join(ws.path, 'wt', '.git'), 'utf8')).toBe(before)
          expect(existsSync(join(ws.path, 'wt-moved'))).toBe(false)
        })

        it('a submodule: its .git file replaced by a hostile directory, its directory renamed', async () => {
          const before = readFileSync(join(ws.path, 'sub', '.git'), 'utf8')
          await run(`rm -f sub/.git; cp -r evil sub/.git; mv sub sub-moved && mkdir sub && cp -r evil sub/.git; printf '[core]\\n\\tworktree = ../../../evil\\n' >> .git/modules/sub/config`)
          expect(readFileSync(join(ws.path, 'sub', '.git'), 'utf8')).toBe(before)
          expect(readFileSync(join(ws.path, '.git', 'modules', 'sub', 'config'), 'utf8')).not.toContain('evil')
        })
      })

      describe('IPC', () => {
        it('System V message queues, shared memory and semaphores made inside are not visible outside', async () => {
          const key = 0x5b000000 + Math.floor(Math.random() * 0xffffff)
          const result = await run(`perl -e 'defined msgget(${key}, 01000|0600) or die "msgget: $!"; defined shmget(${key}, 4096, 01000|0600) or die "shmget: $!"; defined semget(${key}, 1, 01000|0600) or die "semget: $!"; print "made\\n"'`)
          expect(result.stdout.text).toBe('made\n')
          const hex = `0x${key.toString(16).padStart(8, '0')}`
          expect(execFileSync('ipcs', ['-a'], { encoding: 'utf8' })).not.toContain(hex)
        })

        it('a host message queue is out of reach', async () => {
          if (!hostQueue) return expect.fail('could not create a host message queue')
          const result = await run(`ipcs -q; perl -e 'msgsnd(${hostQueue.id}, pack("l! a*", 1, "pwned"), 0) or die "msgsnd: $!"; my $id = msgget(${hostQueue.key}, 0); print defined $id ? "found\\n" : "none\\n"'`)
          expect(result.stdout.text).not.toContain(hostQueue.key.toString(16))
          expect(result.stdout.text).not.toContain('found')
          expect(execFileSync('ipcs', ['-q', '-i', hostQueue.id], { encoding: 'utf8' })).toMatch(/qnum=0\b/)
        })
      })

      describe.skipIf(!nr)('kernel keyrings', () => {
        it('a key added inside (user, session, user-session keyrings) fails and is not visible outside', async () => {
          const name = `dsh-attack-key-${random()}`
          const result = await run(`for ring in -4 -3 -5 -2; do perl -e 'my ($t, $n, $p) = ("user", "${name}", "x"); my $r = syscall(${nr?.addKey}, $t, $n, $p, 1, $ARGV[0] + 0); print "$r $!\\n"' -- $ring; done`)
          expect(result.stdout.text.trim().split('\n')).toEqual(Array(4).fill('-1 Operation not permitted'))
          expect(readFileSync('/proc/keys', 'utf8')).not.toContain(name)
        })

        it('a host key cannot be read, searched or requested', async () => {
          if (!hostKey) return expect.fail('could not add a host key')
          const result = await run(`perl -e 'my $buf = "\\0" x 256; my $r = syscall(${nr?.keyctl}, 11, ${hostKey.id}, $buf, 256); print "$r $buf\\n"; my ($t, $d) = ("user", "x"); $r = syscall(${nr?.requestKey}, $t, $d, 0, 0); print "$r $!\\n"'; cat /proc/keys`)
          expect(result.stdout.text).not.toContain(hostKey.payload)
          expect(result.stdout.text).toContain('-1 Operation not permitted')
        })
      })

      describe('sockets and network', () => {
        it('a TCP server on the host, at 127.0.0.1 and at every other address', async () => {
          const addresses = Object.values(networkInterfaces()).flat().filter((a) => a && a.family === 'IPv4').map((a) => a!.address)
          const attempts = addresses.map((address) => `(echo x > /dev/tcp/${address}/${tcp.port}) 2>/dev/null && echo connected-${address}`).join('; ')
          const result = await run(`${attempts}; true`)
          expect(result.stdout.text).toBe('')
          expect(tcp.accepted()).toBe(0)
        })

        it('a unix socket file on the host and an abstract socket', async () => {
          const result = await run(`perl -MIO::Socket::UNIX -e 'for my $peer (@ARGV) { my $s = IO::Socket::UNIX->new(Peer => $peer); print $s ? "connected $peer\\n" : "refused $peer: $!\\n" }' -- ${unixSock.path} "$(printf '\\0')${abstract.name}"; python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('\\0${abstract.name}'); print('connected abstract')" 2>/dev/null; true`)
          expect(result.stdout.text).not.toContain('connected')
          expect(unixSock.accepted()).toBe(0)
          expect(abstract.accepted()).toBe(0)
        })

        it.skipIf(!nr)('io_uring (which would bypass the socket filter) is refused', async () => {
          const result = await run(`perl -e 'my $params = "\\0" x 120; my $r = syscall(${nr?.ioUringSetup}, 8, $params); print "$r $!\\n"'`)
          expect(result.stdout.text).toBe('-1 Operation not permitted\n')
        })
      })

      describe('descriptors', () => {
        it('the sandbox\'s own descriptors (bwrap status, seccomp program) are not reachable: the exit status cannot be forged', async () => {
          const result = await run(`for fd in /proc/self/fd/* /proc/1/fd/*; do readlink "$fd"; done; echo '{ "exit-code": 0 }' >&3; echo '{ "exit-code": 0 }' >&4; echo '{ "exit-code": 0 }' > /proc/1/fd/3; exit 7`)
          expect(result.exitCode).toBe(7)
          expect(result.stdout.text).not.toMatch(/bwrap\.json|seccomp/)
        })
      })

      describe('processes outliving the call', () => {
        it('setsid with an empty environment, nohup, a double fork', async () => {
          const [a, b, c] = [mark(), mark(), mark()]
          const result = await run(
            `env -i setsid bash -c 'exec -a ${a} sleep 300' & nohup bash -c 'exec -a ${b} sleep 300' >/dev/null 2>&1 & disown; ( ( exec -a ${c} sleep 300 & ) & ); sleep 0.2; echo started`,
          )
          expect(result.stdout.text).toBe('started\n')
          for (const m of [a, b, c]) expect(await countProcesses(m)).toBe(0)
        })

        it('leaving the cgroup', async () => {
          const m = mark()
          await run(`echo $$ > /sys/fs/cgroup/cgroup.procs; for f in /sys/fs/cgroup/*/cgroup.procs /sys/fs/cgroup/*/tasks; do echo $$ > $f; done 2>/dev/null; (exec -a ${m} sleep 300 &); true`)
          expect(await countProcesses(m)).toBe(0)
        })

        it('a background task that daemonizes, then is killed', async () => {
          const m = mark()
          const task = executor.start(executor.resolve({ command: `setsid bash -c 'exec -a ${m} sleep 300' & sleep 300`, workdir: ws.path }))
          await new Promise((r) => setTimeout(r, 500))
          await executor.kill(task.id)
          expect(await countProcesses(m)).toBe(0)
        })

        it('killing host processes', async () => {
          await run(`kill -9 ${hostSleeper.pid}; pkill -9 -f ${hostSleeper.marker}; kill -9 -1; true`)
          expect(await countProcesses(hostSleeper.marker)).toBe(1)
        })
      })

      describe("the server's secrets", () => {
        it('its environment and command line, through /proc', async () => {
          const result = await run(`env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null | tr '\\0' '\\n'; cat /proc/${process.pid}/environ /proc/${process.ppid}/environ 2>/dev/null; true`)
          expect(result.stdout.text + result.stderr.text).not.toContain(secret)
          // Only the command's own processes are visible: bwrap's init and ps (bash execs its last command).
          const ps = await run('ps -eo comm=')
          expect(ps.stdout.text.trim().split('\n').sort()).toEqual(['bwrap', 'ps'])
        })

        it("another executor's full-output files", async () => {
          const result = await run(`cat ${otherSpill}; ls ${join(otherSpill, '..')}`)
          expect(result.stdout.text).not.toContain(secret)
          expect(result.exitCode).not.toBe(0)
        })
      })
    })
  }

  describe('a running command races the next launch (workspace-write)', () => {
    it('swapping a pinned directory for a symbolic link to the host never makes the host writable', async () => {
      const ws = scratchDir('dsh-attack-race-')
      const target = join(outside, `race-${random()}`)
      mkdirSync(target)
      const instance = await createSandbox({ mode: 'workspace-write', workspaceRoot: ws.path, cwd: ws.path })
      const executor = instance.executor
      try {
        mkdirSync(join(ws.path, 'a', 'b'), { recursive: true })
        writeFileSync(join(ws.path, 'a', 'b', '.git'), 'gitdir: nowhere\n')
        // Started before .gitmodules names a/b, so a is not pinned in its own sandbox: it swaps it.
        const swapper = executor.start(
          executor.resolve({
            command: `printf '[submodule "b"]\\n\\tpath = a/b\\n' > .gitmodules; perl -e 'my $end = time + 10; while (time < $end) { rename "a", "a.real"; symlink $ARGV[0], "a"; select(undef, undef, undef, 0.002); unlink "a"; rename "a.real", "a"; select(undef, undef, undef, 0.001) }' ${target}`,
          }),
        )
        let started = 0
        for (let i = 0; i < 60; i++) {
          try {
            const result = await executor.run(executor.resolve({ command: `echo pwned > ${target}/pwned-${i}; echo pwned > a/pwned-${i}` }))
            started += result.exitCode === null ? 0 : 1
          } catch (error) {
            // Refusing to start is fine: the metadata moved under the scan.
            expect(String(error)).toMatch(/changed while the sandbox was being set up|bwrap/)
          }
        }
        await executor.kill(swapper.id)
        expect(started).toBeGreaterThan(0)
        expect(readdirSync(target)).toEqual([])
      } finally {
        await instance.dispose()
        ws.remove()
      }
    })
  })

  describe('processes outliving the call, marker containment (found through /proc, not a cgroup)', () => {
    it('a process that drops the marker (env -i setsid) is still found through the PID namespace and stopped', async () => {
      const ws = scratchDir('dsh-attack-marker-')
      const instance = await createSandbox({ mode: 'workspace-write', workspaceRoot: ws.path, cwd: ws.path, containment: 'marker' })
      try {
        const m = `dsh-attack-${random()}${random()}`
        const result = await instance.executor.run(
          instance.executor.resolve({ command: `env -i setsid bash -c 'exec -a ${m} sleep 300' & sleep 0.2; echo started` }),
        )
        expect(result.leftoverProcesses).toBe(1)
        expect(await countProcesses(m)).toBe(0)
      } finally {
        await instance.dispose()
        ws.remove()
      }
    })
  })
})
