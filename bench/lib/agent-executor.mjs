/**
 * What the benches of the in-container agent's executors share (bench/container.mjs,
 * bench/kubernetes.mjs): the engine probe, the first call of fresh sessions, and `true` through
 * the executor interleaved with a bare local spawn.
 */
import { spawnSync } from 'node:child_process'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bareSpawn } from './app.mjs'
import { median, p90, rotate, round, summary } from './stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
/** The offline test image (packages/bash-container/test/build-image.sh). */
export const IMAGE = process.env.DSH_CONTAINER_TEST_IMAGE ?? 'dsh-bash-test:bare'
export const ENGINE = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'

/** `not measured: <why>` when no engine answers or the test image cannot be built; else undefined. */
export function engineUnavailable() {
  const version = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 20_000 })
  if (version.error) return `not measured: no docker client (${version.error.code})`
  if (version.status !== 0) return `not measured: no container engine answers at ${ENGINE}`
  const build = spawnSync('bash', [resolve(here, '../../packages/bash-container/test/build-image.sh'), IMAGE], { encoding: 'utf8', timeout: 300_000 })
  if (build.status !== 0) return `not measured: cannot build ${IMAGE}: ${(build.stderr || build.stdout).trim().split('\n').pop()}`
  return undefined
}

/** A fresh owner's first `true` (session creation included), n times; each session released after. */
export async function measureFirstCalls(bash, { quick = false, log = () => {}, name }) {
  const firstCallMs = []
  for (let i = 0; i < (quick ? 3 : 6); i++) {
    const t = performance.now()
    const r = await bash.run(bash.resolve({ command: 'true', owner: `first-${i}` }))
    firstCallMs.push(performance.now() - t)
    if (r.exitCode !== 0) throw new Error(`first call: exit ${r.exitCode}`)
    await bash.releaseOwner(`first-${i}`)
  }
  log(`${name} first call: median ${round(median(firstCallMs), 1)} ms`)
  return { firstCallMs, firstCall: { ...summary(firstCallMs), samples: firstCallMs.map((x) => round(x, 1)) } }
}

/**
 * `true` through the executor (owner `warm`, its session already made) beside a bare local spawn of
 * `bash --noprofile --norc -c true`, in interleaved rounds (order rotated); `extra` variants are
 * measured every 5th round only (slow diagnostics). Returns the samples and the `overhead` record.
 */
export async function measureTrueOverhead(bash, { quick = false, log = () => {}, name, extra = [] }) {
  await bash.run(bash.resolve({ command: 'true', owner: 'warm' }))
  const variants = [
    { name: 'bare', fn: async () => { const r = await bareSpawn('true'); if (r.code !== 0) throw new Error('bare failed') } },
    { name, fn: async () => { const r = await bash.run(bash.resolve({ command: 'true', owner: 'warm' })); if (r.exitCode !== 0 || r.stdout.text !== '') throw new Error(`${name}: unexpected result`) } },
  ]
  const rounds = quick ? 40 : 300
  const samples = Object.fromEntries([...variants, ...extra].map((v) => [v.name, []]))
  for (let i = 0; i < 10; i++) for (const v of variants) await v.fn()
  for (let i = 0; i < rounds; i++) {
    const these = i % 5 === 0 ? [...variants, ...extra] : variants
    for (const v of rotate(these, i)) {
      const t = performance.now()
      await v.fn()
      samples[v.name].push(performance.now() - t)
    }
  }
  const paired = samples[name].map((c, i) => c / samples.bare[i])
  const overhead = {
    rounds,
    stats: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summary(v)])),
    ratio: { ofMedians: round(median(samples[name]) / median(samples.bare), 2), pairedMedian: round(median(paired), 2), pairedP90: round(p90(paired), 2) },
  }
  log(`${name} true: ${round(median(samples[name]), 1)} ms vs bare ${round(median(samples.bare), 1)} ms (×${overhead.ratio.ofMedians})`)
  return { samples, overhead }
}
