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
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { bareSpawn } from './lib/app.mjs'
import { median, p90, rotate, round, summary } from './lib/stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const IMAGE = process.env.DSH_CONTAINER_TEST_IMAGE ?? 'dsh-bash-test:offline'
const ENGINE = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'
const FAKE = resolve(here, '../packages/bash-kubernetes/test/fake-apiserver.ts')

function unavailable() {
  const version = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 20_000 })
  if (version.error) return `not measured: no docker client (${version.error.code})`
  if (version.status !== 0) return `not measured: no container engine answers at ${ENGINE}`
  const build = spawnSync('bash', [resolve(here, '../packages/bash-container/test/build-image.sh'), IMAGE], { encoding: 'utf8', timeout: 300_000 })
  if (build.status !== 0) return `not measured: cannot build ${IMAGE}: ${(build.stderr || build.stdout).trim().split('\n').pop()}`
  return undefined
}

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
  const why = unavailable()
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
    const firstCallMs = []
    for (let i = 0; i < (quick ? 3 : 6); i++) {
      const t = performance.now()
      const r = await bash.run(bash.resolve({ command: 'true', owner: `first-${i}` }))
      firstCallMs.push(performance.now() - t)
      if (r.exitCode !== 0) throw new Error(`first call: exit ${r.exitCode}`)
      await bash.releaseOwner(`first-${i}`)
    }
    result.firstCall = { ...summary(firstCallMs), samples: firstCallMs.map((x) => round(x, 1)) }
    log(`kubernetes first call: median ${round(median(firstCallMs), 1)} ms`)

    await bash.run(bash.resolve({ command: 'true', owner: 'warm' }))
    const variants = [
      { name: 'bare', fn: async () => { const r = await bareSpawn('true'); if (r.code !== 0) throw new Error('bare failed') } },
      { name: 'kubernetes', fn: async () => { const r = await bash.run(bash.resolve({ command: 'true', owner: 'warm' })); if (r.exitCode !== 0 || r.stdout.text !== '') throw new Error('kubernetes: unexpected result') } },
    ]
    const rounds = quick ? 40 : 300
    const samples = { bare: [], kubernetes: [] }
    for (let i = 0; i < 10; i++) for (const v of variants) await v.fn()
    for (let i = 0; i < rounds; i++) {
      for (const v of rotate(variants, i)) {
        const t = performance.now()
        await v.fn()
        samples[v.name].push(performance.now() - t)
      }
    }
    const paired = samples.kubernetes.map((c, i) => c / samples.bare[i])
    result.overhead = {
      rounds,
      stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summary(v)])),
      ratio: { ofMedians: round(median(samples.kubernetes) / median(samples.bare), 2), pairedMedian: round(median(paired), 2), pairedP90: round(p90(paired), 2) },
    }
    result.firstCallVsBare = round(median(firstCallMs) / median(samples.bare), 1)
    log(`kubernetes true: ${round(median(samples.kubernetes), 1)} ms vs bare ${round(median(samples.bare), 1)} ms (×${result.overhead.ratio.ofMedians})`)
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
