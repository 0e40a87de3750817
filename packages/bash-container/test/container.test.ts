import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from 'cordis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { BASH_ERROR, DEFAULT_SECRET_PATTERNS } from '@deepseek-ai/dsh-bash'
import { CONTAINER_ERROR, ContainerExecutor, type ContainerExecutorConfigInput, EngineClient, LABEL_EXECUTOR, LABEL_SERVER, sweepDeadServers } from '../src/index.js'
import { containerFixture, containersWithLabel, createdAndDestroyed, ENGINE_URL, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-container] skipping the container executor tests: ${skip}`)

describe.skipIf(skip !== undefined)('container executor: sessions, confinement, lifetime', () => {
  const { workspace, testLabel, label, create } = containerFixture('container')
  const engine = new EngineClient(ENGINE_URL)
  const run = async (bash: ContainerExecutor, command: string, extra: object = {}) => bash.run(bash.resolve({ command, ...extra }))

  afterAll(() => engine.close())

  it('each owner gets a container of its own; calls without an owner share one', async () => {
    const bash = await create()
    const hostOf = async (owner?: string) => (await run(bash, 'cat /etc/hostname', { owner })).stdout.text
    const [a, b, none] = [await hostOf('a'), await hostOf('b'), await hostOf()]
    expect(new Set([a, b, none]).size).toBe(3)
    expect(await hostOf('a')).toBe(a)
    expect(await hostOf()).toBe(none)
    // State outside the workspace is the session's own.
    await run(bash, 'echo secret > /tmp/only-a', { owner: 'a' })
    expect((await run(bash, 'cat /tmp/only-a', { owner: 'b' })).exitCode).not.toBe(0)
    expect(containersWithLabel(label)).toHaveLength(3)
  })

  it("secret-looking variables are removed by whole name parts in the container too; !NAME keeps one", async () => {
    const env = { DSH_TEST_API_TOKEN: 'hunter2', MONKEY: 'm', TOKENIZERS_PARALLELISM: 'false' }
    const probe = 'echo "${DSH_TEST_API_TOKEN-dropped} ${MONKEY-} ${TOKENIZERS_PARALLELISM-}"'
    expect((await run(await create({ env }), probe)).stdout.text).toBe('dropped m false\n')
    const keep = await create({ env, secretEnvPatterns: [...DEFAULT_SECRET_PATTERNS, '!DSH_TEST_API_TOKEN'] })
    expect((await run(keep, probe)).stdout.text).toBe('hunter2 m false\n')
  })

  it('the workspace is mounted at /workspace; host paths inside it map there', async () => {
    const bash = await create({ cwd: workspace })
    writeFileSync(join(workspace, 'from-host'), 'hello\n')
    expect(bash.resolve({ command: 'true' }).workdir).toBe('/workspace')
    expect(bash.resolve({ command: 'true', workdir: join(workspace, 'sub') }).workdir).toBe('/workspace/sub')
    expect(bash.resolve({ command: 'true', workdir: 'rel' }).workdir).toBe('/workspace/rel')
    expect(bash.resolve({ command: 'true', workdir: '/etc' }).workdir).toBe('/etc')
    const result = await run(bash, 'cat from-host; pwd; echo back > from-container')
    expect(result.stdout.text).toBe('hello\n/workspace\n')
    expect(readFileSync(join(workspace, 'from-container'), 'utf8')).toBe('back\n')
  })

  it("mountPath may be the workspace's own host path: then paths are the same inside and out", async () => {
    const bash = await create({ cwd: workspace, mountPath: workspace })
    writeFileSync(join(workspace, 'from-host'), 'hello\n')
    expect(bash.resolve({ command: 'true', workdir: join(workspace, 'sub') }).workdir).toBe(join(workspace, 'sub'))
    expect((await run(bash, 'pwd; ls from-host')).stdout.text).toBe(`${workspace}\nfrom-host\n`)
  })

  it('workspaceMode copy: the content is copied in (nested directories, exec bit, symlink; owned by the container user); commands change the container only', async () => {
    const ws = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-container-copy-')))
    try {
      mkdirSync(join(ws, 'sub/deep'), { recursive: true })
      writeFileSync(join(ws, 'a.txt'), 'hello\n')
      writeFileSync(join(ws, 'sub/deep/run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 })
      symlinkSync('a.txt', join(ws, 'link'))
      execFileSync('mkfifo', [join(ws, 'fifo')])
      const bash = await create({ workspace: ws, cwd: ws, workspaceMode: 'copy', user: '1234:2345' })
      // The host's cwd maps to the copy, as with a bind mount.
      expect(bash.resolve({ command: 'true', workdir: join(ws, 'sub') }).workdir).toBe('/workspace/sub')
      const listing = await run(bash, 'stat -c "%n %u:%g %A" . a.txt sub sub/deep sub/deep/run.sh link; ./sub/deep/run.sh; readlink link; test -e fifo || echo no fifo; pwd; id -u')
      expect(listing.stdout.text).toBe(
        [
          '. 1234:2345 drwx------',
          'a.txt 1234:2345 -rw-r--r--',
          'sub 1234:2345 drwxr-xr-x',
          'sub/deep 1234:2345 drwxr-xr-x',
          'sub/deep/run.sh 1234:2345 -rwxr-xr-x',
          'link 1234:2345 lrwxrwxrwx',
          'ran',
          'a.txt',
          'no fifo',
          '/workspace',
          '1234',
          '',
        ].join('\n'),
      )
      expect((await run(bash, 'echo changed > a.txt && rm -r sub && touch new && cat a.txt')).stdout.text).toBe('changed\n')
      // The host's workspace is untouched; another session gets a fresh copy.
      expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('hello\n')
      expect(existsSync(join(ws, 'sub/deep/run.sh'))).toBe(true)
      expect(existsSync(join(ws, 'new'))).toBe(false)
      expect((await run(bash, 'cat a.txt; ls sub', { owner: 'other' })).stdout.text).toBe('hello\ndeep\n')
      // A user given by name: its numeric ids are asked of the container.
      const named = await create({ workspace: ws, workspaceMode: 'copy', user: 'nobody' })
      expect((await run(named, 'stat -c "%u:%g" . a.txt')).stdout.text).toBe('65534:65534\n65534:65534\n')
    } finally {
      rmSync(ws, { recursive: true, force: true })
    }
  })

  it('workspaceMode copy: a mountPath the image cannot hold, or a workspace over the size limit, fails the call with a coded error and leaves nothing', async () => {
    writeFileSync(join(workspace, 'five'), '12345')
    const underFile = await create({ workspaceMode: 'copy', mountPath: '/etc/passwd/ws' })
    const error = await run(underFile, 'true').then(() => undefined, (e: unknown) => e as Error & { code?: string })
    expect(error?.code).toBe(CONTAINER_ERROR.workspaceCopy)
    expect(error?.message).toMatch(/^cannot copy the workspace into the session container: \/etc\/passwd\/ws: .*not a directory/)
    const tooBig = await create({ workspaceMode: 'copy', workspaceCopyMaxBytes: 4 })
    await expect(run(tooBig, 'true')).rejects.toMatchObject({
      code: CONTAINER_ERROR.workspaceCopy,
      message: expect.stringMatching(/^cannot copy the workspace into the session container: the workspace .* holds \d+ bytes in regular files, more than workspaceCopyMaxBytes \(4\)$/),
    })
    expect(containersWithLabel(label)).toEqual([])
    // Settings that cannot go together, and a workspace that is not there, are refused at load.
    const load = (config: Partial<ContainerExecutorConfigInput>) => () => new ContainerExecutor(new Context(), { image: TEST_IMAGE, engine: ENGINE_URL, workspace, sweep: false, ...config })
    expect(load({ workspaceMode: 'copy', mountPath: '/' })).toThrow(expect.objectContaining({ code: BASH_ERROR.invalidConfig, message: 'invalid container executor config: mountPath must not be / with workspaceMode "copy"' }))
    expect(load({ workspaceMode: 'copy', readOnlyWorkspace: true })).toThrow(expect.objectContaining({ code: BASH_ERROR.invalidConfig }))
    expect(load({ workspaceMode: 'copy', workspace: join(workspace, 'missing') })).toThrow(
      expect.objectContaining({ code: BASH_ERROR.invalidConfig, message: `invalid container executor config: workspace ${JSON.stringify(join(workspace, 'missing'))} does not exist` }),
    )
    rmSync(join(workspace, 'five'))
  })

  it('a container not ready within startTimeoutMs fails the call with a coded error, and the container is removed', async () => {
    const since = Date.now()
    const bash = await create({ startTimeoutMs: 1 })
    await expect(run(bash, 'true')).rejects.toMatchObject({ code: CONTAINER_ERROR.createFailed, message: 'cannot create the session container: not ready after 1 ms' })
    // The container the engine creates after the deadline is removed too (seen in the engine's events).
    await createdAndDestroyed(label, since)
  })

  it('confinement: no network, no capabilities, no new privileges, limits applied', async () => {
    const bash = await create({ memoryBytes: 256 * 1024 * 1024, pidsLimit: 64, cpus: 0.5 })
    const result = await run(bash, 'ls /sys/class/net; grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status')
    expect(result.stdout.text).toBe('lo\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n')
    const id = await bash.containerOf(undefined)
    const inspect = await engine.request<{ HostConfig: Record<string, unknown>; Config: { Labels: Record<string, string> } }>('GET', `/containers/${id}/json`)
    // (CapDrop is checked by its effect above: Podman reports ALL as the list of its default capabilities.)
    expect(inspect.HostConfig).toMatchObject({ Memory: 256 * 1024 * 1024, PidsLimit: 64, NanoCpus: 5e8, NetworkMode: 'none', AutoRemove: true })
    expect(inspect.Config.Labels[LABEL_EXECUTOR]).toBe('container')
    expect(inspect.Config.Labels[LABEL_SERVER]).toMatch(new RegExp(`/${process.pid}/\\d+$`))
    // The pids limit holds: a fork bomb is stopped by the kernel, not by the host.
    const forks = await run(bash, 'for i in $(seq 1 100); do sleep 5 & done 2>&1 | tail -1; wait', { timeoutMs: 20_000 })
    expect(forks.stdout.text + forks.stderr.text).toMatch(/fork|resource/i)
  })

  it('limits hold in a real container: /tmp is a tmpfs of tmpBytes (a larger write is ENOSPC), memory past memoryBytes is killed; the control has neither', async () => {
    const write = 'head -c 32M /dev/zero > /tmp/big; stat -c %s /tmp/big'
    // Kept in bash's memory (no newline: one word of 300 MiB), so the container's memory is really used.
    const allocate = 'x=$(head -c 300M /dev/zero | tr "\\0" a); echo ${#x}'
    const limited = await create({ memoryBytes: 128 * 2 ** 20, pidsLimit: 64, tmpBytes: 16 * 2 ** 20 })
    const full = await run(limited, write)
    expect(full.stdout.text).toBe(`${16 * 2 ** 20}\n`)
    expect(full.stderr.text).toMatch(/No space left on device/)
    const big = await run(limited, allocate, { timeoutMs: 60_000 })
    expect(big.exitCode === 137 || big.signal === 'SIGKILL', JSON.stringify({ exit: big.exitCode, signal: big.signal, out: big.stdout.text })).toBe(true)
    // The control: without them, the same write and allocation succeed.
    const open = await create({ memoryBytes: 0, pidsLimit: 0, tmpBytes: 0 })
    expect((await run(open, write)).stdout.text).toBe(`${32 * 2 ** 20}\n`)
    expect((await run(open, allocate, { timeoutMs: 60_000 })).stdout.text).toBe(`${300 * 2 ** 20}\n`)
  }, 120_000)

  it('releaseOwner kills the owner’s tasks and removes its container; its next call gets a new one', async () => {
    const bash = await create()
    const task = bash.start(bash.resolve({ command: 'sleep 1000', owner: 'a' }))
    const first = (await run(bash, 'cat /etc/hostname', { owner: 'a' })).stdout.text
    const other = await run(bash, 'true', { owner: 'b' })
    expect(other.exitCode).toBe(0)
    await bash.releaseOwner('a')
    expect(task.status).toBe('killed')
    expect(containersWithLabel(label)).toHaveLength(1)
    expect((await run(bash, 'cat /etc/hostname', { owner: 'a' })).stdout.text).not.toBe(first)
  })

  it('an agent that dies takes its container with it; the next call gets a new one', async () => {
    const bash = await create()
    const task = bash.start(bash.resolve({ command: 'sleep 1000' }))
    await run(bash, 'true')
    const id = (await bash.containerOf(undefined))!
    // Kill the agent from inside (its pid is the parent of a command's shell).
    await run(bash, 'kill -9 $PPID').catch(() => undefined)
    await task.done
    expect(task.status).toBe('killed')
    await vi.waitFor(async () => expect(await engine.request('GET', `/containers/${id}/json`).then(() => 'there', () => 'gone')).toBe('gone'), { timeout: 10_000, interval: 100 })
    expect((await run(bash, 'echo fresh')).stdout.text).toBe('fresh\n')
  })

  it('a session idle for idleTimeoutMs loses its container; a running background task keeps it', async () => {
    const bash = await create({ idleTimeoutMs: 1500 })
    const task = bash.start(bash.resolve({ command: 'sleep 3', owner: 'busy' }))
    await run(bash, 'true', { owner: 'idle' })
    const idle = (await bash.containerOf('idle'))!
    const busy = (await bash.containerOf('busy'))!
    const exists = (id: string) => engine.request('GET', `/containers/${id}/json`).then(() => true, () => false)
    await vi.waitFor(async () => expect(await exists(idle)).toBe(false), { timeout: 10_000, interval: 100 })
    expect(task.status).toBe('running')
    expect(await exists(busy)).toBe(true)
    await task.done
    expect(task.status).toBe('completed')
    expect((await run(bash, 'echo back', { owner: 'idle' })).stdout.text).toBe('back\n')
    expect(await bash.containerOf('idle')).not.toBe(idle)
  })

  it('a command longer than one argument may be (128 KiB) still runs', async () => {
    const bash = await create()
    const filler = 'x'.repeat(300 * 1024)
    const result = await run(bash, `: '${filler}'; echo "$((1 + 2))"; ls /tmp | grep -c dsh-bash-command || true`)
    expect(result.stdout.text).toBe('3\n0\n')
    expect(result.exitCode).toBe(0)
  })

  it('a missing image is a clear error and nothing is left', async () => {
    const bash = await create({ image: 'dsh-bash-no-such-image:never' })
    await expect(run(bash, 'true')).rejects.toThrow('image "dsh-bash-no-such-image:never" is not on the engine (the container executor never pulls: load or build it first)')
    await expect(run(bash, 'true')).rejects.toMatchObject({ code: 'DSH_CONTAINER_NO_IMAGE' })
    expect(containersWithLabel(label)).toEqual([])
  })

  it('a container that dies under a running command loses it with a clear reason; the next call gets a new container', async () => {
    const bash = await create()
    await run(bash, 'true')
    const id = (await bash.containerOf(undefined))!
    const pending = run(bash, 'sleep 1000', { timeoutMs: 60_000 }).then(
      () => new Error('the run resolved'),
      (error: Error) => error,
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    await engine.request('POST', `/containers/${id}/kill`)
    expect((await pending).message).toBe(`the session container ${id.slice(0, 12)} stopped while the command ran`)
    expect((await run(bash, 'echo again')).stdout.text).toBe('again\n')
    expect(await bash.containerOf(undefined)).not.toBe(id)
  })

  it('after SIGKILL of the server its containers are gone within 5 s (the lifeline)', async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL('./lifeline-child.mjs', import.meta.url)), TEST_IMAGE, ENGINE_URL, workspace, testLabel], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const line = await new Promise<string>((resolve, reject) => {
      let out = ''
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        if (out.includes('\n')) resolve(out.trim())
      })
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before it was ready`)))
    })
    expect(line).toMatch(/^ready [0-9a-f]{64}$/)
    expect(containersWithLabel(label)).toHaveLength(1)
    child.kill('SIGKILL')
    const killedAt = Date.now()
    await vi.waitFor(() => expect(containersWithLabel(label)).toEqual([]), { timeout: 5_000, interval: 50 })
    console.log(`[dsh-bash-container] the container was gone ${Date.now() - killedAt} ms after SIGKILL of its server`)
  })

  it('the sweep removes containers of dead servers of this host and keeps live ones', async () => {
    const create = (server: string) =>
      engine.request<{ Id: string }>('POST', '/containers/create', {
        Image: TEST_IMAGE,
        Entrypoint: ['sleep', '1000'],
        Labels: { [LABEL_EXECUTOR]: 'container', [LABEL_SERVER]: server, 'dsh-bash.test': testLabel },
        HostConfig: { NetworkMode: 'none' },
      })
    const hostname = readFileSync('/proc/sys/kernel/hostname', 'utf8').trim()
    const stat = readFileSync(`/proc/${process.pid}/stat`, 'utf8')
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
    const dead = await create(`${hostname}/${process.pid}/1`) // this pid, another start time: a dead server
    const live = await create(`${hostname}/${process.pid}/${start}`)
    const elsewhere = await create('another-host/1/1')
    const exists = (id: string) => engine.request('GET', `/containers/${id}/json`).then(() => true, () => false)
    try {
      const removed = await sweepDeadServers(engine)
      // Another executor loading meanwhile (other test files) may have swept it first.
      expect(await exists(dead.Id)).toBe(false)
      expect(removed).not.toContain(live.Id)
      expect(removed).not.toContain(elsewhere.Id)
      expect(await exists(live.Id)).toBe(true)
      expect(await exists(elsewhere.Id)).toBe(true)
    } finally {
      for (const c of [dead, live, elsewhere]) await engine.request('DELETE', `/containers/${c.Id}?force=1`).catch(() => {})
    }
  })
})
