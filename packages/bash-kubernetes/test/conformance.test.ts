import { defineBashExecutorConformance, loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, describe, expect, vi } from 'vitest'
import { KubernetesExecutor } from '../src/index.js'
import { type FakeApiServer, FAKE_LABEL, startFakeApiServer } from './fake-apiserver.js'
import { countInPods, REAL, REAL_IMAGE, REAL_NAMESPACE } from './real-cluster.js'
import { containersWithLabel, ENGINE_URL, processesWith, TEST_IMAGE, unavailableReason } from './docker.js'

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-kubernetes] skipping the conformance suite against the fake API server: ${skip}`)

// The contract test of issue #18: the real @kubernetes/client-node against a fake API server whose
// pods are real containers and whose pods/exec is a real docker exec (see fake-apiserver.ts).
describe.skipIf(skip !== undefined)('kubernetes executor against the fake API server (pods backed by docker)', () => {
  let fake: Promise<FakeApiServer> | undefined
  const server = () => (fake ??= startFakeApiServer({ engineUrl: ENGINE_URL }))
  afterAll(async () => {
    if (!fake) return
    const f = await fake
    // Every executor was disposed: none of its pods is left, on the API nor on the engine.
    expect([...f.pods.keys()]).toEqual([])
    await vi.waitFor(() => expect(containersWithLabel(`${FAKE_LABEL}=${f.id}`)).toEqual([]), { timeout: 20_000, interval: 100 })
    await f.close()
  })

  defineBashExecutorConformance('kubernetes executor', {
    create: async (config) => loadExecutorPlugin(KubernetesExecutor, { kubeconfig: (await server()).kubeconfigPath, image: TEST_IMAGE, ...config }),
    // The pods' processes are containers of this machine's engine: visible from the host's /proc.
    countProcesses: async (marker) => processesWith(marker).length,
    workdir: '/workspace',
    graceMs: 300,
  })
})

// Opt-in: the same suite against a real cluster (see real-cluster.ts for the variables). Not defined
// otherwise (no cluster can run here), so a run without it shows no skipped tests, only this line.
if (REAL && !REAL_IMAGE) console.warn('[dsh-bash-kubernetes] DSH_KUBERNETES_TEST=real needs DSH_KUBERNETES_TEST_IMAGE: the real-cluster suite is not defined')
else if (!REAL) console.warn('[dsh-bash-kubernetes] the real-cluster suite is opt-in (DSH_KUBERNETES_TEST=real with KUBECONFIG): not defined in this run')
if (REAL && REAL_IMAGE) {
  describe('kubernetes executor against a real cluster (KUBECONFIG)', () => {
    defineBashExecutorConformance('kubernetes executor (real cluster)', {
      create: (config) => loadExecutorPlugin(KubernetesExecutor, { image: REAL_IMAGE, ...(REAL_NAMESPACE ? { namespace: REAL_NAMESPACE } : {}), ...config }),
      countProcesses: countInPods,
      workdir: '/workspace',
      graceMs: 300,
      // Spill files are on this machine either way.
    })
  })
}
