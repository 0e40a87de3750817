import { describe, expect, it } from 'vitest'
import { buildPod, TMP_VOLUME } from '../src/pod.js'

// The pod's limits (issue 27, item 3), without a cluster: resources and a sized in-memory /tmp.
describe('the session pod\'s limits', () => {
  const settings = {
    name: 'p',
    namespace: 'default',
    image: 'debian:12',
    limits: { memory: '536870912', cpu: '1.5' },
    env: {},
    labels: {},
    annotations: {},
    mountPath: '/workspace',
    lifeline: { firstSeconds: 60, goneSeconds: 10 },
  }

  it('resources from the limits (requests default to them); tmpBytes: an in-memory emptyDir of that size at /tmp', () => {
    const { pod } = buildPod(undefined, { ...settings, tmpBytes: 64 * 2 ** 20 })
    const container = pod.spec!.containers[0]
    expect(container.resources).toEqual({ limits: { memory: '536870912', cpu: '1.5' }, requests: { memory: '536870912', cpu: '1.5' } })
    expect(container.volumeMounts).toContainEqual({ name: TMP_VOLUME, mountPath: '/tmp' })
    expect(pod.spec!.volumes).toContainEqual({ name: TMP_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: '67108864' } })
  })

  it('no tmpBytes, or a template that mounts /tmp itself: no /tmp volume of ours', () => {
    expect(buildPod(undefined, settings).pod.spec!.volumes?.some((v) => v.name === TMP_VOLUME)).toBe(false)
    const template = { spec: { containers: [{ name: 'bash', volumeMounts: [{ name: 'mine', mountPath: '/tmp' }] }], volumes: [{ name: 'mine', emptyDir: {} }] } }
    const { pod } = buildPod(template, { ...settings, tmpBytes: 2 ** 20 })
    expect(pod.spec!.volumes?.some((v) => v.name === TMP_VOLUME)).toBe(false)
  })
})
