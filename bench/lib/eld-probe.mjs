/**
 * Preloaded into a server process under test (`node --import bench/lib/eld-probe.mjs …`): measures
 * the process's own event-loop delay and RSS without any change to the server's code, and writes
 * them as JSON to $DSH_BENCH_PROBE_FILE on SIGUSR2 (then resets, so each phase is measured apart);
 * with $DSH_BENCH_CPU_PROFILE, a CPU profile of each phase as well.
 */
import { writeFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Session } from 'node:inspector'

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
  // DSH_BENCH_CPU_PROFILE=<prefix>: a CPU profile of each phase too, written as <prefix>.<n>.cpuprofile
  // at each SIGUSR2 (the in-process inspector: the server needs no flag and no clean exit).
  const profilePrefix = process.env.DSH_BENCH_CPU_PROFILE
  let phase = 0
  let session
  if (profilePrefix) {
    session = new Session()
    session.connect()
    session.post('Profiler.enable', () => session.post('Profiler.start'))
  }
  process.on('SIGUSR2', () => {
    if (session) {
      const n = phase++
      session.post('Profiler.stop', (error, result) => {
        if (!error) writeFileSync(`${profilePrefix}.${n}.cpuprofile`, JSON.stringify(result.profile))
        session.post('Profiler.start')
      })
    }
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
