import { describe, expect, it } from 'vitest'
import { hostConfigOf } from '../src/session.js'

// The engine's HostConfig carries the limits: checked without an engine here;
// container.test.ts checks them on a real one.
describe('the HostConfig of a session container', () => {
  const spec = {
    image: 'x',
    network: 'none',
    memoryBytes: 512 * 2 ** 20,
    pidsLimit: 256,
    cpus: 1.5,
    tmpBytes: 64 * 2 ** 20,
    env: {},
    labels: {},
    shell: 'bash',
    secretPatterns: [],
    startTimeoutMs: 1000,
  }

  it('memory without swap beyond it, processes, CPUs, a sized /tmp tmpfs', () => {
    expect(hostConfigOf(spec)).toEqual({
      AutoRemove: true,
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Init: false,
      Memory: 512 * 2 ** 20,
      MemorySwap: 512 * 2 ** 20,
      PidsLimit: 256,
      NanoCpus: 1.5e9,
      Tmpfs: { '/tmp': 'rw,nosuid,nodev,mode=1777,size=67108864' },
    })
  })

  it('0 is no limit: the engine defaults, the image\'s /tmp', () => {
    const config = hostConfigOf({ ...spec, memoryBytes: 0, pidsLimit: 0, cpus: 0, tmpBytes: 0 })
    for (const key of ['Memory', 'MemorySwap', 'PidsLimit', 'NanoCpus', 'Tmpfs']) expect(config).not.toHaveProperty(key)
  })
})
