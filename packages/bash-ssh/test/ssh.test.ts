import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { DEFAULT_SECRET_PATTERNS, recordLogs } from '@deepseek-ai/dsh-bash'
import { trackInstances, uniqueMarker as digits } from '@deepseek-ai/dsh-bash/conformance'
import { hostMatches, parseSshConfig, parseSshTarget, SSH_ERROR, SshExecutor } from '../src/index.js'
import { describeNote } from '@deepseek-ai/dsh-bash-agent'
import { createSsh, hostEntry, type SshInstance } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, TEST_USER, type TestKeys, unavailableReason, userProcesses } from './sshd.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the tests against a real sshd: ${skip}`)

const WAIT = { timeout: 30_000, interval: 50 }


describe('config', () => {
  const host = { host: 'example.org', username: 'u', privateKey: 'x', hostKey: { fingerprint: `SHA256:${'A'.repeat(43)}` } }

  it('applies the defaults', () => {
    const config = parseSshConfig({ hosts: [host] })
    expect(config.hosts[0].port).toBe(22)
    expect(config).toMatchObject({ shell: 'bash', timeoutMs: 120_000, graceMs: 3_000, connectAttempts: 3, maxSessionsPerConnection: 10 })
    expect(config).toMatchObject({ waitReportMs: 10_000, stoppedWaitMs: 15_000 })
  })

  it("words the remote agent's wait reports: pid, name, state and why each process counts", () => {
    expect(describeNote('12:group:S:sleep 13:marker:T:bash 14:tree:R:?')).toBe(
      '12 sleep (state S, in its process group), 13 bash (state T, outside the group, carrying its marker), ' +
        '14 ? (state R, outside the group, without its marker, a child of one of its processes)',
    )
    expect(describeNote('15:group:?:')).toBe('15 ? (state ?, in its process group)')
    expect(describeNote('')).toBe('nothing (a process ended between two scans)')
    expect(describeNote('16:marker:S:x +7')).toBe('16 x (state S, outside the group, carrying its marker), and 7 more')
    expect(describeNote('17:cgroup:S:y')).toBe('17 y (state S, in its cgroup, outside the group, without its marker)')
  })

  it('limits: memory and pids only (rlimits have no cpu or tmp)', () => {
    expect(parseSshConfig({ hosts: [host], limits: { memory: '1G', pids: 100 } }).limits).toEqual({ memory: 2 ** 30, pids: 100 })
    expect(() => parseSshConfig({ hosts: [host], limits: { cpu: 1 } })).toThrow('limits: an SSH host takes memory and pids only (rlimits; there is none for cpu or tmp)')
    expect(() => parseSshConfig({ hosts: [host], limits: { memory: 'lots' } })).toThrow('memory must be a positive size such as 512M or 4G, got "lots"')
  })

  it('names the bad key', () => {
    expect(() => parseSshConfig({})).toThrow(/invalid ssh executor config: hosts must be a list/)
    expect(() => parseSshConfig({ hosts: [] })).toThrow(/hosts must list at least one host/)
    expect(() => parseSshConfig({ hosts: [{ ...host, port: 70000 }] })).toThrow(/hosts\.0\.port/)
    expect(() => parseSshConfig({ hosts: [{ ...host, hostKey: undefined }] })).toThrow(/hosts\.0\.hostKey/)
    expect(() => parseSshConfig({ hosts: [{ ...host, hostKey: { fingerprint: 'MD5:aa' } }] })).toThrow(/hosts\.0\.hostKey/)
    expect(() => parseSshConfig({ hosts: [{ ...host, privateKey: undefined }] })).toThrow(/exactly one of privateKey and privateKeyPath/)
    expect(() => parseSshConfig({ hosts: [host], graceMs: -1 })).toThrow(/graceMs must not be negative/)
    expect(() => parseSshConfig({ hosts: [host], cwd: 'relative' })).toThrow(/cwd must be an absolute remote path/)
    expect(() => parseSshConfig({ hosts: [host], bogus: 1 })).toThrow(/unknown key\(s\) "bogus"/)
    expect(() => parseSshConfig({ hosts: [host, host] })).toThrow(/u@example\.org:22 is listed twice/)
    expect(() => parseSshConfig({ hosts: [host, host] })).toThrow(expect.objectContaining({ code: SSH_ERROR.invalidConfig }))
    expect(() => parseSshConfig({ hosts: [host], graceMs: -1 })).toThrow(expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }))
  })

  it('refuses an unreadable or invalid private key, naming the key', () => {
    const ctx = new Context()
    expect(() => new SshExecutor(ctx, { hosts: [{ ...host, privateKey: undefined, privateKeyPath: '/no/such/key' }] })).toThrow(
      /hosts\.0\.privateKeyPath: cannot read \/no\/such\/key/,
    )
    expect(() => new SshExecutor(ctx, { hosts: [{ ...host, privateKey: 'not a key' }] })).toThrow(/hosts\.0\.privateKey/)
    expect(() => new SshExecutor(ctx, { hosts: [{ ...host, privateKey: 'not a key' }] })).toThrow(expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }))
  })

  it('parses user@host[:port] targets', () => {
    expect(parseSshTarget('me@box')).toEqual({ username: 'me', host: 'box', port: 22 })
    expect(parseSshTarget('me@10.0.0.1:2222')).toEqual({ username: 'me', host: '10.0.0.1', port: 2222 })
    expect(parseSshTarget('me@[::1]:22')).toEqual({ username: 'me', host: '::1', port: 22 })
    expect(() => parseSshTarget('box')).toThrow(/expected user@host\[:port\]/)
    expect(() => parseSshTarget('box')).toThrow(expect.objectContaining({ code: 'DSH_SSH_INVALID_TARGET' }))
    expect(() => parseSshTarget('me@box:0')).toThrow(expect.objectContaining({ code: 'DSH_SSH_INVALID_TARGET', message: 'invalid ssh target "me@box:0": port must be 1–65535' }))
  })

  it('matches known_hosts patterns like OpenSSH', () => {
    expect(hostMatches('a.example,b.example', 'b.example')).toBe(true)
    expect(hostMatches('*.example,!bad.example', 'bad.example')).toBe(false)
    expect(hostMatches('*.example', 'x.example')).toBe(true)
    expect(hostMatches('[127.0.0.1]:2222', '[127.0.0.1]:2222')).toBe(true)
    expect(hostMatches('127.0.0.1', '[127.0.0.1]:2222')).toBe(false)
  })
})

describe.skipIf(skip !== undefined)('against real sshd servers', () => {
  let keys: TestKeys
  let a: SshdInstance
  let b: SshdInstance
  /** A server whose control waits stall (the scripts' test hook): a wait that never answers. */
  let stall: SshdInstance
  /** A server where only a command's first wait stalls (as one stopped or killed by a stranger). */
  let stallOnce: SshdInstance
  // One disposal after the other: they close connections to the same sshd.
  const instances = trackInstances<SshInstance>({ sequential: true })

  async function executor(config: Partial<Parameters<typeof createSsh>[0]> = {}, servers = [a]): Promise<SshExecutor> {
    const instance = await createSsh({ cwd: keys.workdir, hosts: servers.map((s) => hostEntry(keys, s)), reconnectDelayMs: 100, ...config })
    instances.track(instance)
    return instance.executor
  }

  const run = (bash: SshExecutor, command: string, extra: Record<string, unknown> = {}) => bash.run(bash.resolve({ command, ...extra }))

  beforeAll(async () => {
    keys = makeKeys()
    a = await startSshd(keys, 'a')
    // A server that allows fewer sessions per connection than the executor assumes.
    b = await startSshd(keys, 'b', { maxSessions: 3 })
    stall = await startSshd(keys, 'stall', { setEnv: 'DSH_BASH_AGENT_TEST_STALL_WAITS=1' })
    stallOnce = await startSshd(keys, 'stall-once', { setEnv: 'DSH_BASH_AGENT_TEST_STALL_WAITS=once' })
  })

  afterAll(async () => {
    // Every executor is disposed: no process of the test user is left on the "remote" machine, not
    // even sshd's per-connection processes (all connections are closed).
    try {
      if (keys) await vi.waitFor(() => expect(userProcesses()).toEqual([]), WAIT)
    } finally {
      // Also when that check fails: a failed run must not leave its servers listening.
      await a?.stop()
      await b?.stop()
      await stall?.stop()
      await stallOnce?.stop()
      keys?.remove()
    }
  })

  describe('host keys', () => {
    it('accepts the key listed in known_hosts and a matching pinned fingerprint', async () => {
      expect((await run(await executor(), 'echo ok')).stdout.text).toBe('ok\n')
      const pinned = await executor({ hosts: [hostEntry(keys, a, { hostKey: { fingerprint: a.fingerprint } })] })
      expect((await run(pinned, 'echo ok')).stdout.text).toBe('ok\n')
    })

    it('reads hashed known_hosts entries (ssh-keygen -H)', async () => {
      const known = join(keys.dir, 'hashed_known_hosts')
      writeFileSync(known, `[127.0.0.1]:${a.port} ${a.hostPublicKey}\n`)
      execFileSync('ssh-keygen', ['-q', '-H', '-f', known], { stdio: 'ignore' })
      expect(readFileSync(known, 'utf8')).toMatch(/^\|1\|/)
      const bash = await executor({ hosts: [hostEntry(keys, a, { hostKey: { knownHostsPath: known } })] })
      expect((await run(bash, 'echo ok')).stdout.text).toBe('ok\n')
    })

    it('refuses a changed host key, naming the host', async () => {
      // known_hosts lists b's key under a's address: exactly what a replaced server key looks like.
      const known = join(keys.dir, 'changed_known_hosts')
      writeFileSync(known, `[127.0.0.1]:${a.port} ${b.hostPublicKey}\n`)
      const bash = await executor({ hosts: [hostEntry(keys, a, { hostKey: { knownHostsPath: known } })] })
      const error = await run(bash, 'echo never').then(
        () => undefined,
        (e: Error) => e,
      )
      expect(error?.message).toMatch(new RegExp(`^host key verification failed for ${TEST_USER}@127\\.0\\.0\\.1:${a.port}: the host key has CHANGED`))
      expect(error?.message).toContain(a.fingerprint)
      expect(error).toMatchObject({ code: 'DSH_SSH_HOST_KEY_REJECTED' })
    })

    it('refuses an unknown host and a wrong pinned fingerprint', async () => {
      const known = join(keys.dir, 'other_known_hosts')
      writeFileSync(known, `[127.0.0.1]:${b.port} ${b.hostPublicKey}\n`)
      const unknown = await executor({ hosts: [hostEntry(keys, a, { hostKey: { knownHostsPath: known } })] })
      await expect(run(unknown, 'echo never')).rejects.toThrow(`host key verification failed for ${TEST_USER}@127.0.0.1:${a.port}: the host is unknown`)
      const wrong = await executor({ hosts: [hostEntry(keys, a, { hostKey: { fingerprint: b.fingerprint } })] })
      await expect(run(wrong, 'echo never')).rejects.toThrow(`does not match the pinned fingerprint ${b.fingerprint}`)
      await expect(run(wrong, 'echo never')).rejects.toMatchObject({ code: SSH_ERROR.hostKeyRejected })
    })

    it('a server that is not there gives an error naming the host, after the retries', async () => {
      const port = a.port === 1 ? 2 : 1
      const bash = await executor({ hosts: [{ ...hostEntry(keys, a), port }], connectAttempts: 2, reconnectDelayMs: 10 })
      await expect(run(bash, 'true')).rejects.toThrow(`cannot connect to ${TEST_USER}@127.0.0.1:${port}: connect ECONNREFUSED`)
      await expect(run(bash, 'true')).rejects.toMatchObject({ code: 'DSH_SSH_CONNECT_FAILED' })
    })

    it('a process with nothing else to do waits out the retries and gets the error (it does not end mid-call)', () => {
      // The backoff between attempts must hold the event loop: with an unref'd timer Node ran out of
      // work during the wait and exited 0 with no result (the CLI's `agent` and piped REPL did so).
      const port = a.port === 1 ? 2 : 1
      const host = { ...hostEntry(keys, a), port }
      const script = `
        import { Context } from 'cordis'
        import { SshExecutor } from '@deepseek-ai/dsh-bash-ssh'
        const ctx = new Context()
        ctx.plugin(SshExecutor, { cwd: '/tmp', hosts: [${JSON.stringify(host)}], connectAttempts: 3, reconnectDelayMs: 300 })
        await ctx.lifecycle.flush()
        const bash = ctx.get('bash')
        try { await bash.run(bash.resolve({ command: 'true', owner: 'o' })); console.log('ran') }
        catch (error) { console.log('error: ' + error.message) }
        await bash.shutdown()
        await ctx.stop()
        console.log('end')
      `
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8', timeout: 60_000 })
      expect(out).toBe(`error: cannot connect to ${TEST_USER}@127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\nend\n`)
    })
  })

  describe('commands', () => {
    it('runs in its own session and process group, with the non-interactive environment and no secrets', async () => {
      const bash = await executor()
      const result = await run(bash, 'read -r st </proc/$$/stat; set -- ${st##*) }; echo "$$ $3 $4"; [ -t 0 ] || echo no-tty; echo "$NO_COLOR $TERM $PAGER $GIT_TERMINAL_PROMPT"; echo "${DSH_TEST_API_TOKEN-dropped} ${DSH_TEST_MONKEY-} ${DSH_TEST_PLAIN-}"; id -un')
      const [ids, ...rest] = result.stdout.text.split('\n')
      const [pid, pgid, sid] = ids.trim().split(/\s+/)
      expect(pgid).toBe(pid)
      expect(sid).toBe(pid)
      expect(rest.join('\n')).toBe(`no-tty\n1 dumb cat 0\ndropped m visible\n${TEST_USER}\n`)
      // `!NAME` (the CLI's --keep-env) keeps one variable the list would remove, on the remote side too.
      const keep = await executor({ secretEnvPatterns: [...DEFAULT_SECRET_PATTERNS, '!DSH_TEST_API_TOKEN'] })
      expect((await run(keep, 'echo "${DSH_TEST_API_TOKEN-dropped}"')).stdout.text).toBe('hunter2\n')
    })

    it('limits become the rlimits the agent sets in every command (issue 27): memory per process (RLIMIT_AS), processes per user (RLIMIT_NPROC); the agent itself has none', async () => {
      const limited = await executor({ limits: { memory: '256M', pids: 200 } })
      const result = await run(limited, `ulimit -v; ulimit -Hv; ulimit -u; ulimit -Hu; grep -o 'Max address space *[a-z0-9]*' /proc/$PPID/limits; python3 -c 'b = [b"x" * 2**20 for _ in range(400)]' 2>&1 | tail -1`)
      expect(result.stdout.text).toBe(`${256 * 1024}\n${256 * 1024}\n200\n200\nMax address space         unlimited\nMemoryError\n`)
      // The control: without limits, the same host has none.
      const open = await executor()
      expect((await run(open, 'ulimit -v')).stdout.text).toBe('unlimited\n')
      // What the executor claims is what the config takes and the agent set above: memory and pids.
      expect([limited.capabilities.limits, open.capabilities.limits]).toEqual([['memory', 'pids'], ['memory', 'pids']])
    })

    it('a trusted caller env wins; stdin is /dev/null by default', async () => {
      const bash = await executor()
      const result = await run(bash, 'echo "$TERM $X"; cat; readlink /proc/$$/fd/0', { env: { TERM: 'xterm', X: "it's" } })
      expect(result.stdout.text).toBe("xterm it's\n/dev/null\n")
    })

    it('a start failure carries DSH_START_FAILED: missing workdir, missing shell', async () => {
      const bash = await executor()
      await expect(run(bash, 'true', { workdir: '/no/such/dir' })).rejects.toMatchObject({ code: 'DSH_START_FAILED', message: 'workdir does not exist: /no/such/dir' })
      const noShell = await executor({ shell: '/no/such/shell' })
      await expect(run(noShell, 'true')).rejects.toMatchObject({ code: SSH_ERROR.startFailed })
    })

    it('a command longer than one argument (>128 KiB) runs; one over maxCommandBytes is refused', async () => {
      const bash = await executor()
      const payload = 'x'.repeat(300 * 1024)
      const result = await run(bash, `s='${payload}'\nprintf '%s' "$s" | wc -c\necho "$0"`)
      expect(result.stdout.text.split('\n')[0]).toBe(String(payload.length))
      // The temp file holding it is gone once read.
      const path = result.stdout.text.split('\n')[1]
      expect((await run(bash, `test -e '${path}' && echo present || echo gone`)).stdout.text).toBe('gone\n')
      await expect(run(bash, `#${'y'.repeat(1024 * 1024)}`)).rejects.toThrow(/command is too long/)
    })

    it("output from the login shell's startup files before the wrapper runs is skipped", async () => {
      // sshd runs the command with the user's login shell; Debian's bash reads ~/.bashrc for it.
      // The noise is printed only for sessions of a server that sets DSH_TEST_NOISY, so a test
      // process that dies before restoring the file disturbs no other test.
      const rc = `/home/${TEST_USER}/.bashrc`
      const before = existsSync(rc) ? readFileSync(rc, 'utf8') : undefined
      const noise = `if [ -n "\${DSH_TEST_NOISY-}" ]; then printf 'noise from bashrc '; echo more noise >&2; fi # dsh-bash-ssh test\n`
      if (!before?.includes(noise)) writeFileSync(rc, `${noise}${before ?? ''}`)
      const noisy = await startSshd(keys, 'noisy', { setEnv: 'DSH_TEST_NOISY=1' })
      try {
        const bash = await executor({}, [noisy])
        const probe = await run(bash, 'true')
        const result = await run(bash, 'echo clean')
        expect(result.stdout.text).toBe('clean\n')
        // Whether the shell read the file depends on how bash was built; the stderr noise shows it.
        if (probe.stderr.text !== '') expect(result.stderr.text).toBe('more noise\n')
      } finally {
        await instances.disposeAll()
        await noisy.stop()
        if (before === undefined) rmSync(rc, { force: true })
        else writeFileSync(rc, before.replace(noise, ''))
      }
    })

    it('exit codes and signals come from the remote exit status', async () => {
      const bash = await executor()
      expect(await run(bash, 'exit 7')).toMatchObject({ exitCode: 7, signal: null })
      expect(await run(bash, 'kill -TERM $$')).toMatchObject({ exitCode: null, signal: 'SIGTERM' })
    })

    it('more commands at once than the server allows sessions per connection', async () => {
      // b allows 3 sessions per connection; the executor assumes 10, learns, and opens more connections.
      const bash = await executor({}, [b])
      const m = digits()
      const tasks = Array.from({ length: 8 }, () => bash.start(bash.resolve({ command: `sleep 1000.${m}` })))
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => run(bash, `echo ${i}`)))
      expect(results.map((r) => r.stdout.text)).toEqual(['0\n', '1\n', '2\n', '3\n', '4\n', '5\n'])
      await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`).length).toBe(8), WAIT)
      expect(tasks.every((t) => t.status === 'running')).toBe(true)
      await Promise.all(tasks.map((t) => bash.kill(t.id)))
      expect(tasks.every((t) => t.status === 'killed')).toBe(true)
      expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
    })
  })

  describe('pinning', () => {
    it('pins each owner to one host at its first call, the least busy one', async () => {
      const bash = await executor({}, [a, b])
      const port = async (owner?: string) => (await run(bash, 'echo "${SSH_CONNECTION##* }"', { owner })).stdout.text.trim()
      // Nothing runs: the first owner gets the first host.
      expect(await port('session-1')).toBe(String(a.port))
      expect(bash.hostOf('session-1')).toBe(`${TEST_USER}@127.0.0.1:${a.port}`)
      // session-1 keeps a task running on a: the least busy host for a new owner is b.
      const m = digits()
      const task = bash.start(bash.resolve({ command: `sleep 1000.${m}`, owner: 'session-1' }))
      expect(bash.hostOfTask(task.id)).toBe(`${TEST_USER}@127.0.0.1:${a.port}`)
      expect(await port('session-2')).toBe(String(b.port))
      expect(bash.hostOf('session-2')).toBe(`${TEST_USER}@127.0.0.1:${b.port}`)
      // Pins hold whatever the load: session-2 stays on b, session-1 on a.
      const task2 = bash.start(bash.resolve({ command: `sleep 1000.${m}`, owner: 'session-2' }))
      const task3 = bash.start(bash.resolve({ command: `sleep 1000.${m}`, owner: 'session-2' }))
      expect(await port('session-2')).toBe(String(b.port))
      expect(await port('session-1')).toBe(String(a.port))
      // A call without owner goes to the least busy host (a: 1 task, b: 2).
      expect(await port()).toBe(String(a.port))
      expect(bash.load()).toEqual({ [`${TEST_USER}@127.0.0.1:${a.port}`]: 1, [`${TEST_USER}@127.0.0.1:${b.port}`]: 2 })
      for (const t of [task, task2, task3]) await bash.kill(t.id)
      expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
    })

    it('a run that yields becomes a task on the host it runs on (not the least busy one)', async () => {
      const bash = await executor({}, [a, b])
      const m = digits()
      // A foreground run on b (session-b is pinned to b, the least busy host after session-a took a).
      await run(bash, 'true', { owner: 'session-a' })
      const busy = bash.start(bash.resolve({ command: `sleep 1000.${m}`, owner: 'session-a' }))
      const yielded = await run(bash, `echo up; sleep 1000.${m}`, { owner: 'session-b', yieldAfterMs: 500 })
      expect(yielded.yieldedTo).toMatch(/^bash-\d+$/)
      expect(bash.hostOf('session-b')).toBe(`${TEST_USER}@127.0.0.1:${b.port}`)
      expect(bash.hostOfTask(yielded.yieldedTo!)).toBe(`${TEST_USER}@127.0.0.1:${b.port}`)
      expect(bash.hostOfTask(busy.id)).toBe(`${TEST_USER}@127.0.0.1:${a.port}`)
      for (const id of [busy.id, yielded.yieldedTo!]) await bash.kill(id)
      expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
    })
    it("an evicted task's host is forgotten with it (the kit's eviction hook), a tracked one's is kept", async () => {
      const bash = await executor({ maxFinishedTasks: 1 }, [a])
      const ids: string[] = []
      for (let i = 0; i < 3; i++) {
        const task = bash.start(bash.resolve({ command: 'true' }))
        ids.push(task.id)
        await task.done
      }
      expect(bash.get(ids[0])).toBeUndefined()
      expect(bash.hostOfTask(ids[0])).toBeUndefined()
      expect(bash.hostOfTask(ids[1])).toBeUndefined()
      expect(bash.hostOfTask(ids[2])).toBe(`${TEST_USER}@127.0.0.1:${a.port}`)
    })
  })

  describe('lost connection', () => {
    it('sshd killed in the middle of a call: the run rejects naming the host, tasks become killed with a reason, nothing hangs, nothing survives', async () => {
      const c = await startSshd(keys, 'c')
      try {
        const bash = await executor({ graceMs: 300 }, [c])
        const m = digits()
        const done: string[] = []
        bash.onTaskDone((t) => done.push(t.id))
        const task = bash.start(bash.resolve({ command: `echo begun; sleep 1000.${m}` }))
        let runOutput = ''
        const call = run(bash, `echo started; sleep 1000.${m}`, {
          timeoutMs: 600_000,
          onOutput: (_stream: string, text: string) => (runOutput += text),
        }).then(
          () => undefined,
          (e: Error) => e,
        )
        // Both commands are known to have started on this side (their output arrived after the
        // wrapper's header), so the loss comes after the start, not during it.
        let taskOutput = ''
        await vi.waitFor(() => {
          taskOutput += bash.readOutput(task.id).delta
          expect([taskOutput, runOutput]).toEqual(['begun\n', 'started\n'])
        }, WAIT)
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`).length).toBe(2), WAIT)
        await c.kill()
        const error = await call
        expect(error?.message).toBe(`connection to ${TEST_USER}@127.0.0.1:${c.port} lost`)
        expect(error).toMatchObject({ code: 'DSH_CONNECTION_LOST' })
        await task.done
        expect(task.status).toBe('killed')
        expect(task.reason).toBe(`connection to ${TEST_USER}@127.0.0.1:${c.port} lost`)
        expect(done).toEqual([task.id])
        expect(taskOutput).toBe('begun\n')
        expect(bash.readOutput(task.id).delta).toBe('')
        // The commands outlived their connection on the server; once it is back, the executor
        // reconnects and kills them.
        await c.restart()
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([]), WAIT)
        // The executor works again.
        expect((await run(bash, 'echo back')).stdout.text).toBe('back\n')
      } finally {
        await instances.disposeAll()
        await c.stop()
      }
    })
  })

  describe('silent server', () => {
    it('a server that stops answering is declared lost by the keepalives: the call rejects, nothing hangs', async () => {
      const d = await startSshd(keys, 'd')
      try {
        const bash = await executor({ keepaliveIntervalMs: 200, keepaliveCountMax: 2, readyTimeoutMs: 2_000, graceMs: 300 }, [d])
        const m = digits()
        const call = run(bash, `echo started; sleep 1000.${m}`, { timeoutMs: 600_000 }).then(
          () => undefined,
          (e: Error) => e,
        )
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`).length).toBe(1), WAIT)
        // The TCP connection stays open, but the server is frozen: only the keepalives can tell.
        d.freeze()
        const error = await call
        expect(error?.message).toBe(`connection to ${TEST_USER}@127.0.0.1:${d.port} lost`)
        d.thaw()
        // Once the server answers again, the command lost with the connection is killed.
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([]), WAIT)
      } finally {
        await instances.disposeAll()
        await d.stop()
      }
    })
  })

  describe('waiting for a task to be over', () => {
    it('a task whose processes outlive its shell is over as soon as they are gone: the remote wait answers', async () => {
      // No reports, so no silent wait is asked again: only the first wait's answer can end the task.
      const bash = await executor({ waitReportMs: 0 })
      const m = digits()
      const task = bash.start(bash.resolve({ command: `sleep 1.${m} & echo started` }))
      // The wait naps 10, 20, 40… ms between scans: after a second it naps the longest (320 ms).
      await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1.${m}`)).toHaveLength(1), WAIT)
      await vi.waitFor(() => expect(task.status).toBe('completed'), WAIT)
      expect(bash.readOutput(task.id).delta).toBe('started\n')
    })

    it('a task whose processes live on is logged, naming the pids the remote agent still sees and why', async () => {
      const logs = recordLogs()
      try {
        const bash = await executor({ waitReportMs: 300 })
        const m = digits()
        const task = bash.start(bash.resolve({ command: `sleep 1000.${m} & setsid sleep 1000.${m} & echo started` }))
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toHaveLength(2), WAIT)
        // The first report may come before the second sleeper's exec: the one naming both.
        const sleeper = /(\d+) sleep \(state [A-Z], ([^)]*)\)/g
        const report = () => logs.lines.map((line) => line.content).find((text) => text.includes('still sees') && [...text.matchAll(sleeper)].length === 2)
        await vi.waitFor(() => expect(report()).toBeDefined(), WAIT)
        const text = report()!
        expect(text).toMatch(new RegExp(`^${task.id} \\(remote pid \\d+\\) on ${TEST_USER}@127\\.0\\.0\\.1:${a.port} has waited [\\d.]+ s for its processes to end; the agent still sees `))
        // Both sleepers, each with its reason: one in the group, one outside it (setsid) with the marker.
        const sleepers = userProcesses(TEST_USER, `sleep 1000.${m}`).map((line) => line.split(' ')[0])
        const named = [...text.matchAll(sleeper)]
        expect(named.map(([, pid]) => pid).sort()).toEqual(sleepers.sort())
        expect(named.map(([, , why]) => why).sort()).toEqual(['in its process group', 'outside the group, carrying its marker'])
        expect(task.status).toBe('running')
        expect(await bash.kill(task.id)).toBe(true)
        expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
      } finally {
        logs.stop()
      }
    })

    it('a wait that never answers: logged as silent; kill and disposal still end within stoppedWaitMs, and nothing is left on the host', async () => {
      const logs = recordLogs()
      try {
        const bash = await executor({ waitReportMs: 200, stoppedWaitMs: 1_000 }, [stall])
        const m = digits()
        const killed = bash.start(bash.resolve({ command: `sleep 1000.${m} & echo started` }))
        const disposed = bash.start(bash.resolve({ command: `setsid sleep 1000.${m} & echo started` }))
        await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toHaveLength(2), WAIT)
        const texts = () => logs.lines.map((line) => line.content)
        const silent = (id: string) => texts().some((text) => text.startsWith(`${id} (remote pid `) && text.includes('no report of what it still sees'))
        await vi.waitFor(() => expect([silent(killed.id), silent(disposed.id)]).toEqual([true, true]), WAIT)
        // The stalled wait would hold the task (and so the kill) forever: the bound ends it.
        expect(await bash.kill(killed.id)).toBe(true)
        expect(killed.status).toBe('killed')
        expect(texts().find((text) => text.startsWith(`${killed.id} (remote pid `) && text.includes('gave up waiting'))).toBeDefined()
        expect(disposed.status).toBe('running')
        await instances.disposeAll()
        expect(disposed.status).toBe('killed')
        expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
        // The agent exited when its connection closed: none of its processes is left (it runs as
        // `dsh-bash-agent`; the file's afterAll checks the rest).
        await vi.waitFor(() => expect(userProcesses(TEST_USER, 'dsh-bash-agent')).toEqual([]), WAIT)
      } finally {
        logs.stop()
      }
    })

    it('a silent wait is asked again: a task whose first remote wait stalled still ends by itself', async () => {
      const logs = recordLogs()
      try {
        const bash = await executor({ waitReportMs: 200 }, [stallOnce])
        const task = bash.start(bash.resolve({ command: 'sleep 0.2; echo done' }))
        // Without the second wait, done would never come (the first one stalls for good).
        await task.done
        expect(task).toMatchObject({ status: 'completed', exitCode: 0 })
        expect(bash.readOutput(task.id).delta).toBe('done\n')
        expect(logs.lines.some((line) => line.content.startsWith(`${task.id} (remote pid `) && line.content.endsWith('(its wait is not scanning): asking again'))).toBe(true)
      } finally {
        logs.stop()
      }
    })
  })

  describe('disposal', () => {
    it('kills every remote task, escapees included, and closes the connections', async () => {
      const bash = await executor({}, [a, b])
      const m = digits()
      bash.start(bash.resolve({ command: `sleep 1000.${m}`, owner: 'x' }))
      bash.start(bash.resolve({ command: `setsid sleep 1000.${m} & sleep 1000.${m}`, owner: 'y' }))
      // The second task's shell has the marker in its command line too: four processes.
      await vi.waitFor(() => expect(userProcesses(TEST_USER, `sleep 1000.${m}`).length).toBe(4), WAIT)
      await instances.disposeAll()
      expect(userProcesses(TEST_USER, `sleep 1000.${m}`)).toEqual([])
      await vi.waitFor(() => expect(userProcesses(TEST_USER, 'sshd:')).toEqual([]), WAIT)
    })
  })
})
