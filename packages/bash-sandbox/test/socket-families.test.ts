/**
 * Socket families by allow-list (issue 25, row 10): `socket(AF_VSOCK)` succeeded inside the
 * sandbox with the network off (vsock is not network-namespaced; this machine is a VM with
 * services on vsock). Every family 0-50 is tried with four socket types and `socketpair`, by a real
 * program (perl) inside the real sandbox, against the same sandbox without the filter (the control:
 * it shows what the namespaces alone let through). Only `socket()` is called: nothing connects to
 * any vsock service. Also: the filter reaches bwrap on every launch path (both launcher helpers,
 * Node's spawn, a command fed stdin, a long command run from a file, an interactive one).
 */
import { spawnSync } from 'node:child_process'
import type { BashExecutor } from '@deepseek-ai/dsh-bash'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { createSandbox, type SandboxInstance, sandboxUnavailable, scratchDir } from './helpers.js'

const reason = sandboxUnavailable()
const dir = scratchDir('dsh-sockets-')
afterAll(() => dir.remove())

const ALLOWED_NETWORK_OFF = [2, 10, 16] // AF_INET, AF_INET6, AF_NETLINK
const ALLOWED_NETWORK_ON = [1, 2, 10, 16] // and AF_UNIX
const AF_UNIX = 1
const AF_VSOCK = 40
const SOCKET_NR: Record<string, number> = { x64: 41, arm64: 198 }

/**
 * One line per family: `<family> <type>:<ok|errno>,… pair:<ok|errno>` for SOCK_STREAM, SOCK_DGRAM,
 * SOCK_RAW and SOCK_SEQPACKET; then `high:<ok|errno>`, AF_VSOCK with a high bit set in the
 * 64-bit argument (through `syscall`: the kernel reads an int, and so must the filter).
 */
const PROBE = String.raw`
for my $f (0..50) {
  my @r;
  for my $t (1, 2, 3, 5) { if (socket(my $s, $f, $t, 0)) { push @r, "$t:ok"; close $s } else { push @r, "$t:" . ($!+0) } }
  my $pair = socketpair(my $a, my $b, $f, 1, 0) ? "ok" : ($!+0);
  print "$f " . join(",", @r) . " pair:$pair\n";
}
my $fd = syscall(${SOCKET_NR[process.arch] ?? -1}, 0x100000000 + ${AF_VSOCK}, 1, 0);
print "high:" . ($fd >= 0 ? "ok" : ($!+0)) . "\n";
`

type Results = Map<string, string>

function parse(text: string): Results {
  const results: Results = new Map()
  for (const line of text.trim().split('\n')) {
    const [family, rest] = line.startsWith('high:') ? ['high', line.slice(5)] : line.split(' ', 2) as [string, string]
    results.set(family, line.startsWith('high:') ? rest : line.slice(family.length + 1))
  }
  return results
}

/** The same namespaces as the sandbox (private net when `network` is off), no seccomp filter. */
function withoutFilter(network: boolean): Results {
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-pid', '--unshare-ipc', '--cap-drop', 'ALL', ...(network ? [] : ['--unshare-net'])]
  const result = spawnSync('bwrap', [...args, '--', 'perl', '-e', PROBE], { encoding: 'utf8' })
  expect(result.status, result.stderr).toBe(0)
  return parse(result.stdout)
}

const EPERM = '1:1,2:1,3:1,5:1 pair:1'
/** Egress by domain (proxy mode): the command's network is off but for the bridge to the proxy. */
const PROXY = { allow: ['allowed.test'] }

describe.skipIf(reason !== undefined)('socket families by allow-list', () => {
  const instances: SandboxInstance[] = []
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.dispose()))
  })

  // Proxy mode (egress by domain) keeps the network-off filter: its bridge applies the program itself.
  for (const network of [false, true, PROXY] as const) {
    const on = network === true
    const allowed = on ? ALLOWED_NETWORK_ON : ALLOWED_NETWORK_OFF
    for (const mode of ['read-only', 'workspace-write'] as const) {
      it(`${mode}, network ${on ? 'on' : network === false ? 'off' : 'by proxy'}: only ${allowed.join(', ')} can be created; every other family fails with EPERM, socketpair only for AF_UNIX`, async () => {
        const instance = await createSandbox({ workspaceRoot: dir.path, cwd: dir.path, mode, network })
        instances.push(instance)
        const { executor } = instance
        const result = await executor.run(executor.resolve({ command: `perl -e '${PROBE.replace(/'/g, `'\\''`)}'` }))
        expect(result.exitCode, result.stderr.text).toBe(0)
        const inside = parse(result.stdout.text)
        const control = withoutFilter(on)
        // The control: without the filter, AF_UNIX (and here AF_VSOCK) sockets are created in the same namespaces.
        expect(control.get(String(AF_UNIX))).toMatch(/^1:ok/)
        for (let family = 0; family <= 50; family++) {
          const [types, pair] = inside.get(String(family))!.split(' ')
          const [controlTypes, controlPair] = control.get(String(family))!.split(' ')
          if (allowed.includes(family)) expect(types, `family ${family}`).toBe(controlTypes)
          else expect(types, `family ${family} (without the filter: ${controlTypes})`).toBe('1:1,2:1,3:1,5:1')
          expect(pair, `socketpair of family ${family}`).toBe(family === AF_UNIX ? controlPair : 'pair:1')
        }
        expect(inside.get(String(AF_VSOCK))).toBe(EPERM)
        if (SOCKET_NR[process.arch]) expect(inside.get('high'), 'AF_VSOCK with a high bit').toBe('1')
      })
    }
  }

  it('python3 gets PermissionError for AF_VSOCK and AF_UNIX (network off); AF_INET, socketpair and a loopback server work', async () => {
    const instance = await createSandbox({ workspaceRoot: dir.path, cwd: dir.path, mode: 'read-only' })
    instances.push(instance)
    const { executor } = instance
    const script = [
      'import socket',
      'for name in ("AF_VSOCK", "AF_UNIX", "AF_PACKET"):',
      '    try:',
      '        socket.socket(getattr(socket, name), socket.SOCK_DGRAM if name == "AF_PACKET" else socket.SOCK_STREAM); print(name, "created")',
      '    except OSError as e:',
      '        print(name, type(e).__name__, e.errno)',
      'a, b = socket.socketpair(); a.sendall(b"x"); print("socketpair", b.recv(1))',
      's = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); c = socket.create_connection(s.getsockname()); print("loopback", s.accept()[0] is not None)',
    ].join('\n')
    const result = await executor.run(executor.resolve({ command: `python3 -c '${script}'` }))
    expect(result.stderr.text).toBe('')
    expect(result.stdout.text).toBe("AF_VSOCK PermissionError 1\nAF_UNIX PermissionError 1\nAF_PACKET PermissionError 1\nsocketpair b'x'\nloopback True\n")
  })
})

/** The filter is in force: `Seccomp: 2` (filter mode) and AF_VSOCK refused. */
const FILTER_PROBE = `grep -E '^Seccomp:' /proc/self/status; perl -e 'print socket(S, ${AF_VSOCK}, 1, 0) ? "vsock created\\n" : "vsock: $!\\n"'`
const FILTERED = 'Seccomp:\t2\nvsock: Operation not permitted\n'

describe.skipIf(reason !== undefined)('the seccomp program reaches bwrap on every launch path', () => {
  let instances: SandboxInstance[] = []
  afterEach(async () => {
    await Promise.all(instances.map((i) => i.dispose()))
    instances = []
  })
  const sandbox = async (launcher: 'spawn' | 'helper-native' | 'helper-node', network: boolean | typeof PROXY = false): Promise<BashExecutor> => {
    const instance = await createSandbox({ workspaceRoot: dir.path, cwd: dir.path, launcher, network })
    instances.push(instance)
    return instance.executor
  }

  for (const [launcher, network] of [['spawn', false], ['helper-native', false], ['helper-node', false], ['spawn', PROXY], ['helper-native', PROXY]] as const) {
    it(`launcher ${launcher}${network ? ', proxy mode (the bridge applies it)' : ''}: a run, a background task, a command fed stdin, a long command`, async (ctx) => {
      let bash: BashExecutor
      try {
        bash = await sandbox(launcher, network)
      } catch (error) {
        // No native helper ships for this platform: said so by the config check, and skipped.
        if (launcher === 'helper-native' && /launcher "helper-native" is not available/.test(String(error))) return ctx.skip()
        throw error
      }
      expect((await bash.run(bash.resolve({ command: FILTER_PROBE }))).stdout.text).toBe(FILTERED)
      const task = bash.start(bash.resolve({ command: FILTER_PROBE }))
      await task.done
      expect(bash.readOutput(task.id).delta).toBe(FILTERED)
      // stdin: the helper cannot take it, so this one is spawned from Node.js whatever the launcher.
      expect((await bash.run(bash.resolve({ command: `read line; echo "$line"; ${FILTER_PROBE}`, stdin: 'fed\n' }))).stdout.text).toBe(`fed\n${FILTERED}`)
      const long = `# ${'x'.repeat(200 * 1024)}\n${FILTER_PROBE}`
      expect((await bash.run(bash.resolve({ command: long }))).stdout.text).toBe(FILTERED)
      // The control: the same probe unconfined.
      const open = await bash.run(bash.resolve({ command: FILTER_PROBE, sandboxMode: 'danger-full-access' }))
      expect(open.stdout.text).toMatch(/^Seccomp:\t0\n/)
    })
  }

  for (const network of [false, PROXY] as const) {
    it(`an interactive command (a terminal, spawned through setsid)${network ? ', proxy mode' : ''}`, async () => {
      const bash = await sandbox('spawn', network)
      const task = bash.start(bash.resolve({ command: FILTER_PROBE, interactive: true }))
      await task.done
      let text = ''
      await vi.waitFor(() => {
        text += bash.readOutput(task.id).delta
        expect(text).toContain('vsock')
      })
      // The terminal view expands the tab.
      expect(text).toMatch(/Seccomp: +2\nvsock: Operation not permitted\n/)
    })
  }
})
