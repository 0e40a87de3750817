/**
 * Egress by domain (issue 27, item 1): the rules, the proxy on its own (a real Unix socket, real
 * loopback servers), and the bridge inside the real sandbox (its filter, its lifetime, its defences).
 * The acceptance through `dsh-bash mcp` is packages/cli/test/mcp-egress.test.ts.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { type AddressInfo, connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { EgressProxy } from '../src/egress-proxy.js'
import { checkPattern, matches, normalizeHost, protectedAddress, refusal } from '../src/egress-rules.js'
import { bridgeBinary } from '../src/sandbox.js'
import { createSandbox, type SandboxInstance, sandboxUnavailable, scratchDir } from './helpers.js'

describe('host patterns and rule sets', () => {
  it('normalizes names and refuses bad patterns, naming the key', () => {
    expect(normalizeHost('Example.COM.')).toBe('example.com')
    expect(normalizeHost('[::1]')).toBe('::1')
    expect(normalizeHost('a b')).toBeUndefined()
    expect(normalizeHost('-x.com')).toBeUndefined()
    expect(checkPattern('*.Example.com', 'network.allow')).toBe('*.example.com')
    expect(() => checkPattern('*.10.0.0.1', 'network.allow')).toThrow('network.allow: expected a host name, *.domain or an IP address, got "*.10.0.0.1"')
    expect(() => checkPattern('http://x.com', '--allow-domain')).toThrow('--allow-domain: expected a host name, *.domain or an IP address, got "http://x.com"')
    expect(() => checkPattern('*', '--deny-domain')).toThrow('--deny-domain')
  })

  it('*.example.com matches names below it, not example.com itself nor notexample.com', () => {
    expect(matches('*.example.com', 'a.example.com')).toBe(true)
    expect(matches('*.example.com', 'a.b.example.com')).toBe(true)
    expect(matches('*.example.com', 'example.com')).toBe(false)
    expect(matches('*.example.com', 'notexample.com')).toBe(false)
    expect(matches('example.com', 'a.example.com')).toBe(false)
  })

  it('deny wins; an empty allow list allows what is not denied; every set must allow (a session narrows)', () => {
    const server = { allow: ['*.example.com', 'a.test', 'b.test'], deny: ['bad.example.com'], owner: "the server's" }
    expect(refusal('ok.example.com', [server])).toBeUndefined()
    expect(refusal('bad.example.com', [server])?.reason).toBe("the server's deny rule bad.example.com matches it")
    expect(refusal('c.test', [server])?.reason).toBe("it is not in the server's allow list (*.example.com, a.test, b.test)")
    expect(refusal('anything.org', [{ allow: [], deny: ['x.org'], owner: "the server's" }])).toBeUndefined()
    const session = { allow: ['a.test'], deny: [], owner: "the session's" }
    expect(refusal('a.test', [server, session])).toBeUndefined()
    expect(refusal('b.test', [server, session])?.reason).toBe("it is not in the session's allow list (a.test)")
    // A session cannot widen: what the server refuses stays refused.
    expect(refusal('c.test', [server, { allow: ['c.test'], deny: [], owner: "the session's" }])?.reason).toContain("the server's allow list")
  })

  it('protected addresses: loopback, link-local and metadata, unspecified, multicast, this machine, in every spelling', () => {
    const own = new Set(['10.1.2.3'])
    for (const address of ['127.0.0.1', '127.9.9.9', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::7f00:1', '169.254.169.254', 'fd00:ec2::254', 'fe80::1', '0.0.0.0', '::', '224.0.0.1', '255.255.255.255', '100.100.100.200', '10.1.2.3']) {
      expect(protectedAddress(address, own), address).toBeDefined()
    }
    for (const address of ['93.184.216.34', '10.0.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) expect(protectedAddress(address, own), address).toBeUndefined()
  })
})

/** A raw request over the proxy's Unix socket; resolves with everything the proxy sent until it closed (or `untilMs`). */
function exchange(path: string, request: Buffer | string, untilMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(path)
    let data = ''
    const timer = setTimeout(() => socket.destroy(), untilMs)
    socket.on('data', (chunk) => (data += chunk.toString('latin1')))
    socket.on('error', reject)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(data)
    })
    socket.write(request)
  })
}

describe('the proxy on its own (a Unix socket, loopback servers)', () => {
  let dir: string
  let web: Server
  let port: number
  const seen: string[] = []

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-egress-proxy-'))
    web = createServer((req, res) => {
      seen.push(`${req.headers.host} ${req.url}`)
      res.end('web\n')
    })
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
    port = (web.address() as AddressInfo).port
  })

  afterAll(() => {
    web.close()
    rmSync(dir, { recursive: true, force: true })
  })

  afterEach(() => {
    seen.length = 0
  })

  const proxyWith = (rules: { allow?: string[]; deny?: string[] }, hosts: Record<string, string> = {}, resolve?: (host: string) => Promise<string[]>) =>
    new EgressProxy({ rules: { allow: rules.allow ?? [], deny: rules.deny ?? [], owner: "the server's" }, hosts, ...(resolve ? { resolve } : {}) })

  it('DNS rebinding: a name the rules allow that resolves to loopback is refused; the same name mapped by --add-host is not (the control)', async () => {
    const rebinding = proxyWith({ allow: ['*.example.com'] }, {}, async () => ['127.0.0.1'])
    const launch = rebinding.listen(join(dir, 'rebind.sock'))
    const answer = await exchange(launch.socketPath, `GET http://evil.example.com:${port}/ HTTP/1.1\r\nHost: evil.example.com:${port}\r\nConnection: close\r\n\r\n`)
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/)
    expect(answer).toContain('network access to evil.example.com denied: it resolves only to protected addresses (127.0.0.1: loopback); only an exact allow rule for the address or --add-host may lead there')
    expect(launch.deniedHosts).toEqual(['evil.example.com'])
    expect(seen).toEqual([])
    launch.close()
    const mapped = proxyWith({ allow: ['*.example.com'] }, { 'evil.example.com': '127.0.0.1' })
    const control = mapped.listen(join(dir, 'mapped.sock'))
    expect(await exchange(control.socketPath, `GET http://evil.example.com:${port}/ok HTTP/1.1\r\nHost: evil.example.com:${port}\r\nConnection: close\r\n\r\n`)).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nweb\n$/)
    expect(seen).toEqual([`evil.example.com:${port} /ok`])
    control.close()
  })

  it('plain HTTP: the Host header must name the URL\'s host; origin-form requests go by their Host header', async () => {
    const proxy = proxyWith({ allow: ['allowed.test'] }, { 'allowed.test': '127.0.0.1', 'blocked.test': '127.0.0.1' })
    const launch = proxy.listen(join(dir, 'host.sock'))
    const smuggled = await exchange(launch.socketPath, `GET http://allowed.test:${port}/ HTTP/1.1\r\nHost: blocked.test\r\nConnection: close\r\n\r\n`)
    expect(smuggled).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*the Host header \(blocked\.test\) does not name the request's host \(allowed\.test\)/)
    const origin = await exchange(launch.socketPath, `GET /origin HTTP/1.1\r\nHost: blocked.test:${port}\r\nConnection: close\r\n\r\n`)
    expect(origin).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/)
    const allowed = await exchange(launch.socketPath, `GET /origin HTTP/1.1\r\nHost: allowed.test:${port}\r\nConnection: close\r\n\r\n`)
    expect(allowed).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
    expect(seen).toEqual([`allowed.test:${port} /origin`])
    expect(launch.deniedHosts).toEqual(['blocked.test'])
    launch.close()
  })

  it('SOCKS5: an IP address is a host like any other (refused unless named); named exactly, it connects (the control)', async () => {
    const greeting = Buffer.from([5, 1, 0])
    const request = (host: number[]) => Buffer.from([5, 1, 0, 1, ...host, port >> 8, port & 255])
    const http = Buffer.from(`GET /socks HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    const closed = proxyWith({ allow: ['allowed.test'] })
    const refused = closed.listen(join(dir, 'socks-refused.sock'))
    const answer = Buffer.from(await exchange(refused.socketPath, Buffer.concat([greeting, request([127, 0, 0, 1])])), 'latin1')
    expect([...answer.subarray(0, 4)]).toEqual([5, 0, 5, 2])
    expect(refused.deniedHosts).toEqual(['127.0.0.1'])
    refused.close()
    // Loopback even by an address rule needs the rule to name it exactly.
    const open = proxyWith({ allow: ['127.0.0.1'] })
    const allowed = open.listen(join(dir, 'socks-allowed.sock'))
    const socket = connect(allowed.socketPath)
    const received: Buffer[] = []
    socket.on('data', (chunk) => {
      received.push(chunk)
      // The method choice, the reply, then the tunnel.
      if (Buffer.concat(received).length === 12) socket.write(http)
    })
    socket.write(Buffer.concat([greeting, request([127, 0, 0, 1])]))
    await new Promise((resolve) => socket.once('close', resolve))
    const all = Buffer.concat(received)
    expect([...all.subarray(0, 4)]).toEqual([5, 0, 5, 0])
    expect(all.subarray(12).toString()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*web\n$/)
    expect(seen).toEqual(['x /socks'])
    allowed.close()
  })

  it('a launch with a session\'s narrower list refuses what that list leaves out, naming it; each host is reported once', async () => {
    const proxy = proxyWith({ allow: ['a.test', 'b.test'] }, { 'a.test': '127.0.0.1', 'b.test': '127.0.0.1' })
    const launch = proxy.listen(join(dir, 'session.sock'), [{ allow: ['a.test'], deny: [], owner: "the session's" }])
    for (let i = 0; i < 2; i++) {
      const answer = await exchange(launch.socketPath, `CONNECT b.test:${port} HTTP/1.1\r\nHost: b.test:${port}\r\n\r\n`)
      expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n[\s\S]*network access to b\.test denied: it is not in the session's allow list \(a\.test\)\n$/)
    }
    const tunnel = await exchange(launch.socketPath, `CONNECT a.test:${port} HTTP/1.1\r\nHost: a.test:${port}\r\n\r\nGET /t HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n`)
    expect(tunnel).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\nHTTP\/1\.1 200 OK\r\n[\s\S]*web\n$/)
    expect(launch.deniedHosts).toEqual(['b.test'])
    launch.close()
  })
})

describe('the bridge binary', () => {
  it('is shipped, and is the build of native/netbridge.c', () => {
    const binary = bridgeBinary()
    expect(binary, 'build it: bash scripts/build-native.sh').toBeDefined()
    const source = readFileSync(new URL('../native/netbridge.c', import.meta.url))
    const sha = createHash('sha256').update(source).digest('hex')
    expect(readFileSync(binary!).includes(Buffer.from(`dsh-netbridge-source-sha256:${sha}`))).toBe(true)
  })
})

const reason = sandboxUnavailable()

describe.skipIf(reason !== undefined)('proxy mode in the real sandbox: the bridge', () => {
  const dir = scratchDir('dsh-egress-bridge-')
  let instance: SandboxInstance
  let web: Server
  let port: number

  beforeAll(async () => {
    web = createServer((_req, res) => res.end('web\n'))
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve))
    port = (web.address() as AddressInfo).port
    instance = await createSandbox({ workspaceRoot: dir.path, cwd: dir.path, network: { allow: ['web.test'], hosts: { 'web.test': '127.0.0.1' } } })
  })

  afterAll(async () => {
    await instance?.dispose()
    web.close()
    dir.remove()
  })

  const run = (command: string, extra: Record<string, unknown> = {}) => instance.executor.run(instance.executor.resolve({ command, ...extra }))

  it('cannot be read or traced by the command (not dumpable); a process of the command itself can (the control)', async () => {
    // The bridge is the command's parent (the shell's $PPID inside the PID namespace).
    const probe = [
      'cat /proc/$PPID/environ >/dev/null && echo "bridge environ: read" || echo "bridge environ: refused"',
      // (As root the fd numbers can be listed: a non-dumpable process's /proc files belong to root. What they lead to cannot be read.)
      'readlink /proc/$PPID/fd/0 >/dev/null 2>&1 && echo "bridge fd: followed" || echo "bridge fd: refused"',
      `python3 -c 'import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); r = libc.ptrace(16, int(sys.argv[1]), 0, 0); print("bridge ptrace:", "attached" if r == 0 else os.strerror(ctypes.get_errno()))' $PPID`,
      'sleep 30 & child=$!',
      'cat /proc/$child/environ >/dev/null && echo "own child environ: read"',
      `python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); r = libc.ptrace(16, int(sys.argv[1]), 0, 0); print("own child ptrace:", "attached" if r == 0 else ctypes.get_errno())' $child`,
      'kill -9 $child',
    ].join('\n')
    const result = await run(probe)
    expect(result.stdout.text).toBe(
      'bridge environ: refused\nbridge fd: refused\nbridge ptrace: Operation not permitted\nown child environ: read\nown child ptrace: attached\n',
    )
  })

  it('ignores SIGTERM and the terminal signals: the proxy stays up for the command', async () => {
    const result = await run(`kill -TERM $PPID; kill -INT $PPID; kill -HUP $PPID; sleep 0.3; curl -fsS http://web.test:${port}/`)
    expect(result.stdout.text).toBe('web\n')
    expect(result.exitCode).toBe(0)
  })

  it('reports the command\'s exit and signal as its own; leftovers are counted as without the bridge', async () => {
    expect((await run('exit 7')).exitCode).toBe(7)
    const killed = await run('kill -9 $$')
    expect({ exitCode: killed.exitCode, signal: killed.signal }).toEqual({ exitCode: null, signal: 'SIGKILL' })
    const left = await run('sleep 100 & echo started')
    expect({ out: left.stdout.text, leftovers: left.leftoverProcesses }).toEqual({ out: 'started\n', leftovers: 1 })
    const timed = await run('trap "echo trapped; exit 0" TERM; sleep 30 & wait', { timeoutMs: 1500 })
    expect({ timedOut: timed.timedOut, exitCode: timed.exitCode, out: timed.stdout.text }).toEqual({ timedOut: true, exitCode: 0, out: 'trapped\n' })
  })

  it('a foreground run that yields to the background carries its denied hosts and resource facts as a task', async () => {
    const result = await run(`sleep 1; curl -fsS http://other.test:${port}/late`, { yieldAfterMs: 200 })
    expect(result.yieldedTo).toBeDefined()
    expect(result.sandbox).toBeUndefined()
    const task = instance.executor.get(result.yieldedTo!)!
    await task.done
    expect(task.sandbox?.deniedHosts).toEqual(['other.test'])
    expect(task.cpuMs).toBeGreaterThanOrEqual(0)
  })

  it('a background task in proxy mode ends when its processes do, with its denied hosts', async () => {
    const task = instance.executor.start(instance.executor.resolve({ command: `curl -fsS http://web.test:${port}/; curl -fsS http://other.test:${port}/` }))
    await task.done
    expect(task.status).toBe('completed')
    expect(task.exitCode).toBe(22)
    expect(task.sandbox?.deniedHosts).toEqual(['other.test'])
    expect(instance.executor.readOutput(task.id).delta).toBe('web\n[stderr]\ncurl: (22) The requested URL returned error: 403\n')
  })
  it('capabilities: networkModes is proxy (a named host through the proxy, a direct connection nowhere: neither off nor on), limits include the private /tmp', async () => {
    const caps = instance.executor.capabilities
    expect(caps.networkModes).toEqual(['proxy'])
    expect(caps.limits).toContain('tmp')
    expect(caps.limits).toContain('memory')
    const named = await run(`curl -fsS http://web.test:${port}/`)
    expect(named.stdout.text).toBe('web\n')
    const direct = await run(`exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`)
    expect(direct.stdout.text).toBe('')
    expect(direct.exitCode).not.toBe(0)
  })
})
