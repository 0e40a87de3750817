import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bash, ROOT, startStdio, type StdioServer } from './helpers.js'

// Issue 27, item 1 and its acceptance: egress by domain through `dsh-bash mcp --executor sandbox`,
// real bwrap, the real proxy, loopback servers only (`--add-host` maps the test names to 127.0.0.1).

const sandboxBuilt = existsSync(join(ROOT, 'packages/bash-sandbox/dist/index.js'))
const bwrapWorks = spawnSync('bwrap', ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-net', 'true']).status === 0
const hasTools = ['curl', 'openssl', 'python3', 'strace'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0)
const reason = !sandboxBuilt ? 'bash-sandbox is not built' : !bwrapWorks ? 'bwrap cannot create a sandbox here' : !hasTools ? 'curl, openssl, python3 or strace is missing' : undefined
if (reason) console.warn(`[mcp-egress] skipped: ${reason}`)

/** A loopback server that records every request it sees. */
interface Recorder {
  server: Server
  port: number
  requests: string[]
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function recorder(name: string, tls?: { key: string; cert: string }): Promise<Recorder> {
  const requests: string[] = []
  const handler = (req: { method?: string; url?: string; headers: { host?: string } }, res: { end(text: string): void }) => {
    requests.push(`${req.method} ${req.headers.host} ${req.url}`)
    res.end(`page of ${name}\n`)
  }
  const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler)
  return { server, port: await listen(server), requests }
}

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor sandbox --allow-domain: egress by domain through the proxy', () => {
  let dir: string
  let allowed: Recorder
  let allowedTls: Recorder
  let blocked: Recorder
  let server: StdioServer
  let trace: string

  beforeAll(async () => {
    // Outside /tmp: the sandbox's /tmp is private.
    dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-egress-'))
    mkdirSync(join(dir, 'ws'))
    const made = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=allowed.test', '-days', '1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { encoding: 'utf8' })
    if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`)
    allowed = await recorder('allowed')
    allowedTls = await recorder('allowed over TLS', { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') })
    blocked = await recorder('blocked')
    trace = join(dir, 'connect.trace')
    // Every connect() of the server process tree is traced: the proxy's own must go to the allowed servers only.
    server = await startStdio(
      ['--executor', 'sandbox', '--workdir', join(dir, 'ws'), '--allow-domain', 'allowed.test', '--add-host', 'allowed.test:127.0.0.1', '--add-host', 'blocked.test:127.0.0.1'],
      { wrap: (argv) => ['strace', '-f', '-qq', '-e', 'trace=connect', '-e', 'signal=none', '-o', trace, ...argv] },
    )
  }, 180_000)

  afterAll(async () => {
    await server?.close()
    for (const r of [allowed, allowedTls, blocked]) r?.server.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('an allowed host answers over plain HTTP (forward proxy) and HTTPS (CONNECT); the denied one does not, with the marker', async () => {
    const page = await bash(server.client, `curl -fsS http://allowed.test:${allowed.port}/plain`)
    expect(page).toEqual({ texts: ['page of allowed\n'], isError: false })
    const tls = await bash(server.client, `curl -fsSk https://allowed.test:${allowedTls.port}/tunnel`)
    expect(tls).toEqual({ texts: ['page of allowed over TLS\n'], isError: false })
    const denied = await bash(server.client, `curl -fsS http://blocked.test:${blocked.port}/nope; curl -fsSk https://blocked.test:${blocked.port}/again`)
    // Once per host, after the output, before the exit marker.
    expect(denied.texts[0]).toBe(
      '[stderr]\ncurl: (22) The requested URL returned error: 403\ncurl: (22) The requested URL returned error: 403\n[sandbox: network access to blocked.test denied]\n[exit code: 22]',
    )
    expect(denied.isError).toBe(false)
    // The 403 names the rule.
    const body = await bash(server.client, `curl -sS http://blocked.test:${blocked.port}/why`)
    expect(body.texts[0]).toBe(
      "dsh-bash sandbox proxy: network access to blocked.test denied: it is not in the server's allow list (allowed.test)\n[sandbox: network access to blocked.test denied]",
    )
    // SOCKS5 (ALL_PROXY is socks5h://): the same rules.
    const socks = await bash(server.client, `curl -fsS --proxy "$ALL_PROXY" http://allowed.test:${allowed.port}/socks && curl -fsS --proxy "$ALL_PROXY" http://blocked.test:${blocked.port}/socks`)
    expect(socks.texts[0]).toMatch(/^page of allowed\n\[stderr\]\ncurl: \(97\) .*blocked\.test.*\n\[sandbox: network access to blocked\.test denied\]\n\[exit code: 97\]$/)
    expect(allowed.requests).toEqual([`GET allowed.test:${allowed.port} /plain`, `GET allowed.test:${allowed.port} /socks`])
    expect(allowedTls.requests).toEqual([`GET allowed.test:${allowedTls.port} /tunnel`])
  }, 180_000)

  it('a program that ignores the proxy reaches nothing: no route, no host loopback, no Unix socket', async () => {
    const direct = await bash(server.client, `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${allowed.port}/direct`)
    expect(direct.texts[0]).toMatch(/curl: \(7\) Failed to connect to 127\.0\.0\.1 port \d+.*\n\[exit code: 7\]$/)
    const raw = await bash(
      server.client,
      `python3 -c 'import socket; socket.create_connection(("127.0.0.1", ${allowed.port}), timeout=5)' 2>&1 | tail -1; exec 3<>/dev/tcp/127.0.0.1/${blocked.port}`,
    )
    expect(raw.texts[0]).toBe(
      `ConnectionRefusedError: [Errno 111] Connection refused\n[stderr]\n/usr/bin/bash: connect: Connection refused\n/usr/bin/bash: line 1: /dev/tcp/127.0.0.1/${blocked.port}: Connection refused\n[exit code: 1]`,
    )
    // No name resolves inside (no DNS server in the namespace): only the proxy resolves.
    const dns = await bash(server.client, `getent hosts allowed.test example.com; echo "exit $?"`)
    expect(dns.texts[0]).toBe('exit 2\n')
    // The proxy's own socket is no way around it: no AF_UNIX for the command.
    const unix = await bash(server.client, `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("/tmp/.dsh-bash/proxy.sock")' 2>&1 | tail -1`)
    expect(unix.texts[0]).toBe('PermissionError: [Errno 1] Operation not permitted\n')
    // Control: the same raw connect with the proxy reaches the allowed server (the refusals above are the sandbox's).
    const control = await bash(server.client, `curl -fsS http://allowed.test:${allowed.port}/control`)
    expect(control.texts[0]).toBe('page of allowed\n')
  }, 180_000)

  it('the blocked server saw no request, and the server connected to nothing but the allowed servers', async () => {
    expect(blocked.requests).toEqual([])
    // Control: the blocked server was up and answering all along.
    const answer = await fetch(`http://127.0.0.1:${blocked.port}/control`)
    expect(await answer.text()).toBe('page of blocked\n')
    expect(blocked.requests).toEqual([`GET 127.0.0.1:${blocked.port} /control`])
    // The server's own threads (not the sandboxes': their connects stay in their namespaces). The
    // transport's process is strace; the server is its child.
    const node = readFileSafe(`/proc/${server.pid}/task/${server.pid}/children`).join(' ').trim().split(/\s+/)[0]
    expect(readFileSafe(`/proc/${node}/comm`)).toEqual(['node\n'])
    const threads = new Set(readFileDirSafe(`/proc/${node}/task`))
    const inet = readFileSync(trace, 'utf8')
      .split('\n')
      .filter((line) => threads.has(line.split(' ')[0]) && /connect\(\d+, \{sa_family=AF_INET6?/.test(line))
    const ports = inet.map((line) => /sin6?_port=htons\((\d+)\)/.exec(line)?.[1])
    expect(inet.length).toBeGreaterThan(0)
    for (const line of inet) expect(line).toMatch(/inet_addr\("127\.0\.0\.1"\)|inet_pton\(AF_INET6, "::ffff:127\.0\.0\.1"/)
    expect(new Set(ports)).toEqual(new Set([String(allowed.port), String(allowedTls.port)]))
  })
})

function readFileDirSafe(path: string): string[] {
  try {
    return spawnSync('ls', [path], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)
  } catch {
    return []
  }
}

function readFileSafe(path: string): string[] {
  try {
    return [readFileSync(path, 'utf8')]
  } catch {
    return []
  }
}

describe.skipIf(reason !== undefined)('dsh-bash mcp --executor sandbox: secrets are unreadable (--deny-read, the default list)', () => {
  let dir: string
  let home: string

  beforeAll(() => {
    dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-secrets-'))
    home = join(dir, 'home')
    for (const sub of ['home/.ssh', 'home/.aws', 'vault', 'ws']) mkdirSync(join(dir, sub), { recursive: true })
    writeFileSync(join(home, '.ssh/id_test'), 'PRIVATE KEY\n')
    writeFileSync(join(home, '.aws/credentials'), 'aws_secret_access_key = x\n')
    writeFileSync(join(dir, 'vault/token'), 'vault token\n')
    writeFileSync(join(dir, 'ws/ok.txt'), 'ordinary file\n')
  })

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const read = `cat ok.txt; cat ${'"$HOME"'}/.ssh/id_test; cat ~/.aws/credentials; ls ~/.ssh; cat VAULT/token`

  it('a file under --deny-read and ~/.ssh, ~/.aws are unreadable inside, with the file-access marker', async () => {
    const server = await startStdio(['--executor', 'sandbox', '--workdir', join(dir, 'ws'), '--deny-read', join(dir, 'vault')], { env: { HOME: home } })
    try {
      const result = await bash(server.client, read.replace('VAULT', join(dir, 'vault')))
      expect(result.texts[0]).toBe(
        [
          'ordinary file',
          '[stderr]',
          `cat: ${home}/.ssh/id_test: Permission denied`,
          `cat: ${home}/.aws/credentials: Permission denied`,
          `ls: cannot open directory '${home}/.ssh': Permission denied`,
          `cat: ${join(dir, 'vault')}/token: Permission denied`,
          '[sandbox: file access denied under workspace-write mode]',
          '[sandbox: to retry with wider access, call bash again with sandbox_permissions: "danger-full-access" and a justification]',
          '[exit code: 1]',
        ].join('\n'),
      )
      // --allow-read lifts one; a missing file is told apart (no marker: not the sandbox's doing).
      const missing = await bash(server.client, `cat ~/.ssh/nothing-here; cat ${join(dir, 'ws')}/nothing-here`)
      expect(missing.texts[0]).toContain('[sandbox: file access denied under workspace-write mode]')
      const none = await bash(server.client, `cat ${join(dir, 'ws')}/nothing-here`)
      expect(none.texts[0]).toBe(`[stderr]\ncat: ${join(dir, 'ws')}/nothing-here: No such file or directory\n[exit code: 1]`)
    } finally {
      await server.close()
    }
  }, 180_000)

  it('--allow-read lifts a path: a whole entry, or a file inside a masked directory', async () => {
    const server = await startStdio(
      ['--executor', 'sandbox', '--workdir', join(dir, 'ws'), '--allow-read', '~/.aws', '--allow-read', join(home, '.ssh/id_test')],
      { env: { HOME: home } },
    )
    try {
      const result = await bash(server.client, 'cat ~/.aws/credentials ~/.ssh/id_test; ls ~/.ssh')
      expect(result.texts[0]).toBe(`aws_secret_access_key = x\nPRIVATE KEY\n[stderr]\nls: cannot open directory '${home}/.ssh': Permission denied\n[sandbox: file access denied under workspace-write mode]\n[sandbox: to retry with wider access, call bash again with sandbox_permissions: "danger-full-access" and a justification]\n[exit code: 2]`)
    } finally {
      await server.close()
    }
  }, 180_000)

  it('control: the same reads succeed with danger-full-access (the masks are the sandbox\'s)', async () => {
    const server = await startStdio(['--executor', 'sandbox', '--workdir', join(dir, 'ws'), '--sandbox-mode', 'danger-full-access', '--deny-read', join(dir, 'vault')], {
      env: { HOME: home },
    })
    try {
      const result = await bash(server.client, read.replace('VAULT', join(dir, 'vault')))
      expect(result).toEqual({ texts: ['ordinary file\nPRIVATE KEY\naws_secret_access_key = x\nid_test\nvault token\n'], isError: false })
    } finally {
      await server.close()
    }
  }, 180_000)
})

describe.skipIf(reason !== undefined)('a session\'s egress rules (capabilities.experimental["dsh-bash"].network) narrow the server\'s, never widen them', () => {
  let dir: string
  let web: Recorder

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync('/var/tmp/dsh-e2e-session-egress-'))
    web = await recorder('web')
  })

  afterAll(() => {
    web?.server.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const hosts = ['--add-host', 'a.test:127.0.0.1', '--add-host', 'b.test:127.0.0.1', '--add-host', 'c.test:127.0.0.1']

  it('the server allows a.test and b.test; the session only a.test, then c.test (refused all the same)', async () => {
    const server = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--allow-domain', 'a.test', '--allow-domain', 'b.test', ...hosts], {
      capabilities: { experimental: { 'dsh-bash': { network: { allow: ['a.test'] } } } },
    })
    try {
      const result = await bash(server.client, `curl -fsS http://a.test:${web.port}/a; curl -sS http://b.test:${web.port}/b`)
      expect(result.texts[0]).toBe("page of web\ndsh-bash sandbox proxy: network access to b.test denied: it is not in the session's allow list (a.test)\n[sandbox: network access to b.test denied]")
    } finally {
      await server.close()
    }
    const wider = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--allow-domain', 'a.test', '--allow-domain', 'b.test', ...hosts], {
      capabilities: { experimental: { 'dsh-bash': { network: { allow: ['c.test'] } } } },
    })
    try {
      const result = await bash(wider.client, `curl -sS http://c.test:${web.port}/c`)
      expect(result.texts[0]).toBe("dsh-bash sandbox proxy: network access to c.test denied: it is not in the server's allow list (a.test, b.test)\n[sandbox: network access to c.test denied]")
    } finally {
      await wider.close()
    }
    expect(web.requests).toEqual([`GET a.test:${web.port} /a`])
  }, 180_000)

  it('with --network on, a session with lists gets the proxy instead of the host\'s network; the control session keeps the host\'s', async () => {
    const narrowed = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--network', 'on'], {
      capabilities: { experimental: { 'dsh-bash': { network: { allow: ['127.0.0.1'] } } } },
    })
    try {
      // NO_PROXY names 127.0.0.1 (inside, that is the sandbox's own loopback): --noproxy '' sends it to the proxy all the same.
      const result = await bash(narrowed.client, `curl -fsS --noproxy '' http://127.0.0.1:${web.port}/proxied && curl -sS --noproxy '*' http://127.0.0.1:${web.port}/direct`)
      expect(result.texts[0]).toMatch(/^page of web\n\[stderr\]\ncurl: \(7\) Failed to connect to 127\.0\.0\.1 port \d+.*\n\[exit code: 7\]$/)
    } finally {
      await narrowed.close()
    }
    const open = await startStdio(['--executor', 'sandbox', '--workdir', dir, '--network', 'on'])
    try {
      const result = await bash(open.client, `curl -sS --noproxy '*' http://127.0.0.1:${web.port}/direct`)
      expect(result.texts[0]).toBe('page of web\n')
    } finally {
      await open.close()
    }
  }, 180_000)

  it('malformed session rules, or a server without a sandbox, fail every call of the session with the reason', async () => {
    const bad = await startStdio(['--executor', 'sandbox', '--workdir', dir], { capabilities: { experimental: { 'dsh-bash': { network: { allow: 'a.test' } } } } })
    try {
      expect(await bash(bad.client, 'true')).toEqual({
        texts: ['Error: the client asked for session egress rules {"allow":"a.test"}; expected { allow?: [host patterns], deny?: [host patterns] }'],
        isError: true,
      })
    } finally {
      await bad.close()
    }
    const pattern = await startStdio(['--executor', 'sandbox', '--workdir', dir], { capabilities: { experimental: { 'dsh-bash': { network: { deny: ['http://x'] } } } } })
    try {
      expect(await bash(pattern.client, 'true')).toEqual({ texts: ['Error: invalid network: deny: expected a host name, *.domain or an IP address, got "http://x"'], isError: true })
    } finally {
      await pattern.close()
    }
    const local = await startStdio(['--workdir', dir], { capabilities: { experimental: { 'dsh-bash': { network: { allow: ['a.test'] } } } } })
    try {
      expect(await bash(local.client, 'true')).toEqual({ texts: ["Error: the client asked for session egress rules, but this server's executor does not use a sandbox"], isError: true })
    } finally {
      await local.close()
    }
  }, 180_000)
})
