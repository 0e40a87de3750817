import { PassThrough } from 'node:stream'
import { CoreV1Api, Exec, KubeConfig } from '@kubernetes/client-node'
import { ANNOTATION_SERVER, LABEL_EXECUTOR } from '../src/index.js'

/**
 * The opt-in real cluster: `DSH_KUBERNETES_TEST=real` with `KUBECONFIG` (or ~/.kube/config) naming
 * it and `DSH_KUBERNETES_TEST_IMAGE` an image its nodes can run (bash and coreutils).
 * `DSH_KUBERNETES_TEST_NAMESPACE` picks the namespace (default the context's).
 */
export const REAL = process.env.DSH_KUBERNETES_TEST === 'real'
export const REAL_IMAGE = process.env.DSH_KUBERNETES_TEST_IMAGE
export const REAL_NAMESPACE = process.env.DSH_KUBERNETES_TEST_NAMESPACE

/**
 * Live processes whose command line holds `marker`, summed over this server's session pods (a real
 * cluster's processes are not in this machine's /proc): one exec per pod running a bash counter.
 */
export async function countInPods(marker: string): Promise<number> {
  const kc = new KubeConfig()
  kc.loadFromDefault()
  const namespace = REAL_NAMESPACE ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default'
  const api = kc.makeApiClient(CoreV1Api)
  const pods = await api.listNamespacedPod({ namespace, labelSelector: `${LABEL_EXECUTOR}=kubernetes` })
  // No process is started per entry (mapfile, read): only the counter itself carries the marker.
  const counter =
    'n=0; for p in /proc/[0-9]*; do [ "$p" = "/proc/$$" ] && continue; { read -r st <"$p/stat"; } 2>/dev/null || continue; ' +
    'case ${st##*) } in [ZX]*) continue ;; esac; { mapfile -d "" -t a <"$p/cmdline"; } 2>/dev/null || continue; ' +
    'case "${a[*]}" in *"$1"*) n=$((n + 1)) ;; esac; done; echo "$n"'
  let total = 0
  for (const pod of pods.items) {
    if (!pod.metadata?.annotations?.[ANNOTATION_SERVER]?.includes(`/${process.pid}/`) || pod.status?.phase !== 'Running') continue
    const out = new PassThrough()
    let text = ''
    out.on('data', (chunk: Buffer) => (text += chunk.toString()))
    await new Promise<void>((resolve) => {
      void new Exec(kc)
        .exec(namespace, pod.metadata!.name!, pod.spec!.containers[0].name, ['bash', '--noprofile', '--norc', '-c', counter, 'count', marker], out, new PassThrough().resume(), null, false, () => resolve())
        .catch(() => resolve())
    })
    total += Number.parseInt(text, 10) || 0
  }
  return total
}
