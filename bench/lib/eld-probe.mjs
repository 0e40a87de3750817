/**
 * Preloaded into a server process under test (`node --import bench/lib/eld-probe.mjs …`): measures
 * the process's own event-loop delay and RSS without any change to the server's code, and writes
 * them as JSON to $DSH_BENCH_PROBE_FILE on SIGUSR2 (then resets, so each phase is measured apart);
 * with $DSH_BENCH_CPU_PROFILE, a CPU profile of each phase as well.
 */
import { writeFileSync } from 'node:fs'
import { PerformanceObserver, constants, monitorEventLoopDelay } from 'node:perf_hooks'
import { Session } from 'node:inspector'

const file = process.env.DSH_BENCH_PROBE_FILE
if (file) {
  // 1 ms resolution: the targets are p99 ≤ 20 ms, so a coarser clock would hide what they judge.
  const histogram = monitorEventLoopDelay({ resolution: 1 })
  histogram.enable()
  let peakRss = 0
  let cpuAt = process.cpuUsage()
  let wallAt = performance.now()
  // Every 500 ms, not 50: under the 50-session load one rss() read took ~1.6 ms of the server's loop
  // (2.9 s of a 91 s CPU profile, 2026-12-03), measured load the probe itself added.
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss())
  }, 500)
  sampler.unref()
  // Garbage-collection pauses by kind (a major GC of a big heap is one long block of the loop).
  const GC_KINDS = { [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major', [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor', [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental', [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb' }
  let gc = {}
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = GC_KINDS[entry.detail?.kind] ?? 'other'
      const k = (gc[kind] ??= { count: 0, totalMs: 0, maxMs: 0, over10ms: 0 })
      k.count++
      k.totalMs += entry.duration
      k.maxMs = Math.max(k.maxMs, entry.duration)
      if (entry.duration > 10) k.over10ms++
    }
  }).observe({ entryTypes: ['gc'] })
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
        gc,
        // CPU seconds of this process (all its threads: main, GC helpers, libuv pool) over the phase's wall seconds.
        cpuSeconds: (() => { const d = process.cpuUsage(cpuAt); return (d.user + d.system) / 1e6 })(),
        cpuSystemSeconds: process.cpuUsage(cpuAt).system / 1e6,
        wallSeconds: (performance.now() - wallAt) / 1000,
      }),
    )
    histogram.reset()
    peakRss = 0
    gc = {}
    cpuAt = process.cpuUsage()
    wallAt = performance.now()
  })
}
