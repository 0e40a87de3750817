import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { AGENT_PROCESS_NAME } from '@deepseek-ai/dsh-bash-agent'
import { Context } from 'cordis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ANNOTATION_SERVER, KUBERNETES_ERROR, KubernetesExecutor, type KubernetesExecutorConfigInput, LABEL_EXECUTOR, NETWORK_POLICY_NAME, sweepDeadPods } from '../src/index.js'
import { type FakeApiServer, FAKE_LABEL, startFakeApiServer } from './fake-apiserver.js'
import { containersWithLabel, createdAndDestroyed, ENGINE_URL, processesWith, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-kubernetes] skipping the pod tests against the fake API server: ${skip}`)

describe.skipIf(skip !== undefined)('kubernetes executor: pods (fake API server backed by docker)', () => {
  let fake: FakeApiServer
  let dir: string
  const load = (config: Partial<KubernetesExecutorConfigInput> = {}) =>
    loadExecutorPlugin(KubernetesExecutor, { kubeconfig: fake.kubeconfigPath, image: TEST_IMAGE, graceMs: 300, ...config })
  const inspect = (id: string) => JSON.parse(execFileSync('docker', ['inspect', id], { encoding: 'utf8' }))[0]

  beforeAll(async () => {
    fake = await startFakeApiServer({ engineUrl: ENGINE_URL })
    dir = mkdtempSync(join(tmpdir(), 'dsh-k8s-test-'))
  })
  afterAll(async () => {
    await fake?.close()
    if (fake) expect(containersWithLabel(`${FAKE_LABEL}=${fake.id}`)).toEqual([])
    rmSync(dir, { recursive: true, force: true })
  })

  it('one pod per owner from the template: labels, annotation, hardening, resources, emptyDir workspace, service account; deleted on release and disposal', async () => {
    const template = join(dir, 'pod.yaml')
    writeFileSync(
      template,
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata:',
        '  labels: { team: evals }',
        'spec:',
        '  serviceAccountName: from-template',
        '  containers:',
        '    - name: work',
        '      env: [{ name: FROM_TEMPLATE, value: "yes" }]',
      ].join('\n'),
    )
    const inst = await load({ podTemplateFile: template, serviceAccount: 'runner', limits: { memory: '256Mi', cpu: '500m' }, env: { EXTRA: 'x' }, labels: { run: 'r1' } })
    const bash = inst.executor
    try {
      const a = await bash.run(bash.resolve({ command: 'echo "$FROM_TEMPLATE $EXTRA"; pwd; touch f && ls', owner: 'alice' }))
      expect(a.stdout.text).toBe('yes x\n/workspace\nf\n')
      await bash.run(bash.resolve({ command: 'true', owner: 'bob' }))
      const alice = (await bash.podOf('alice'))!
      const bob = (await bash.podOf('bob'))!
      expect(alice).not.toBe(bob)
      const pod = fake.pods.get(`default/${alice}`)!.pod
      expect(pod.metadata.labels).toMatchObject({ team: 'evals', run: 'r1', [LABEL_EXECUTOR]: 'kubernetes' })
      expect(pod.metadata.annotations[ANNOTATION_SERVER]).toMatch(new RegExp(`/${process.pid}/`))
      expect(pod.spec).toMatchObject({ serviceAccountName: 'runner', automountServiceAccountToken: false, restartPolicy: 'Never', enableServiceLinks: false })
      const c = pod.spec.containers[0]
      expect(c.name).toBe('work')
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } })
      expect(c.resources).toEqual({ limits: { memory: '256Mi', cpu: '500m' }, requests: { memory: '256Mi', cpu: '500m' } })
      expect(pod.spec.volumes).toEqual([
        { name: 'dsh-bash-workspace', emptyDir: {} },
        { name: 'dsh-bash-agent', emptyDir: {} },
      ])
      // PID 1 is bash waiting for the agent's installation, then the agent's lifeline; no Perl.
      expect(c.command.slice(0, 4)).toEqual(['bash', '--noprofile', '--norc', '-c'])
      expect(c.command.slice(5)).toEqual(['boot', '/.dsh-bash', expect.stringMatching(/^\d+$/), expect.stringMatching(/^\d+$/), 'dsh-bash-agent'])
      expect(c.volumeMounts).toContainEqual({ name: 'dsh-bash-agent', mountPath: '/.dsh-bash' })
      expect(fake.execs.filter((e) => e.command[0] === 'bash' && e.command[5] === 'install')).toHaveLength(2)
      // What the fake's kubelet made of it: the engine enforces the limits and the hardening.
      const info = inspect(fake.pods.get(`default/${alice}`)!.containerId!)
      expect(info.HostConfig.Memory).toBe(256 * 1024 * 1024)
      expect(info.HostConfig.NanoCpus).toBe(5e8)
      expect(info.HostConfig.CapDrop).toEqual(['ALL'])
      const caps = await bash.run(bash.resolve({ command: "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status", owner: 'alice' }))
      expect(caps.stdout.text).toMatch(/CapEff:\s+0+\nNoNewPrivs:\s+1/)
      // The files of a session stay in its pod; another owner does not see them.
      expect((await bash.run(bash.resolve({ command: 'ls', owner: 'bob' }))).stdout.text).toBe('')
      expect(fake.networkPolicies.get(`default/${NETWORK_POLICY_NAME}`)?.spec).toEqual({
        podSelector: { matchLabels: { [LABEL_EXECUTOR]: 'kubernetes' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [],
        egress: [],
      })
      await bash.releaseOwner('alice')
      expect(fake.pods.has(`default/${alice}`)).toBe(false)
      // The owner's next command gets a fresh pod.
      expect((await bash.run(bash.resolve({ command: 'ls', owner: 'alice' }))).stdout.text).toBe('')
      expect(await bash.podOf('alice')).not.toBe(alice)
    } finally {
      await inst.dispose()
    }
    expect([...fake.pods.keys()]).toEqual([])
  })

  it('a host path inside the workspace maps to the pod workdir; other absolute paths are pod paths', async () => {
    const inst = await load({ workspace: dir })
    try {
      const bash = inst.executor
      const r = await bash.run(bash.resolve({ command: 'mkdir -p sub && cd sub && pwd', workdir: dir }))
      expect(r.stdout.text).toBe('/workspace/sub\n')
      expect((await bash.run(bash.resolve({ command: 'pwd', workdir: join(dir, 'sub') }))).stdout.text).toBe('/workspace/sub\n')
      expect((await bash.run(bash.resolve({ command: 'pwd', workdir: '/etc' }))).stdout.text).toBe('/etc\n')
      await expect(bash.run(bash.resolve({ command: 'pwd', workdir: '/nope' }))).rejects.toThrow('workdir does not exist: /nope')
    } finally {
      await inst.dispose()
    }
  })

  it('an image the node does not have fails the command with the pod\'s waiting reason, and nothing is left', async () => {
    const inst = await load({ image: 'dsh-bash-no-such-image:never', startTimeoutMs: 20_000 })
    try {
      const bash = inst.executor
      await expect(bash.run(bash.resolve({ command: 'true' }))).rejects.toThrow(expect.objectContaining({ code: KUBERNETES_ERROR.notReady, message: expect.stringMatching(/the session pod dsh-bash-\w+-1 did not start: ErrImagePull/) }))
      expect([...fake.pods.keys()]).toEqual([])
    } finally {
      await inst.dispose()
    }
  })

  it('workspaceMode copy: the workspace arrives in the pod before the first command (nested directories, exec bit, symlink; owned by the pod user); the host is not changed', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'dsh-k8s-copy-'))
    mkdirSync(join(ws, 'sub/deep'), { recursive: true })
    writeFileSync(join(ws, 'a.txt'), 'hello\n')
    writeFileSync(join(ws, 'sub/deep/run.sh'), '#!/bin/sh\necho ran\n', { mode: 0o755 })
    symlinkSync('a.txt', join(ws, 'link'))
    execFileSync('mkfifo', [join(ws, 'fifo')])
    // Owned by 1234 on the host: in the pod the files belong to the user tar runs as (the fake's
    // engine here runs pods as root, and its tmpfs emptyDir ignores mode=1777: no runAsUser).
    execFileSync('chown', ['-hR', '1234:1234', ws])
    const inst = await load({ workspace: ws, workspaceMode: 'copy' })
    try {
      const bash = inst.executor
      expect(bash.resolve({ command: 'true', workdir: join(ws, 'sub') }).workdir).toBe('/workspace/sub')
      const r = await bash.run(bash.resolve({ command: 'stat -c "%n %u %A" a.txt sub sub/deep sub/deep/run.sh link; sh sub/deep/run.sh; readlink link; test -e fifo || echo no fifo', owner: 'c' }))
      expect(r.stdout.text).toBe(
        ['a.txt 0 -rw-r--r--', 'sub 0 drwxr-xr-x', 'sub/deep 0 drwxr-xr-x', 'sub/deep/run.sh 0 -rwxr-xr-x', 'link 0 lrwxrwxrwx', 'ran', 'a.txt', 'no fifo', ''].join('\n'),
      )
      // One exec copied it (tar -x), before the agent's.
      expect(fake.execs.filter((e) => e.command[0] === 'tar').map((e) => e.command)).toEqual([['tar', '-x', '-f', '-', '-C', '/workspace', '--no-same-owner']])
      expect((await bash.run(bash.resolve({ command: 'echo changed > a.txt && rm -r sub && touch new && cat a.txt', owner: 'c' }))).stdout.text).toBe('changed\n')
      expect(readFileSync(join(ws, 'a.txt'), 'utf8')).toBe('hello\n')
      expect(existsSync(join(ws, 'sub/deep/run.sh'))).toBe(true)
      expect(existsSync(join(ws, 'new'))).toBe(false)
    } finally {
      await inst.dispose()
      rmSync(ws, { recursive: true, force: true })
    }
  })

  it('workspaceMode copy: a mountPath the pod cannot write, a workspace over the limit, a missing workspace: coded errors, nothing left', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'dsh-k8s-copy-'))
    writeFileSync(join(ws, 'five'), '12345')
    // The template mounts a read-only volume at the mount path: tar -x fails in the pod.
    const template = { spec: { containers: [{ name: 'bash', volumeMounts: [{ name: 'ro', mountPath: '/workspace', readOnly: true }] }], volumes: [{ name: 'ro', emptyDir: {} }] } }
    for (const config of [{ podTemplate: template }, { workspaceCopyMaxBytes: 4 }]) {
      const inst = await load({ workspace: ws, workspaceMode: 'copy', ...config })
      try {
        const bash = inst.executor
        const error = await bash.run(bash.resolve({ command: 'true' })).then(() => undefined, (e: unknown) => e as Error & { code?: string })
        expect(error?.code).toBe(KUBERNETES_ERROR.workspaceCopy)
        expect(error?.message).toMatch(
          'podTemplate' in config
            ? /^cannot copy the workspace into the session pod dsh-bash-\w+-1: tar -x -C \/workspace: .*Read-only file system/
            : /^cannot copy the workspace into the session pod dsh-bash-\w+-1: the workspace .* holds 5 bytes in regular files, more than workspaceCopyMaxBytes \(4\)$/,
        )
        expect([...fake.pods.keys()]).toEqual([])
      } finally {
        await inst.dispose()
      }
    }
    expect(() => new KubernetesExecutor(new Context(), { kubeconfig: fake.kubeconfigPath, image: 'x', sweep: false, networkPolicy: false, workspace: join(ws, 'missing'), workspaceMode: 'copy' })).toThrow(
      expect.objectContaining({ code: KUBERNETES_ERROR.invalidConfig, message: `invalid kubernetes executor config: workspace ${JSON.stringify(join(ws, 'missing'))} does not exist` }),
    )
    rmSync(ws, { recursive: true, force: true })
  })

  it('the pod lifeline: after SIGKILL of its server the pod\'s processes are gone within seconds and the next sweep deletes the pod; a clean stop deletes it', async () => {
    const child = (marker: string) => {
      const proc = spawn(process.execPath, [fileURLToPath(new URL('./lifeline-child.mjs', import.meta.url)), fake.kubeconfigPath, TEST_IMAGE, marker], { stdio: ['ignore', 'pipe', 'inherit'] })
      const ready = new Promise<string>((resolve, reject) => {
        let out = ''
        proc.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          if (out.includes('\n')) resolve(out.trim())
        })
        proc.once('exit', (code) => reject(new Error(`the child exited (${code}) before it was ready`)))
      })
      return { proc, ready }
    }
    const marker = `${process.pid}${Date.now() % 100000}`
    const children: ChildProcess[] = []
    try {
      const killed = child(marker)
      children.push(killed.proc)
      const line = await killed.ready
      expect(line).toMatch(/^ready dsh-bash-\w+-1$/)
      const pod = line.split(' ')[1]
      const containerId = fake.pods.get(`default/${pod}`)!.containerId!
      // The background sleeper was started before `echo ready` ran, but the agent runs both at once:
      // under load its exec can come after the ready line.
      await vi.waitFor(() => expect(processesWith(`1000.${marker}`)).toHaveLength(1), { timeout: 15_000, interval: 100 })
      const exited = new Promise((resolve) => killed.proc.once('exit', resolve))
      killed.proc.kill('SIGKILL')
      const killedAt = Date.now()
      // Reaped: a zombie would still look alive to the sweep (same pid, same start time).
      await exited
      // The agent's exec closes, the agent kills its commands and exits; the main process sees no agent
      // for lifelineSeconds (3) and exits: the container stops, nothing of the session runs.
      await vi.waitFor(() => expect(inspect(containerId).State.Running).toBe(false), { timeout: 15_000, interval: 100 })
      console.log(`[dsh-bash-kubernetes] the pod's container stopped ${Date.now() - killedAt} ms after SIGKILL of its server`)
      expect(processesWith(`1000.${marker}`)).toEqual([])
      const kc = new KubeConfig()
      kc.loadFromFile(fake.kubeconfigPath)
      expect((await kc.makeApiClient(CoreV1Api).readNamespacedPod({ name: pod, namespace: 'default' })).status?.phase).toBe('Succeeded')
      // The pod object stays until a server of this host sweeps it (at load).
      expect(fake.pods.has(`default/${pod}`)).toBe(true)
      const next = await load({ sweep: true })
      try {
        await next.executor.run(next.executor.resolve({ command: 'true', owner: 'n' }))
        expect(fake.pods.has(`default/${pod}`)).toBe(false)
    } finally {
      await next.dispose()
    }
    // A clean stop (SIGTERM → dispose) deletes the pod at once.
    const stopped = child(`${marker}9`)
    children.push(stopped.proc)
    const pod2 = (await stopped.ready).split(' ')[1]
    expect(fake.pods.has(`default/${pod2}`)).toBe(true)
    stopped.proc.kill('SIGTERM')
    expect(await new Promise((resolve) => stopped.proc.once('exit', (code, signal) => resolve(signal ?? code)))).toBe(0)
    expect(fake.pods.has(`default/${pod2}`)).toBe(false)
    expect(processesWith(`1000.${marker}9`)).toEqual([])
    } finally {
      // A failed check must not leave a server stand-in running (nor its pod in the next tests' way).
      for (const proc of children) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
      await Promise.all(children.map((proc) => (proc.exitCode === null && proc.signalCode === null ? new Promise((resolve) => proc.once('exit', resolve)) : undefined)))
    }
  })

  it('a pod not ready within startTimeoutMs fails the command with a coded error, and the pod is deleted', async () => {
    const since = Date.now()
    const inst = await load({ startTimeoutMs: 1 })
    try {
      const bash = inst.executor
      await expect(bash.run(bash.resolve({ command: 'true' }))).rejects.toMatchObject({
        code: KUBERNETES_ERROR.notReady,
        message: expect.stringMatching(/^the session pod dsh-bash-\w+-1 did not start: not ready after 1 ms$/),
      })
      // The pod the API creates after the deadline is deleted too (its container seen in the engine's events).
      await createdAndDestroyed(`${FAKE_LABEL}=${fake.id}`, since)
      expect([...fake.pods.keys()]).toEqual([])
    } finally {
      await inst.dispose()
    }
  })

  it('config errors at load: no image anywhere, a bad template, a missing kubeconfig', async () => {
    const make = (config: KubernetesExecutorConfigInput) => () => new KubernetesExecutor(new Context(), { sweep: false, networkPolicy: false, ...config })
    expect(make({ kubeconfig: fake.kubeconfigPath })).toThrow('invalid kubernetes executor config: image is required (neither the config nor the pod template names one)')
    expect(make({ kubeconfig: fake.kubeconfigPath, image: 'x', podTemplate: { kind: 'Deployment' } })).toThrow(
      'invalid kubernetes executor config: pod template: kind must be Pod, got "Deployment"',
    )
    expect(make({ kubeconfig: fake.kubeconfigPath, image: 'x', container: 'main', podTemplate: { spec: { containers: [{ name: 'other' }] } } })).toThrow(
      'invalid kubernetes executor config: the pod template has no container "main"',
    )
    expect(make({ kubeconfig: join(dir, 'missing'), image: 'x' })).toThrow(/^cannot load the kubeconfig: /)
    expect(make({ kubeconfig: fake.kubeconfigPath, image: 'x', mountPath: 'rel' })).toThrow('invalid kubernetes executor config: mountPath must be an absolute path')
    // Stable codes (errors.ts): callers match on them, never on the text.
    const codeOf = (f: () => unknown) => {
      try {
        f()
      } catch (error) {
        return (error as { code?: unknown }).code
      }
    }
    expect(codeOf(make({ kubeconfig: fake.kubeconfigPath }))).toBe(KUBERNETES_ERROR.invalidConfig)
    expect(codeOf(make({ kubeconfig: fake.kubeconfigPath, image: 'x', podTemplate: { kind: 'Deployment' } }))).toBe(KUBERNETES_ERROR.invalidConfig)
    expect(codeOf(make({ kubeconfig: join(dir, 'missing'), image: 'x' }))).toBe(KUBERNETES_ERROR.kubeconfig)
  })

  it('the sweep deletes pods of dead servers of this host and leaves live ones', async () => {
    const kc = new KubeConfig()
    kc.loadFromFile(fake.kubeconfigPath)
    const api = kc.makeApiClient(CoreV1Api)
    const pod = (name: string, server: string) => ({
      metadata: { name, labels: { [LABEL_EXECUTOR]: 'kubernetes' }, annotations: { [ANNOTATION_SERVER]: server } },
      spec: { containers: [{ name: 'bash', image: TEST_IMAGE, command: ['sleep', '1000'] }] },
    })
    const host = (await import('node:os')).hostname()
    await api.createNamespacedPod({ namespace: 'default', body: pod('dead-one', `${host}/999999999/1`) })
    await api.createNamespacedPod({ namespace: 'default', body: pod('live-one', `${host}/${process.pid}/${startTime(process.pid)}`) })
    await api.createNamespacedPod({ namespace: 'default', body: pod('other-host', `elsewhere/1/1`) })
    expect(await sweepDeadPods(api, 'default')).toEqual(['dead-one'])
    expect([...fake.pods.keys()].sort()).toEqual(['default/live-one', 'default/other-host'])
    for (const name of ['live-one', 'other-host']) await api.deleteNamespacedPod({ name, namespace: 'default' })
  })

  it('a kill goes through a second exec when the agent does not answer (agent stopped)', async () => {
    const inst = await load({ killFallbackMs: 500 })
    const bash = inst.executor
    try {
      const marker = `${process.pid}${Date.now() % 100000}`
      const task = bash.start(bash.resolve({ command: `sleep 1000.${marker} & sleep 1001.${marker}`, owner: 'k' }))
      // The shell may or may not have exec'd into its last command: one or two processes carry 1001.
      await vi.waitFor(() => expect(processesWith(`1001.${marker}`).length).toBeGreaterThanOrEqual(1), { timeout: 20_000 })
      // Freeze the agent (its processes are visible from the host): it cannot answer the kill.
      const agent = agentProcesses().filter((pid) => sameContainer(pid, processesWith(`1001.${marker}`)[0]))
      expect(agent.length).toBe(1)
      process.kill(agent[0], 'SIGSTOP')
      let killed: Promise<boolean>
      try {
        killed = bash.kill(task.id)
        // Gone while the agent is still stopped: the second exec (the agent's kill mode) did it.
        await vi.waitFor(() => expect(processesWith(`.${marker}`)).toEqual([]), { timeout: 20_000 })
        expect(fake.execs.filter((e) => e.command[1] === 'kill').length).toBe(1)
      } finally {
        process.kill(agent[0], 'SIGCONT')
      }
      expect(await killed).toBe(true)
      expect(task.status).toBe('killed')
    } finally {
      await inst.dispose()
    }
  })
})

/** Live agents on this machine (their command line is exactly the agent's process name). */
function agentProcesses(): number[] {
  return processesWith(AGENT_PROCESS_NAME).filter((pid) => {
    try {
      return new RegExp(`^${AGENT_PROCESS_NAME}\0+$`).test(readFileSync(`/proc/${pid}/cmdline`, 'latin1'))
    } catch {
      return false
    }
  })
}

function startTime(pid: number): string {
  const stat = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' })
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
}

function sameContainer(a: number, b: number | undefined): boolean {
  if (b === undefined) return false
  const ns = (pid: number) => execFileSync('readlink', [`/proc/${pid}/ns/pid`], { encoding: 'utf8' }).trim()
  try {
    return ns(a) === ns(b)
  } catch {
    return false
  }
}

