import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import tls from 'node:tls'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ContainerExecutor, EngineClient, engineTlsFromEnv, loadEngineTls } from '../src/index.js'
import { containersWithLabel, ENGINE_URL, TEST_IMAGE, unavailableReason } from './docker.js'

function tlsSkipReason(): string | undefined {
  const engine = unavailableReason()
  if (engine) return engine
  if (!ENGINE_URL.startsWith('unix://')) return `the TLS proxy fronts a unix socket engine; DOCKER_HOST is ${ENGINE_URL}`
  if (spawnSync('openssl', ['version']).status !== 0) return 'no openssl to make the test certificates'
  return undefined
}
const skip = tlsSkipReason()
if (skip) console.warn(`[dsh-bash-container] skipping the engine-over-TLS tests: ${skip}`)

/** A CA, a server certificate for 127.0.0.1/localhost and a client certificate, made with openssl. */
function makeCertificates(dir: string, name: string): void {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', `/CN=${name} test CA`, '-keyout', `${name}-ca-key.pem`, '-out', `${name}-ca.pem`)
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n')
  writeFileSync(join(dir, 'client.ext'), 'extendedKeyUsage=clientAuth\n')
  for (const who of ['server', 'client']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${who}`, '-keyout', `${name}-${who}-key.pem`, '-out', `${who}.csr`)
    ssl('x509', '-req', '-in', `${who}.csr`, '-CA', `${name}-ca.pem`, '-CAkey', `${name}-ca-key.pem`, '-CAcreateserial', '-days', '2', '-extfile', `${who}.ext`, '-out', `${name}-${who}.pem`)
  }
}

/** Docker's cert directory layout: ca.pem, cert.pem, key.pem. */
function certDir(dir: string, name: string, ca: string): string {
  const out = join(dir, name)
  execFileSync('mkdir', ['-p', out])
  writeFileSync(join(out, 'ca.pem'), readFileSync(join(dir, `${ca}-ca.pem`)))
  writeFileSync(join(out, 'cert.pem'), readFileSync(join(dir, 'good-client.pem')))
  writeFileSync(join(out, 'key.pem'), readFileSync(join(dir, 'good-client-key.pem')))
  return out
}

// A real engine behind a real TLS endpoint requiring client certificates (as `dockerd --tlsverify`
// does): a TLS terminator in front of the engine's unix socket.
describe.skipIf(skip !== undefined)('the engine over TCP + TLS (DOCKER_TLS_VERIFY conventions)', () => {
  let dir: string
  let server: tls.Server
  let port: number
  let certs: string
  const label = `dsh-bash.test=tls-${process.pid}`
  const open = new Set<tls.TLSSocket>()

  beforeAll(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-engine-tls-')))
    makeCertificates(dir, 'good')
    makeCertificates(dir, 'other')
    certs = certDir(dir, 'docker-certs', 'good')
    const socketPath = ENGINE_URL.slice('unix://'.length)
    server = tls.createServer(
      {
        key: readFileSync(join(dir, 'good-server-key.pem')),
        cert: readFileSync(join(dir, 'good-server.pem')),
        ca: readFileSync(join(dir, 'good-ca.pem')),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (client) => {
        open.add(client)
        client.on('close', () => open.delete(client))
        // No half-open connections: either side closing closes both (nothing here half-closes
        // before its end), so a connection the client leaks stays visible in `open`.
        const engine = net.connect({ path: socketPath })
        client.pipe(engine)
        engine.pipe(client)
        const close = () => {
          client.destroy()
          engine.destroy()
        }
        for (const side of [client, engine]) {
          side.on('error', close)
          side.on('close', close)
        }
      },
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as net.AddressInfo).port
  })
  afterAll(async () => {
    for (const socket of open) socket.destroy()
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
    rmSync(dir, { recursive: true, force: true })
  })

  it('reads the Docker CLI environment: DOCKER_TLS_VERIFY + DOCKER_CERT_PATH, DOCKER_TLS, neither', () => {
    expect(engineTlsFromEnv({})).toBeUndefined()
    expect(engineTlsFromEnv({ DOCKER_TLS_VERIFY: '0' })).toBeUndefined()
    const fromEnv = engineTlsFromEnv({ DOCKER_TLS_VERIFY: '1', DOCKER_CERT_PATH: certs })!
    expect(fromEnv.verify).toBe(true)
    expect(fromEnv.ca).toBe(readFileSync(join(certs, 'ca.pem'), 'utf8'))
    expect(fromEnv.cert).toContain('BEGIN CERTIFICATE')
    expect(fromEnv.key).toContain('PRIVATE KEY')
    expect(engineTlsFromEnv({ DOCKER_TLS: '1', DOCKER_CERT_PATH: certs })!.verify).toBe(false)
    const half = join(dir, 'half')
    execFileSync('mkdir', ['-p', half])
    writeFileSync(join(half, 'cert.pem'), 'x')
    expect(() => loadEngineTls(half, true)).toThrow(`cannot read the engine TLS file ${join(half, 'key.pem')}: missing (cert.pem and key.pem go together)`)
  })

  it('mutual TLS: the right CA and client certificate reach the engine; a wrong CA or no client certificate do not', async () => {
    const good = new EngineClient(`tcp://127.0.0.1:${port}`, loadEngineTls(certs, true))
    const wrongCa = new EngineClient(`tcp://127.0.0.1:${port}`, loadEngineTls(certDir(dir, 'wrong-ca', 'other'), true))
    const noCert = new EngineClient(`https://127.0.0.1:${port}`, { ca: readFileSync(join(certs, 'ca.pem'), 'utf8'), verify: true })
    const plain = new EngineClient(`tcp://127.0.0.1:${port}`)
    try {
      expect(await good.request('GET', '/_ping')).toBe('OK')
      await expect(wrongCa.request('GET', '/_ping')).rejects.toThrow(/^cannot reach the container engine at tcp:\/\/127\.0\.0\.1:\d+: .*certificate/)
      await expect(noCert.request('GET', '/_ping')).rejects.toThrow(/^cannot reach the container engine at https:\/\/127\.0\.0\.1:\d+/)
      await expect(plain.request('GET', '/_ping', undefined, 5_000)).rejects.toThrow(/^cannot reach the container engine|did not answer/)
    } finally {
      for (const c of [good, wrongCa, noCert, plain]) c.close()
    }
    // Closed clients leave no connection open at the engine's side.
    await vi.waitFor(() => expect(open.size).toBe(0), { timeout: 10_000 })
  })

  it('the executor over TLS: container create, the lifeline and agent streams (hijacked over TLS), release and disposal', async () => {
    const workspace = realpathSync(mkdtempSync(join(dir, 'ws-')))
    const instance = await loadExecutorPlugin(ContainerExecutor, {
      image: TEST_IMAGE,
      engine: `tcp://127.0.0.1:${port}`,
      tls: { certPath: certs },
      workspace,
      labels: { 'dsh-bash.test': `tls-${process.pid}` },
      sweep: false,
    })
    const bash = instance.executor
    try {
      const r = await bash.run(bash.resolve({ command: 'echo over-tls; echo err >&2; pwd; exit 4', owner: 'a' }))
      expect([r.stdout.text, r.stderr.text, r.exitCode]).toEqual(['over-tls\n/workspace\n', 'err\n', 4])
      const big = await bash.run(bash.resolve({ command: 'head -c 3000000 /dev/zero | tr "\\0" a | wc -c', owner: 'a' }))
      expect(big.stdout.text).toBe('3000000\n')
      expect(containersWithLabel(label)).toHaveLength(1)
      await bash.releaseOwner('a')
      expect(containersWithLabel(label)).toEqual([])
      await bash.run(bash.resolve({ command: 'true', owner: 'b' }))
    } finally {
      await instance.dispose()
    }
    await vi.waitFor(() => expect(containersWithLabel(label)).toEqual([]), { timeout: 20_000, interval: 100 })
    // Disposal closed every connection: keep-alive calls, the lifelines and the agents' streams.
    await vi.waitFor(() => expect(open.size).toBe(0), { timeout: 10_000 })
  })
})
