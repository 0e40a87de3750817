#!/usr/bin/env node
/**
 * Issue 16, the launcher: who forks a command — the server's event loop (`launcher: 'spawn'`,
 * Node's synchronous fork) or the local executor's launcher helper process (`launcher: 'helper'`).
 *
 * Two measures, each at two server sizes (no ballast, and a ballast of touched heap that makes the
 * server "big": a fork copies the page tables of the whole process):
 *  - burst: 200 foreground `true` started at once through `ctx.bash.run`; the server's event-loop
 *    delay (a 1 ms timer chain: how late each firing is) p99 and max while they start and finish, and the
 *    wall time of the burst;
 *  - round trip: one `true` after another, the executor with each launcher and a bare
 *    `child_process.spawn` of bash, interleaved rounds (rotated order); medians.
 *
 *   node bench/launcher.mjs [--quick] [--ballast MB]
 */
import { parseArgs } from 'node:util'
import { pathToFileURL } from 'node:url'
import { createApp, bareSpawn } from './lib/app.mjs'
import { median, quantile, round } from './lib/stats.mjs'

/** `helper` is the default: the native helper where it ships (see `executor.launcher`); `helper-node` the Node one. */
const VARIANTS = ['spawn', 'helper', 'helper-node']

/** Touched memory that stays reachable: the server's heap as a fork sees it. */
function makeBallast(mib) {
  const chunks = []
  for (let i = 0; i < mib; i++) chunks.push(Buffer.alloc(1024 * 1024, i & 0xff))
  return chunks
}

/**
 * Event-loop delay by a 1 ms timer chain: each sample is how late the timer fired. (monitorEventLoopDelay
 * came back empty during a burst of in-loop spawns here: its samples are taken between loop turns.)
 */
function delaySampler() {
  const samples = []
  let stopped = false
  let expected = performance.now() + 1
  const tick = () => {
    if (stopped) return
    const now = performance.now()
    samples.push(Math.max(0, now - expected))
    expected = now + 1
    setTimeout(tick, 1)
  }
  setTimeout(tick, 1)
  return () => {
    stopped = true
    return samples
  }
}

async function burst(bash, n) {
  const stop = delaySampler()
  const t0 = performance.now()
  const results = await Promise.all(Array.from({ length: n }, () => bash.run(bash.resolve({ command: 'true' }))))
  const wallMs = performance.now() - t0
  const samples = stop()
  const bad = results.filter((r) => r.exitCode !== 0).length
  return { wallMs: round(wallMs, 1), eldP99Ms: round(quantile(samples, 0.99), 1), eldMaxMs: round(Math.max(0, ...samples), 1), bad }
}

async function measure({ ballastMiB, quick, log }) {
  const ballast = makeBallast(ballastMiB)
  const apps = {}
  for (const launcher of VARIANTS) apps[launcher] = await createApp({ config: { launcher, outputPipes: 'fifo' } })
  try {
    // Warm-up: the helper starts, the pipe pools fill.
    for (const launcher of VARIANTS) for (let i = 0; i < 5; i++) await apps[launcher].bash.run(apps[launcher].bash.resolve({ command: 'true' }))
    const bursts = Object.fromEntries(VARIANTS.map((v) => [v, []]))
    const reps = quick ? 2 : 4
    const size = 200
    for (let r = 0; r < reps; r++) {
      for (const launcher of r % 2 ? [...VARIANTS].reverse() : VARIANTS) {
        bursts[launcher].push(await burst(apps[launcher].bash, size))
        await new Promise((resolve) => setTimeout(resolve, 300))
      }
    }
    const rounds = quick ? 60 : 200
    const trip = Object.fromEntries(['bare', ...VARIANTS].map((v) => [v, []]))
    const names = ['bare', ...VARIANTS]
    for (let r = 0; r < rounds; r++) {
      // Rotated, and reversed every other round: a rotation alone keeps each variant right after the
      // same one (its predecessor's child exits and clean-up overlap it, round after round).
      const rotated = names.map((_, k) => names[(Math.floor(r / 2) + k) % names.length])
      for (const name of r % 2 ? rotated.reverse() : rotated) {
        const t0 = performance.now()
        if (name === 'bare') await bareSpawn('true')
        else await apps[name].bash.run(apps[name].bash.resolve({ command: 'true' }))
        trip[name].push(performance.now() - t0)
      }
    }
    const serverRssMiB = Math.round(process.memoryUsage().rss / 1024 / 1024)
    const sum = (list, key) => ({ median: round(median(list.map((b) => b[key])), 1), max: round(Math.max(...list.map((b) => b[key])), 1) })
    const launcherOf = (app) => (app.bash[Symbol.for('cordis.original')] ?? app.bash).launcher
    const out = { ballastMiB, serverRssMiB, burstSize: size, launchers: Object.fromEntries(VARIANTS.map((v) => [v, launcherOf(apps[v])])), burst: {}, roundTripMs: {} }
    for (const launcher of VARIANTS) {
      out.burst[launcher] = {
        eldP99Ms: sum(bursts[launcher], 'eldP99Ms'),
        eldMaxMs: sum(bursts[launcher], 'eldMaxMs'),
        wallMs: sum(bursts[launcher], 'wallMs'),
        failed: bursts[launcher].reduce((a, b) => a + b.bad, 0),
        raw: bursts[launcher],
      }
    }
    for (const name of names) out.roundTripMs[name] = { median: round(median(trip[name]), 2), p90: round(quantile(trip[name], 0.9), 2) }
    out.roundTripRatio = Object.fromEntries(VARIANTS.map((v) => [`${v}VsBare`, round(out.roundTripMs[v].median / out.roundTripMs.bare.median, 3)]))
    out.burstWallRatioHelperVsSpawn = round(out.burst.helper.wallMs.median / out.burst.spawn.wallMs.median, 3)
    log(`launcher (ballast ${ballastMiB} MiB, RSS ${serverRssMiB} MiB): ELD p99 ${VARIANTS.map((v) => `${v} ${out.burst[v].eldP99Ms.median}`).join(' / ')} ms; true bare ${out.roundTripMs.bare.median} / ${VARIANTS.map((v) => `${v} ${out.roundTripMs[v].median}`).join(' / ')} ms`)
    return out
  } finally {
    for (const app of Object.values(apps)) await app.dispose()
    ballast.length = 0
  }
}

export async function run({ quick = false, log = () => {}, ballastMiB = 1024 } = {}) {
  const sizes = [0, ballastMiB]
  const results = []
  for (const size of sizes) results.push(await measure({ ballastMiB: size, quick, log }))
  return { results }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  // DSH_BENCH_NICE=<n>: this process's autogroup nice, as `dsh-bash mcp --nice` sets the server's
  // (run it in a session of its own, `setsid node bench/launcher.mjs`: the autogroup is the session's).
  if (process.env.DSH_BENCH_NICE !== undefined) (await import('node:fs')).writeFileSync('/proc/self/autogroup', process.env.DSH_BENCH_NICE)
  const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, ballast: { type: 'string', default: '1024' } } })
  const out = await run({ quick: values.quick, ballastMiB: Number(values.ballast), log: (line) => console.error(`[bench] ${line}`) })
  console.log(JSON.stringify(out, (key, value) => (key === 'raw' ? undefined : value), 2))
}
