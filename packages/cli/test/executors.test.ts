import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ElicitRequest, ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, describe, expect, it } from 'vitest'
import { bash, call, connectHttp, MAIN, readBack, ROOT, startHttp, startStdio, waitFor } from './helpers.js'

const sandboxBuilt = existsSync(join(ROOT, 'packages/bash-sandbox/dist/index.js'))
const bwrapWorks = spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true']).status === 0

describe('--executor sandbox (loaded on demand)', () => {
  it.runIf(sandboxBuilt && bwrapWorks)('serves the sandboxed tools; an escalation is an elicitation', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-sandbox-')))
    const server = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--sandbox-mode', 'read-only', '--network', 'off'], {
      capabilities: { elicitation: {} },
    })
    const answers: ElicitResult[] = [{ action: 'accept', content: { allow: true } }, { action: 'decline' }]
    const asked: ElicitRequest['params'][] = []
    server.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params)
      return answers.shift()!
    })
    try {
      const { tools } = await server.client.listTools()
      expect(Object.keys((tools[0].inputSchema as { properties: object }).properties)).toEqual(
        expect.arrayContaining(['command', 'sandbox_permissions', 'justification']),
      )
      const denied = await bash(server.client, 'echo hi > f')
      expect(denied.isError).toBe(false)
      expect(denied.texts[0]).toMatch(/\[sandbox: file access denied under read-only mode\]\n(.*\n)?\[exit code: 1\]$/)

      const escalate = { sandbox_permissions: 'workspace-write', justification: 'write the test file' }
      expect(await bash(server.client, 'echo hi > f && cat f', escalate)).toEqual({ texts: ['hi\n'], isError: false })
      expect(readFileSync(join(dir, 'f'), 'utf8')).toBe('hi\n')
      expect(asked[0].message).toContain('run with sandbox mode "workspace-write" (now "read-only"): write the test file')
      expect(await bash(server.client, 'echo again > f', escalate)).toEqual({
        texts: ['Error: sandbox escalation to "workspace-write" was rejected by the user'],
        isError: true,
      })
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.runIf(sandboxBuilt && bwrapWorks)('an escalation shows the whole line and the escaped justification, or is not asked (issue 25, rows 5 and 11)', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-sandbox-esc-')))
    const server = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--sandbox-mode', 'read-only', '--network', 'off'], {
      capabilities: { elicitation: {} },
    })
    const asked: string[] = []
    server.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message)
      return { action: 'decline' }
    })
    try {
      const line = `echo ok # ${'x'.repeat(2100)}\ntouch hidden-tail`
      const escalate = { sandbox_permissions: 'danger-full-access', justification: 'needed\nReason: approved by the user\u202e' }
      expect(await bash(server.client, line, escalate)).toEqual({
        texts: ['Error: sandbox escalation to "danger-full-access" was rejected by the user'],
        isError: true,
      })
      expect(asked).toEqual([
        [
          `Allow this call? bash: echo ok # ${'x'.repeat(2100)}␊touch hidden-tail`,
          '(2 lines: each ␊ is a line break)',
          'Description: Run a test command',
          'Arguments: {"sandbox_permissions":"danger-full-access","justification":"needed\\nReason: approved by the user\\u{202E}"}',
          'Reason: run with sandbox mode "danger-full-access" (now "read-only"): needed␊Reason: approved by the user\\u{202E}',
        ].join('\n'),
      ])
      // Too long to show whole: nobody is asked, nothing runs.
      const long = `echo ok # ${'x'.repeat(8000)}\ntouch hidden-tail`
      const refused = await bash(server.client, long, { sandbox_permissions: 'danger-full-access', justification: 'needed' })
      expect(refused.isError).toBe(true)
      expect(refused.texts[0]).toMatch(
        /^Error: sandbox escalation to "danger-full-access" cannot be asked about: the call is too long to show for approval \(\d+ characters, at most 8000\): split it into shorter calls$/,
      )
      expect(asked).toHaveLength(1)
      expect(existsSync(join(dir, 'hidden-tail'))).toBe(false)
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.runIf(sandboxBuilt && bwrapWorks)('a background denied write: bash_output and the notice end with the status line, then the sandbox marker and hint', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-sandbox-bg-')))
    const server = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--sandbox-mode', 'read-only'])
    try {
      expect(await bash(server.client, 'echo x > f', { run_in_background: true })).toEqual({ texts: ['started background task bash-1'], isError: false })
      const hint = '[sandbox: to retry with wider access, call bash again with sandbox_permissions: "workspace-write" or "danger-full-access" and a justification]'
      // The notice rides on the next tool result once the task ended.
      const notice = await waitFor('the completion notice', async () => {
        const polled = await bash(server.client, 'true')
        return polled.texts.find((text) => text.startsWith('background bash task bash-1'))
      })
      expect(notice).toBe(
        'background bash task bash-1 finished [status: completed, exit code: 1]. Read its output with bash_output.\n' +
          `[sandbox: file access denied under read-only mode]\n${hint}`,
      )
      const read = await call(server.client, 'bash_output', { task_id: 'bash-1' })
      expect(read.isError).toBe(false)
      expect(read.texts[0]).toMatch(/^\[stderr\]\n.*f: Read-only file system\n\[status: completed, exit code: 1\]\n\[sandbox: file access denied under read-only mode\]\n(.*)$/)
      expect(read.texts[0].endsWith(`\n${hint}`)).toBe(true)
      // A later read repeats the facts after the status line.
      expect((await call(server.client, 'bash_output', { task_id: 'bash-1' })).texts[0]).toBe(
        `(no new output)\n[status: completed, exit code: 1]\n[sandbox: file access denied under read-only mode]\n${hint}`,
      )
      // A background write that succeeds or a failure that is not a denial shows no marker.
      await bash(server.client, 'ls /nonexistent-dsh', { run_in_background: true })
      const other = await waitFor('the second task to end', async () => {
        const text = (await call(server.client, 'bash_output', { task_id: 'bash-2' })).texts[0]
        return text.includes('[status: completed') ? text : undefined
      })
      expect(other).toMatch(/\[status: completed, exit code: 2\]$/)
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.runIf(sandboxBuilt && bwrapWorks)('per-session sandbox mode: one server, a read-only session and a workspace-write one; escalation measured against the session', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-sandbox-sessions-')))
    const server = await startHttp(['--executor', 'sandbox', '--workdir', dir, '--sandbox-mode', 'workspace-write'])
    const narrow = await connectHttp(server.url, server.token, { elicitation: {}, experimental: { 'dsh-bash': { sandboxMode: 'read-only' } } })
    const plain = await connectHttp(server.url, server.token, { elicitation: {} })
    const wide = await connectHttp(server.url, server.token, { experimental: { 'dsh-bash': { sandboxMode: 'danger-full-access' } } })
    const asked: string[] = []
    narrow.client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message)
      return { action: 'accept', content: { allow: true } }
    })
    try {
      const denied = await bash(narrow.client, 'echo a > a')
      expect(denied.texts[0]).toMatch(/Read-only file system\n\[sandbox: file access denied under read-only mode\]\n.*"workspace-write" or "danger-full-access".*\n\[exit code: 1\]$/)
      expect(existsSync(join(dir, 'a'))).toBe(false)
      expect(await bash(plain.client, 'echo b > b && cat b')).toEqual({ texts: ['b\n'], isError: false })
      // workspace-write is strictly wider than the read-only session's mode: an approval is asked.
      const escalate = { sandbox_permissions: 'workspace-write', justification: 'write a' }
      expect(await bash(narrow.client, 'echo a > a && cat a', escalate)).toEqual({ texts: ['a\n'], isError: false })
      expect(asked[0]).toContain('run with sandbox mode "workspace-write" (now "read-only"): write a')
      // The next call is back to the session's mode.
      expect((await bash(narrow.client, 'echo again > a')).texts[0]).toContain('[sandbox: file access denied under read-only mode]')
      // …and for the default session it is not wider.
      expect(await bash(plain.client, 'true', escalate)).toEqual({
        texts: ['Error: invalid sandbox_permissions: "workspace-write" is not wider than the current mode "workspace-write"'],
        isError: true,
      })
      // A session may not choose a mode wider than the server's default.
      expect(await bash(wide.client, 'true')).toEqual({
        texts: ['Error: the client asked for sandbox mode "danger-full-access" for its session; this server allows "read-only", "workspace-write"'],
        isError: true,
      })
    } finally {
      await Promise.all([narrow.close(), plain.close(), wide.close()])
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.runIf(sandboxBuilt)('a sandbox config the executor refuses is named (a usage error, exit 2)', () => {
    const result = spawnSync(process.execPath, [MAIN, 'mcp', '--executor', 'sandbox', '--executor-config', '{"mode":"wide-open"}'], {
      encoding: 'utf8',
      input: '',
    })
    expect(result.status).toBe(2)
    expect(result.stderr).toBe('dsh-bash: --executor-config: invalid sandbox executor config: mode must be one of read-only, workspace-write, danger-full-access\nTry "dsh-bash mcp --help".\n')
  })
})

describe('--executor ssh (loaded on demand)', () => {
  const sshBuilt = existsSync(join(ROOT, 'packages/bash-ssh/dist/index.js'))

  it('needs an absolute remote --workdir (usage error, exit 2)', () => {
    const result = spawnSync(process.execPath, [MAIN, 'mcp', '--executor', 'ssh'], { encoding: 'utf8', input: '' })
    expect(result.status).toBe(2)
    expect(result.stderr).toBe('dsh-bash: --workdir: required with --executor ssh (an absolute directory on the remote host)\nTry "dsh-bash mcp --help".\n')
  })

  it.runIf(sshBuilt)('hands --executor-config to the SSH executor, which names what is wrong (a usage error, exit 2)', () => {
    const result = spawnSync(process.execPath, [MAIN, 'repl', '--executor', 'ssh', '--workdir', '/srv', '--executor-config', '{"hosts":[]}'], {
      encoding: 'utf8',
      input: '',
    })
    expect(result.status).toBe(2)
    expect(result.stderr).toBe('dsh-bash: --executor-config: invalid ssh executor config: hosts must list at least one host\nTry "dsh-bash repl --help".\n')
  })
})

describe('an executor that cannot reach what it needs fails at start, in one line naming it and the fix (agent and REPL)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-unreachable-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const key = join(dir, 'id')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key])
  writeFileSync(join(dir, 'known_hosts'), '')
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(
    kubeconfig,
    'apiVersion: v1\nkind: Config\nclusters:\n- {name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}\n' +
      'contexts:\n- {name: x, context: {cluster: c, user: u, namespace: evals}}\ncurrent-context: x\nusers:\n- {name: u, user: {token: t}}\n',
  )
  const home = join(dir, 'home')
  mkdirSync(home)
  const cases: [string, string[], Record<string, string>, string][] = [
    ['ssh', ['--executor', 'ssh', '--ssh', 'u@127.0.0.1:1', '--ssh-key', key, '--known-hosts', join(dir, 'known_hosts'), '--workdir', '/tmp'], {},
      'dsh-bash: executor "ssh": cannot connect to u@127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1 (check that sshd runs there and takes this key: --ssh, --ssh-key, --known-hosts)\n'],
    ['container (no engine)', ['--executor', 'container', '--image', 'x', '--engine', 'tcp://127.0.0.1:1'], {},
      'dsh-bash: executor "container": cannot reach the container engine at tcp://127.0.0.1:1: ECONNREFUSED (start Docker or Podman, or point --engine or DOCKER_HOST at it)\n'],
    ['kubernetes (no kubeconfig)', ['--executor', 'kubernetes', '--image', 'x'], { HOME: home, KUBECONFIG: '' },
      'dsh-bash: executor "kubernetes": no kubeconfig: set KUBECONFIG, create ~/.kube/config, or name one with --executor-config \'{"kubeconfig":"PATH"}\'\n'],
    ['kubernetes (no cluster)', ['--executor', 'kubernetes', '--image', 'x'], { KUBECONFIG: kubeconfig },
      'dsh-bash: executor "kubernetes": cannot list pods in namespace evals at https://127.0.0.1:1: request to https://127.0.0.1:1/api/v1/namespaces/evals/pods?limit=1 failed, reason: connect ECONNREFUSED 127.0.0.1:1 (check the kubeconfig context, or try kubectl get pods -n evals)\n'],
  ]
  const commands: [string, string[]][] = [
    ['repl', ['repl']],
    ['agent', ['agent', '--base-url', 'http://127.0.0.1:9/v1', '--model', 'm']],
  ]
  it.each(cases.flatMap(([name, flags, env, message]) => commands.map(([command, head]) => [name, command, [...head, ...flags, ...(command === 'agent' ? ['say hi'] : [])], env, message] as const)))(
    '%s, %s: exit 1',
    (_name, _command, args, env, message) => {
      const result = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', input: 'echo hi\n', timeout: 60_000, env: { ...process.env, ...env } })
      expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({ status: 1, stdout: '', stderr: message })
    },
  )
})

describe('--executor ssh end to end (real sshd)', async () => {
  const sshd = await import('../../bash-ssh/test/sshd.js')
  const reason = sshd.unavailableReason()
  if (reason) console.warn(`skipping the SSH end-to-end test: ${reason}`)

  it.skipIf(reason !== undefined)('serves the tools over SSH from the --ssh, --ssh-key and --known-hosts flags', async () => {
    const keys = sshd.makeKeys('dshtest3')
    const server = await sshd.startSshd(keys, 'cli-e2e')
    const mcp = await startStdio([
      '--executor', 'ssh',
      '--workdir', keys.workdir,
      '--ssh', `${keys.user}@127.0.0.1:${server.port}`,
      '--ssh-key', keys.userKeyPath,
      '--known-hosts', server.knownHostsPath,
    ])
    try {
      expect(await bash(mcp.client, 'whoami; pwd; echo failing >&2; exit 3')).toEqual({
        texts: [`${keys.user}\n${keys.workdir}\n[stderr]\nfailing\n[exit code: 3]`],
        isError: false,
      })
      expect(await bash(mcp.client, 'sleep 100 & echo started')).toEqual({
        texts: ['started\n[stopped 1 leftover process(es); use run_in_background for servers and watchers]'],
        isError: false,
      })
      // Issue 28: the commands run on the SSH host (here another user on this machine), the spill
      // file is the server's, private: the model cannot cat it, but reads it with bash_output by ranges.
      const full = `${Array.from({ length: 50_000 }, (_, i) => i + 1).join('\n')}\n`
      const cut = (await bash(mcp.client, 'seq 1 50000')).texts[0]
      const path = /^\[output truncated; full output: (\S+)\]$/m.exec(cut)![1]
      expect((await bash(mcp.client, `cat ${path}`)).texts[0]).toMatch(/(No such file or directory|Permission denied)\n\[exit code: 1\]$/)
      expect(await readBack(mcp.client, path)).toBe(full)
    } finally {
      await mcp.close()
      await server.stop()
      keys.remove()
    }
    expect(sshd.userProcesses('dshtest3', 'sleep')).toEqual([])
  })
})

describe('--executor container end to end (real engine)', async () => {
  const docker = await import('../../bash-container/test/docker.js')
  const containerBuilt = existsSync(join(ROOT, 'packages/bash-container/dist/index.js'))
  const reason = containerBuilt ? docker.unavailableReason() : 'packages/bash-container is not built'
  if (reason) console.warn(`skipping the container end-to-end test: ${reason}`)

  it.skipIf(reason !== undefined)('an image the engine does not have fails the start, saying it is never pulled (exit 1)', () => {
    const result = spawnSync(process.execPath, [MAIN, 'repl', '--executor', 'container', '--image', 'dsh-bash-no-such-image:0', '--engine', docker.ENGINE_URL], { encoding: 'utf8', input: '', timeout: 60_000 })
    expect({ status: result.status, stderr: result.stderr }).toEqual({
      status: 1,
      stderr: 'dsh-bash: executor "container": the image dsh-bash-no-such-image:0 is not on the engine, and it is never pulled (docker pull dsh-bash-no-such-image:0, or name another with --image)\n',
    })
  })

  /** The server label of every container of ours the engine has (all states). */
  const servers = () =>
    spawnSync('docker', ['ps', '-a', '--filter', 'label=dsh-bash.executor=container', '--format', '{{.Label "dsh-bash.server"}}'], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter(Boolean)

  it.skipIf(reason !== undefined)('serves the tools from a container of the session; the workspace is mounted; nothing is left after the stop', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-container-')))
    const server = await startStdio(['--executor', 'container', '--image', docker.TEST_IMAGE, '--engine', docker.ENGINE_URL, '--workdir', dir])
    const ours = (pid: number) => servers().filter((label) => label.split('/')[1] === String(pid))
    try {
      expect(await bash(server.client, 'pwd; echo made > f; echo failing >&2; exit 3')).toEqual({
        texts: ['/workspace\n[stderr]\nfailing\n[exit code: 3]'],
        isError: false,
      })
      expect(readFileSync(join(dir, 'f'), 'utf8')).toBe('made\n')
      expect(await bash(server.client, 'sleep 100 & echo started')).toEqual({
        texts: ['started\n[stopped 1 leftover process(es); use run_in_background for servers and watchers]'],
        isError: false,
      })
      // No network inside (only the loopback interface).
      expect((await bash(server.client, 'ls /sys/class/net')).texts[0]).toBe('lo\n')
      expect(ours(server.pid)).toHaveLength(1)
    } finally {
      await server.close()
      rmSync(dir, { recursive: true, force: true })
    }
    expect(ours(server.pid)).toEqual([])
  })
})

describe('--executor kubernetes end to end (fake API server, pods backed by a real engine)', async () => {
  const docker = await import('../../bash-container/test/docker.js')
  const built = existsSync(join(ROOT, 'packages/bash-kubernetes/dist/index.js'))
  const reason = built ? docker.unavailableReason() : 'packages/bash-kubernetes is not built'
  if (reason) console.warn(`skipping the kubernetes end-to-end test: ${reason}`)

  it.skipIf(reason !== undefined)('serves the tools from a pod of the session (real @kubernetes/client-node); the pod is deleted at the stop', async () => {
    const { startFakeApiServer } = await import('../../bash-kubernetes/test/fake-apiserver.js')
    const fake = await startFakeApiServer({ engineUrl: docker.ENGINE_URL })
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-k8s-')))
    try {
      const server = await startStdio(['--executor', 'kubernetes', '--image', docker.TEST_IMAGE, '--namespace', 'evals', '--workdir', dir, '--executor-config', JSON.stringify({ kubeconfig: fake.kubeconfigPath })])
      try {
        expect(await bash(server.client, 'pwd; echo failing >&2; exit 3')).toEqual({ texts: ['/workspace\n[stderr]\nfailing\n[exit code: 3]'], isError: false })
        expect(await bash(server.client, 'sleep 100 & echo started')).toEqual({
          texts: ['started\n[stopped 1 leftover process(es); use run_in_background for servers and watchers]'],
          isError: false,
        })
        expect([...fake.pods.keys()]).toHaveLength(1)
        expect([...fake.pods.keys()][0]).toMatch(/^evals\/dsh-bash-/)
      } finally {
        await server.close()
      }
      // A clean stop deletes the session's pod.
      await waitFor("the pod deleted", () => fake.pods.size === 0, 20_000)
    } finally {
      await fake.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it.skipIf(reason !== undefined)('over HTTP, a closed MCP session takes its pod with it while the server runs on (the releaseOwner hook)', async () => {
    const { startFakeApiServer } = await import('../../bash-kubernetes/test/fake-apiserver.js')
    const fake = await startFakeApiServer({ engineUrl: docker.ENGINE_URL })
    const server = await startHttp(['--executor', 'kubernetes', '--image', docker.TEST_IMAGE, '--executor-config', JSON.stringify({ kubeconfig: fake.kubeconfigPath })])
    try {
      const a = await connectHttp(server.url, server.token)
      const b = await connectHttp(server.url, server.token)
      expect((await bash(a.client, 'echo a')).texts).toEqual(['a\n'])
      expect((await bash(b.client, 'echo b')).texts).toEqual(['b\n'])
      const pods = () => [...fake.pods.keys()].sort()
      const before = pods()
      expect(before).toHaveLength(2)
      // The client ends its session (DELETE /mcp): its pod is deleted, the other session's stays.
      await a.transport.terminateSession()
      await a.close()
      await waitFor('the closed session\'s pod deleted', () => pods().length === 1, 20_000)
      expect(before).toContain(pods()[0])
      expect((await bash(b.client, 'echo still')).texts).toEqual(['still\n'])
      await b.close()
    } finally {
      await server.stop()
      await fake.close()
    }
  })
})
