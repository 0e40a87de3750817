import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { describe, expect, it } from 'vitest'
import { CONTAINER_ERROR, ContainerExecutor, DEFAULT_ENGINE_URL, EngineClient, engineUrlFromEnv, parseEngineUrl, parseContainerConfig } from '../src/index.js'

describe('engine URLs (DOCKER_HOST conventions)', () => {
  it('parses unix sockets and tcp addresses', () => {
    expect(parseEngineUrl('unix:///var/run/docker.sock')).toEqual({ kind: 'unix', socketPath: '/var/run/docker.sock', url: 'unix:///var/run/docker.sock' })
    expect(parseEngineUrl('/run/podman/podman.sock')).toMatchObject({ kind: 'unix', socketPath: '/run/podman/podman.sock' })
    expect(parseEngineUrl('tcp://10.0.0.5:2375')).toMatchObject({ kind: 'tcp', host: '10.0.0.5', port: 2375 })
    expect(parseEngineUrl('tcp://docker-host')).toMatchObject({ kind: 'tcp', host: 'docker-host', port: 2375 })
    expect(parseEngineUrl('tcp://[::1]:2376')).toMatchObject({ kind: 'tcp', host: '::1', port: 2376 })
  })

  it('refuses what it cannot do, naming it', () => {
    expect(() => parseEngineUrl('npipe:////./pipe/docker_engine')).toThrow(
      'engine URL "npipe:////./pipe/docker_engine" is not supported: use unix:///path/to/socket, tcp://host:port (TLS by DOCKER_TLS_VERIFY/DOCKER_CERT_PATH or the tls setting), https://host:port or ssh://[user@]host[:port]',
    )
    expect(() => parseEngineUrl('fd://')).toThrow(/is not supported/)
    expect(() => parseEngineUrl('unix://relative.sock')).toThrow(
      'invalid engine URL "unix://relative.sock": expected unix:///path/to/socket, tcp://host:port, https://host:port or ssh://[user@]host[:port]',
    )
    expect(() => parseEngineUrl('tcp://host:99999')).toThrow(/invalid engine URL/)
    expect(() => parseEngineUrl('')).toThrow(/invalid engine URL/)
    expect(() => parseEngineUrl('docker.sock')).toThrow(/invalid engine URL/)
  })

  it('https:// is TLS (default port 2376); tcp:// is TLS only when given TLS settings', () => {
    expect(parseEngineUrl('https://host')).toEqual({ kind: 'tcp', host: 'host', port: 2376, url: 'https://host', tls: true })
    expect(new EngineClient('https://host:2376').tls).toEqual({ verify: true })
    expect(new EngineClient('tcp://host:2376').tls).toBeUndefined()
    expect(new EngineClient('tcp://host:2376', { verify: false }).tls).toEqual({ verify: false })
    expect(new EngineClient('unix:///var/run/docker.sock', { verify: true }).tls).toBeUndefined()
  })

  it('reads DOCKER_HOST (TLS settings are engineTlsFromEnv, tls.test.ts)', () => {
    expect(engineUrlFromEnv({})).toBe(DEFAULT_ENGINE_URL)
    expect(engineUrlFromEnv({ DOCKER_HOST: 'tcp://h:1' })).toBe('tcp://h:1')
    expect(engineUrlFromEnv({ DOCKER_HOST: 'tcp://h:2376', DOCKER_TLS_VERIFY: '1' })).toBe('tcp://h:2376')
  })

  it('an engine that is not there is a clear error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-engine-'))
    const client = new EngineClient(`unix://${dir}/none.sock`)
    try {
      await expect(client.request('GET', '/_ping')).rejects.toThrow(`cannot reach the container engine at unix://${dir}/none.sock: ENOENT`)
      await expect(client.request('GET', '/_ping')).rejects.toMatchObject({ code: CONTAINER_ERROR.engineUnreachable })
    } finally {
      client.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('container executor config', () => {
  it('has the documented defaults', () => {
    expect(parseContainerConfig({ image: 'x' })).toMatchObject({
      image: 'x',
      mountPath: '/workspace',
      network: 'none',
      memoryBytes: 2 * 1024 ** 3,
      pidsLimit: 1024,
      cpus: 2,
      shell: 'bash',
      sweep: true,
      idleTimeoutMs: 30 * 60_000,
      readOnlyWorkspace: false,
      timeoutMs: 120_000,
    })
  })

  it('names what is wrong', () => {
    expect(() => parseContainerConfig({})).toThrow('invalid container executor config: image must be a string')
    expect(() => parseContainerConfig({ image: '' })).toThrow('invalid container executor config: image must not be empty')
    expect(() => parseContainerConfig({ image: 'x', pidsLimit: -1 })).toThrow('invalid container executor config: pidsLimit must not be negative')
    expect(() => parseContainerConfig({ image: 'x', mountPath: 'work' })).toThrow('invalid container executor config: mountPath must be an absolute path')
    expect(() => parseContainerConfig({ image: 'x', env: { 'A-B': 'c' } })).toThrow('invalid container executor config: env: bad variable name "A-B"')
    expect(() => parseContainerConfig({ image: 'x', pull: true })).toThrow('invalid container executor config: unknown key(s) "pull"')
  })

  it('a missing workspace is refused at load', () => {
    expect(() => new ContainerExecutor(new Context(), { image: 'x', workspace: '/no/such/dir', sweep: false })).toThrow(
      'invalid container executor config: workspace "/no/such/dir" does not exist',
    )
    expect(() => new ContainerExecutor(new Context(), { image: 'x', workspace: '/no/such/dir', sweep: false })).toThrow(expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }))
  })

  it('its errors carry stable codes', () => {
    expect(() => parseEngineUrl('npipe:////./pipe/docker_engine')).toThrow(expect.objectContaining({ code: 'DSH_CONTAINER_ENGINE_URL' }))
    expect(() => parseEngineUrl('docker.sock')).toThrow(expect.objectContaining({ code: CONTAINER_ERROR.engineUrl }))
    expect(() => parseContainerConfig({ image: 'x', mountPath: 'work' })).toThrow(expect.objectContaining({ code: 'DSH_INVALID_CONFIG' }))
    expect(() => parseContainerConfig({ image: 'x', env: { 'A-B': 'c' } })).toThrow(expect.objectContaining({ code: CONTAINER_ERROR.invalidConfig }))
  })
})
