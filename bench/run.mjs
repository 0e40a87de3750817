#!/usr/bin/env node
/**
 * dsh-bash benchmarks (issue 6). `npm run bench` builds and runs them all; see bench/README.md.
 *
 *   node bench/run.mjs [--quick] [--only NAME[,NAME…]] [--json PATH]
 *
 * NAME: overhead, big, kill, concurrency, notice, load, launcher, policy, container, kubernetes. Prints a table and writes JSON to
 * bench/results/latest.json (or PATH).
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, totalmem } from 'node:os'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { fmtBytes, fmtMs, MiB, round } from './lib/stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const BENCHES = ['overhead', 'big', 'kill', 'concurrency', 'notice', 'load', 'launcher', 'policy', 'container', 'kubernetes']

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', multiple: true },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})
if (values.help) {
  console.log(`usage: node bench/run.mjs [--quick] [--only ${BENCHES.join('|')}[,…]] [--json PATH]`)
  process.exit(0)
}
const only = (values.only ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean)
for (const name of only) {
  if (!BENCHES.includes(name)) {
    console.error(`unknown benchmark ${JSON.stringify(name)}; expected one of ${BENCHES.join(', ')}`)
    process.exit(2)
  }
}
// Ctrl-C or a kill: exit through 'exit' handlers, which stop the bench's own sshd.
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130))
const selected = only.length ? BENCHES.filter((b) => only.includes(b)) : BENCHES
const quick = values.quick
const log = (line) => console.error(`[bench] ${line}`)

function gitHead() {
  try {
    const head = execFileSync('git', ['-C', here, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['-C', here, 'status', '--porcelain', '--', 'packages'], { encoding: 'utf8' }).trim()
    return dirty ? `${head} (+ uncommitted changes in packages/)` : head
  } catch {
    return 'unknown'
  }
}

/** bench/policy.mjs belongs to the policy engineer: run as its own process, its JSON kept as is. */
async function runPolicy() {
  const script = resolve(here, 'policy.mjs')
  if (!existsSync(script)) return { notMeasured: 'not measured: bench/policy.mjs is missing' }
  const result = spawnSync(process.execPath, [script, quick ? '300' : '2000'], { encoding: 'utf8', timeout: 300_000 })
  if (result.status !== 0) return { notMeasured: `not measured: bench/policy.mjs failed: ${(result.stderr || result.error?.message || '').trim().split('\n').pop()}` }
  try {
    return JSON.parse(result.stdout)
  } catch {
    return { notMeasured: 'not measured: bench/policy.mjs printed no JSON' }
  }
}

const results = {
  date: new Date().toISOString(),
  quick,
  machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, memoryMiB: Math.round(totalmem() / MiB), loadavgAtStart: loadavg().map((x) => round(x, 2)) },
  commit: gitHead(),
  benchmarks: {},
}
const t0 = performance.now()
for (const name of selected) {
  const started = performance.now()
  try {
    if (name === 'policy') results.benchmarks.policy = await runPolicy()
    else {
      const file = { big: 'big-output' }[name] ?? name
      const mod = await import(`./${file}.mjs`)
      results.benchmarks[name] = await mod.run({ quick, log })
    }
  } catch (error) {
    results.benchmarks[name] = { error: error.stack ?? String(error) }
    log(`${name} FAILED: ${error.message}`)
  }
  log(`${name}: ${((performance.now() - started) / 1000).toFixed(1)} s`)
}
results.machine.loadavgAtEnd = loadavg().map((x) => round(x, 2))
results.totalSeconds = round((performance.now() - t0) / 1000, 1)

// ---- Targets of issue 6 -------------------------------------------------------------------
const rows = []
const row = (bench, metric, value, target = '', ok = undefined) => rows.push({ bench, metric, value, target, status: ok === undefined ? '' : ok ? 'met' : 'MISSED' })
const b = results.benchmarks

if (b.overhead && !b.overhead.error) {
  const o = b.overhead
  for (const [name, s] of Object.entries(o.stats)) row('overhead', `${name}: median / p90`, `${fmtMs(s.median)} / ${fmtMs(s.p90)}`)
  const r = o.ratios
  if (r['executor/bare']) row('overhead', '(executor only)/(a), medians', `${r['executor/bare'].ofMedians} (paired p90 ${r['executor/bare'].pairedP90})`)
  if (r['tools/bare']) row('overhead', '(b) tools/(a) bare, medians', `${r['tools/bare'].ofMedians} (paired median ${r['tools/bare'].pairedMedian}, p90 ${r['tools/bare'].pairedP90})`, '≤ 1.10', r['tools/bare'].ofMedians <= 1.1)
  if (r['mcp/bare']) row('overhead', '(c) mcp/(a) bare, medians', `${r['mcp/bare'].ofMedians} (paired median ${r['mcp/bare'].pairedMedian}, p90 ${r['mcp/bare'].pairedP90})`, '≤ 1.5', r['mcp/bare'].ofMedians <= 1.5)
  for (const [name, e] of Object.entries(o.extraVsLocal)) {
    row('overhead', name.includes(' vs ') ? `${name}: extra per call (medians)` : `${name} extra per call vs local (medians)`, `${fmtMs(e.extraMsMedian)} (paired median ${fmtMs(e.pairedExtraMsMedian)}, p90 ${fmtMs(e.pairedExtraMsP90)}; ×${e.ratio})`, name === 'sandbox' ? '≤ 20 ms' : '', name === 'sandbox' ? e.extraMsMedian <= 20 : undefined)
  }
  for (const [name, why] of Object.entries(o.notMeasured)) row('overhead', name, why)
  for (const [name, wrong] of Object.entries(o.wrongOutputs)) if (wrong.length) row('overhead', `${name}: unexpected output`, JSON.stringify(wrong[0]).slice(0, 80), '(no output)', false)
}
if (b.big && !b.big.error) {
  for (const [key, c] of Object.entries(b.big)) {
    if (key === 'collector') {
      row('big', 'OutputCollector: main-thread CPU per GB (64 KiB chunks)', `${fmtMs(c.cpuMsPerGB)} (runs ${c.runs.map((x) => fmtMs(x)).join(', ')})`)
      continue
    }
    const is1GB = key.startsWith('1GB')
    const def = key.endsWith('/default')
    const checks = c.checks
    row('big', `${key}: wall tool/bare (median of ${c.reps})`, `${c.wallRatio} (tool ${c.toolMs.map((x) => fmtMs(x)).join(', ')}; bare ${c.bareMs.map((x) => fmtMs(x)).join(', ')})`, is1GB && def ? '≤ 1.3' : '', is1GB && def ? c.wallRatio <= 1.3 : undefined)
    row('big', `${key}: diagnostics`, `tool/pipe ×${c.toolVsPipeRatio}; bare pipe drained by a fresh Node ×${c.pipeRatio} of bare (its CPU ${c.pipeCpuMs.map((x) => fmtMs(x)).join(', ')}, RSS growth ${c.pipeRssGrowthMiB} MiB); executor process CPU ${c.executorCpuMs.map((x) => fmtMs(x)).join(', ')}; event-loop delay p99 ${c.eventLoopDelayP99Ms.map((x) => fmtMs(x)).join(', ')}`)
    row('big', `${key}: peak RSS growth`, `${c.rssGrowthMaxMiB} MiB`, '≤ 64 MiB', c.rssGrowthMaxMiB <= 64)
    row('big', `${key}: bytes returned to the model`, `${c.bytesToModel} B, tail exact: ${checks.every((x) => x.tailExact)}`, 'the tail only', checks.every((x) => x.tailExact) && c.bytesToModel < 64_000 + 200)
    if (def) {
      const ok = checks.every((x) => x.spill === '(unavailable)')
      row('big', `${key}: spill file`, ok ? '(unavailable): stream over the 64 MiB cap' : checks.map((x) => x.spill).join(', '), '(unavailable)', ok)
    } else {
      const ok = checks.every((x) => x.spillComplete === true && x.spillDeletedAfterDispose === true)
      row('big', `${key}: spill file`, `${checks.map((x) => x.spillBytes === null ? x.spill : fmtBytes(x.spillBytes) + ` = ${x.spillBytes} B`).join(', ')}; deleted at dispose: ${checks.every((x) => x.spillDeletedAfterDispose)}`, `= stream (${c.streamBytes} B)`, ok)
    }
  }
}
if (b.kill && !b.kill.error) {
  for (const [name, limit] of [['cooperative', 200], ['ignoresTERM', 3200]]) {
    const k = b.kill[name]
    if (!k) continue
    row('kill', `${name}: call → no process left, median / p90 (n=${k.reps})`, `${fmtMs(k.goneMs.median)} / ${fmtMs(k.goneMs.p90)} (bash_kill returns ${fmtMs(k.returnMs.median)}; bare kill ${fmtMs(k.bareGoneMs.median)})`, `≤ ${limit} ms`, k.goneMs.median <= limit)
    row('kill', `${name}: survivors (${k.processesPerTree[0]} processes per tree)`, String(k.survivors), '0', k.survivors === 0)
  }
}
if (b.concurrency && !b.concurrency.error) {
  const c = b.concurrency
  row('concurrency', `${c.tasks} tasks × ${c.linesPerTask} lines: lost / repeated / mangled / out of order`, `${c.lost} / ${c.repeated} / ${c.mangled} / ${c.outOfOrder} (${c.polls} polls, ${fmtMs(c.wallMs)})`, '0 / 0', c.lost === 0 && c.repeated === 0 && c.mangled === 0 && c.outOfOrder === 0)
  row('concurrency', 'notices missing / repeated; bad final status', `${c.noticesMissing} / ${c.noticesRepeated}; ${c.badStatus}`, '0 / 0; 0', c.noticesMissing === 0 && c.noticesRepeated === 0 && c.badStatus === 0)
  const e = c.eventLoopDelayMs
  row('concurrency', 'event-loop delay p99 (whole run)', `${fmtMs(e.p99)} (p50 ${fmtMs(e.p50)}, max ${fmtMs(e.max)})`, '≤ 50 ms', e.p99 <= 50)
  row('concurrency', 'event-loop delay p99: starting / polling phase', `${fmtMs(c.eventLoopDelayStartPhaseMs.p99)} / ${fmtMs(c.eventLoopDelayPollPhaseMs.p99)}`)
  row('concurrency', 'one background start call: median / p90 / max', `${fmtMs(c.startCallMs.median)} / ${fmtMs(c.startCallMs.p90)} / ${fmtMs(c.startCallMs.max)}`)
}
if (b.notice && !b.notice.error) {
  const n = b.notice
  row('notice', `exit → inject, one at a time: median / p90 (n=${n.sequential.n})`, `${fmtMs(n.sequential.median)} / ${fmtMs(n.sequential.p90)}`, '≤ 100 ms', n.sequential.median <= 100)
  row('notice', `exit → inject, burst of ${n.burst.tasks}: median / p90`, `${fmtMs(n.burst.median)} / ${fmtMs(n.burst.p90)}`, '≤ 100 ms', n.burst.median <= 100)
}
if (b.launcher && !b.launcher.error) {
  for (const r of b.launcher.results) {
    const at = `server RSS ${r.serverRssMiB} MiB`
    row('launcher', `${r.burstSize} starts at once, ELD p99 spawn / helper (${at})`, `${fmtMs(r.burst.spawn.eldP99Ms.median)} / ${fmtMs(r.burst.helper.eldP99Ms.median)}`, 'helper ≤ 20 ms', r.burst.helper.eldP99Ms.median <= 20)
    row('launcher', `${r.burstSize} starts at once, wall helper / spawn (${at})`, String(r.burstWallRatioHelperVsSpawn))
    row('launcher', `true round trip / bare spawn: spawn, helper (${at})`, `${r.roundTripRatio.spawnVsBare}, ${r.roundTripRatio.helperVsBare}`, 'helper ≤ 1.0', r.roundTripRatio.helperVsBare <= 1)
  }
}
if (b.load && !b.load.error) {
  const l = b.load
  row('load', `${l.sessions} HTTP sessions × ${l.rounds} rounds: calls/s (rounds/s)`, `${l.callsPerSecond} (${l.roundsPerSecond}; spawn-bound ${l.spawnBoundRoundsPerSecond})`)
  row('load', 'throughput / spawn-bound limit', String(l.throughputVsSpawnBound), '≥ 0.8', l.throughputVsSpawnBound >= 0.8)
  row('load', 'call latency p50 / p99 (all; foreground)', `${fmtMs(l.latencyMs.all.p50)} / ${fmtMs(l.latencyMs.all.p99)}; ${fmtMs(l.latencyMs.foreground.p50)} / ${fmtMs(l.latencyMs.foreground.p99)}`)
  row('load', 'server event-loop delay p99 under load', `${fmtMs(l.serverEventLoopDelayMs.p99)} (p50 ${fmtMs(l.serverEventLoopDelayMs.p50)}, max ${fmtMs(l.serverEventLoopDelayMs.max)})`, '≤ 20 ms', l.serverEventLoopDelayMs.p99 <= 20)
  row('load', 'server RSS at end / peak', `${l.serverRssMiB.atEnd} MiB / ${l.serverRssMiB.peak} MiB`)
  row('load', 'errors / lost / repeated lines', `${l.errors} / ${l.lost} / ${l.repeated}`, '0 / 0 / 0', l.errors === 0 && l.lost === 0 && l.repeated === 0)
}
if (b.policy) {
  if (b.policy.notMeasured) row('policy', 'decide(), 20 commands', b.policy.notMeasured)
  else row('policy', 'decide(), 20-command line: median / p90', `${fmtMs(b.policy.medianMs)} / ${fmtMs(b.policy.p90Ms)}`, b.policy.targetMedianMs ? `≤ ${b.policy.targetMedianMs} ms` : '', b.policy.targetMedianMs ? b.policy.medianMs <= b.policy.targetMedianMs : undefined)
}
if (b.container && !b.container.error) {
  const c = b.container
  if (c.notMeasured) row('container', 'container executor', c.notMeasured)
  else {
    row('container', `first call (container create + agent), median (n=${c.firstCall.n})`, fmtMs(c.firstCall.median))
    const o = c.overhead
    row('container', '`true` after the first call: container/bare, medians', `${o.ratio.ofMedians} (${fmtMs(o.stats.container.median)} vs ${fmtMs(o.stats.bare.median)}; paired median ${o.ratio.pairedMedian}, p90 ${o.ratio.pairedP90})`, '≤ 1.5', o.ratio.ofMedians <= 1.5)
    row('container', 'one engine exec per call (what the agent saves)/bare', `${o.execPerCallVsBare} (${fmtMs(o.stats['exec-per-call'].median)})`)
    row('container', '100 MB of output: wall container/bare', `${c.big.wallRatio} (${c.big.mbPerSecond} MB/s)`)
    row('container', `kill of ${c.kill.processesPerTree} processes: median; survivors`, `${fmtMs(c.kill.median)}; ${c.kill.survivors}`, '0 survivors', c.kill.survivors === 0)
  }
}
if (b.kubernetes && !b.kubernetes.error) {
  const k = b.kubernetes
  if (k.notMeasured) row('kubernetes', 'kubernetes executor (fake API server)', k.notMeasured)
  else {
    row('kubernetes', `first call (pod create + running + agent exec, fake API server), median (n=${k.firstCall.n})`, `${fmtMs(k.firstCall.median)} (×${k.firstCallVsBare} a bare spawn)`)
    const o = k.overhead
    row('kubernetes', '`true` after the first call: pod/bare, medians', `${o.ratio.ofMedians} (${fmtMs(o.stats.kubernetes.median)} vs ${fmtMs(o.stats.bare.median)}; paired median ${o.ratio.pairedMedian}, p90 ${o.ratio.pairedP90})`)
  }
}
for (const [name, r] of Object.entries(b)) if (r?.error) row(name, 'FAILED', r.error.split('\n')[0], '', false)
results.table = rows

// ---- Output -----------------------------------------------------------------------------------
const widths = ['bench', 'metric', 'value', 'target', 'status'].map((k) => Math.max(k.length, ...rows.map((r) => String(r[k]).length)))
const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ').trimEnd()
console.log(`dsh-bash benchmarks — ${results.date} — node ${process.version}, ${results.machine.cpus} CPUs, load ${results.machine.loadavgAtStart.join(' ')} → ${results.machine.loadavgAtEnd.join(' ')}${quick ? ' — QUICK run' : ''}`)
console.log(line(['bench', 'metric', 'value', 'target', 'status']))
console.log(widths.map((w) => '-'.repeat(w)).join('-|-'))
for (const r of rows) console.log(line([r.bench, r.metric, r.value, r.target, r.status]))

const out = values.json ? resolve(values.json) : resolve(here, 'results', 'latest.json')
mkdirSync(dirname(out), { recursive: true })
writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
console.log(`\nJSON: ${out} (${results.totalSeconds} s)`)
