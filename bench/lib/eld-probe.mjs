/**
 * Preloaded into a server process under test (`node --import bench/lib/eld-probe.mjs …`): measures
 * the process's own event-loop delay and RSS without any change to the server's code, and writes
 * them as JSON to $DSH_BENCH_PROBE_FILE on SIGUSR2 (then resets, so each phase is measured apart).
 */
import { writeFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'

const file = process.env.DSH_BENCH_PROBE_FILE
if (file) {
  // 1 ms resolution: the targets are p99 ≤ 20 ms, so a coarser clock would hide what they judge.
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  let peakRss = 0
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss())
  }, 50)
  sampler.unref()
  process.on('SIGUSR2', () => {
    const ms = (ns) => ns / 1e6
    writeFileSync(
      file,
      JSON.stringify({
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        count: histogram.count,
        rss: process.memoryUsage.rss(),
        peakRss,
      }),
    )
    histogram.reset()
    peakRss = 0
  })
}
