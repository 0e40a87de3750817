import type { CoreV1Api, NetworkingV1Api } from '@kubernetes/client-node'
import { isDeadServer } from '@deepseek-ai/dsh-bash-container'
import { ANNOTATION_SERVER, LABEL_EXECUTOR } from './pod.js'
import { apiStatus } from './session.js'

/** The NetworkPolicy the executor creates (once per namespace) when `networkPolicy` is on. */
export const NETWORK_POLICY_NAME = 'dsh-bash-deny-all'

/**
 * Deletes this executor's pods in a namespace that a dsh-bash server of this host created and
 * that server is gone (Kubernetes has no lifeline: after a crash they stay until this runs).
 * Pods of live servers and of other hosts are left alone. Returns the names deleted.
 */
export async function sweepDeadPods(api: CoreV1Api, namespace: string): Promise<string[]> {
  const list = await api.listNamespacedPod({ namespace, labelSelector: `${LABEL_EXECUTOR}=kubernetes` })
  const removed: string[] = []
  for (const pod of list.items ?? []) {
    const name = pod.metadata?.name
    if (!name || !isDeadServer(pod.metadata?.annotations?.[ANNOTATION_SERVER] ?? '')) continue
    try {
      await api.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })
      removed.push(name)
    } catch {
      // Gone already.
    }
  }
  return removed
}

/**
 * Ensures a NetworkPolicy selecting the executor's pods with no ingress and no egress rule (all
 * traffic denied where the network plugin enforces policies). An existing one is left as it is.
 */
export async function ensureDenyAllPolicy(api: NetworkingV1Api, namespace: string): Promise<void> {
  try {
    await api.createNamespacedNetworkPolicy({
      namespace,
      body: {
        apiVersion: 'networking.k8s.io/v1',
        kind: 'NetworkPolicy',
        metadata: { name: NETWORK_POLICY_NAME, namespace, labels: { [LABEL_EXECUTOR]: 'kubernetes' } },
        spec: { podSelector: { matchLabels: { [LABEL_EXECUTOR]: 'kubernetes' } }, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] },
      },
    })
  } catch (error) {
    if (apiStatus(error) !== 409) throw error
  }
}
