import { defineBashExecutorConformance } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, beforeAll, describe, expect, vi } from 'vitest'
import { sshFactory } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason, userProcesses } from './sshd.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the SSH conformance suite: ${skip}`)

describe.skipIf(skip !== undefined)('ssh executor against a real sshd', () => {
  let keys: TestKeys
  let sshd: SshdInstance
  if (!skip) {
    // A user of its own: the other test file runs at the same time and checks for its user's processes.
    keys = makeKeys('dshtest2')
    beforeAll(async () => {
      sshd = await startSshd(keys, 'conformance')
    })
    afterAll(async () => {
      try {
        // No process of the test user survives the suite, not even sshd's per-connection processes:
        // every executor was disposed and closed its connections.
        await vi.waitFor(() => expect(userProcesses(keys.user)).toEqual([]), { timeout: 20_000, interval: 100 })
      } finally {
        // Also when that check fails: a failed run must not leave its server listening.
        await sshd?.stop()
        keys.remove()
      }
    })
  }

  defineBashExecutorConformance('ssh executor', {
    create: (config) => sshFactory(keys, () => [sshd])(config),
    // The "remote" machine is this one: count the test user's processes carrying the marker.
    countProcesses: async (marker) => userProcesses(keys.user, marker).length,
    workdir: keys! && keys.workdir,
    graceMs: 300,
  })
})
