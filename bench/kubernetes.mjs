/**
 * 7. The Kubernetes executor (issue 18) against the contract test's fake API server
 * (packages/bash-kubernetes/test/fake-apiserver.ts): the real @kubernetes/client-node, pods that
 * are real containers of the local engine, pods/exec a real docker exec behind a WebSocket.
 *   firstCall  a fresh owner's first `true`: pod create + polls until running + the agent's exec
 *   overhead   `true` through KubernetesExecutor.run (warm pod) beside a bare local spawn of
 *              `bash --noprofile --norc -c true`, interleaved rounds
 * What a real cluster adds (scheduling, image pulls, the kubelet's streaming proxy, the network
 * between here and the API server) is not in these figures: they measure our side.
 *
 *   node bench/kubernetes.mjs [--quick]      (or through bench/run.mjs --only kubernetes)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ENGINE, engineUnavailable, IMAGE, measureFirstCalls, measureTrueOverhead } from './lib/agent-executor.mjs'
import { median, round } from './lib/stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const FAKE = resolve(here, '../packages/bash-kubernetes/test/fake-apiserver.ts')

/**
 * The fake API server is TypeScript (a test file): strip its types with rolldown's transformer
 * (vitest's own toolchain, present wherever the tests run) into a temporary module whose bare
 * imports point at this checkout's packages.
 */
async function importFake(dir) {
  const require = createRequire(import.meta.url)
  let transformSync
  try {
    ;({ transformSync } = require('rolldown/experimental'))
  } catch (error) {
    return { why: `not measured: no TypeScript transformer for the fake API server (${error.message.split('\n')[0]})` }
  }
  const out = transformSync(FAKE, readFileSync(FAKE, 'utf8'), { lang: 'ts' })
  if (out.errors?.length) throw new Error(`transforming the fake API server: ${out.errors[0].message}`)
  // This checkout's node_modules serve the bench and the test alike (one workspace).
  const code = out.code.replace(/from (["'])([^"'./][^"']*)\1/g, (_, q, spec) => (spec.startsWith('node:') ? `from ${q}${spec}${q}` : `from ${q}${import.meta.resolve(spec)}${q}`))
  const file = join(dir, 'fake-apiserver.mjs')
  writeFileSync(file, code)
  return { module: await import(pathToFileURL(file).href) }
}

export async function run({ quick = false, log = () => {} } = {}) {
  const why = engineUnavailable()
  if (why) return { notMeasured: why }
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-k8s-'))
  const imported = await importFake(dir)
  if (imported.why) return { notMeasured: imported.why }
  const { loadExecutorPlugin } = await import('@deepseek-ai/dsh-bash/conformance')
  const { KubernetesExecutor } = await import('@deepseek-ai/dsh-bash-kubernetes')
  const fake = await imported.module.startFakeApiServer({ engineUrl: ENGINE })
  const instance = await loadExecutorPlugin(KubernetesExecutor, { kubeconfig: fake.kubeconfigPath, image: IMAGE })
  const bash = instance.executor
  const result = {}
  try {
    const first = await measureFirstCalls(bash, { quick, log, name: 'kubernetes' })
    result.firstCall = first.firstCall
    const { samples, overhead } = await measureTrueOverhead(bash, { quick, log, name: 'kubernetes' })
    result.overhead = overhead
    result.firstCallVsBare = round(median(first.firstCallMs) / median(samples.bare), 1)
  } finally {
    await instance.dispose()
    await fake.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return result
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick')
  const result = await run({ quick, log: (line) => console.error(`[bench] ${line}`) })
  console.log(JSON.stringify(result, null, 2))
}
