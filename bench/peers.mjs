#!/usr/bin/env node
/**
 * dsh-bash beside its peers, same run, interleaved (issue 31; bench/README.md "Peers"):
 *
 *   node bench/peers.mjs [--quick] [--rounds N] [--only CASE[,CASE…]] [--json PATH]
 *
 * Variants: `spawn` (lib/spawn-floor.mjs: a Node process of its own spawns `bash --noprofile
 * --norc -c CMD` and reads all of stdout and stderr: the floor of any tool that runs a command),
 * `dsh-bash` (`dsh-bash mcp` over stdio; `--also NAME=MAIN` adds another build of the CLI, e.g.
 * main's, as variant NAME), and the peers of lib/peers.mjs: `mcp-server-commands`,
 * `desktop-commander` (each when installed, see there), `naive` (always). Every MCP server gets the
 * same SDK client.
 *
 * Cases (CASE): `true`; `lines` (`seq 1 1000000`, 6.9 MB in 1,000,000 lines); `find`
 * (`find / -xdev 2>/dev/null | head -300000`); `big` (100 MB without a newline; spawn and dsh-bash
 * only: the others return every byte in one JSON message); `burst` (50 calls of
 * `sleep 0.5; echo x` at once on one connection, the wall time of all 50, every answer checked).
 *
 * Each round runs every case, and in each case every variant once, in a rotated order reversed
 * every other round. Reported per case and variant: median and p90 wall time, ratios of medians
 * against `spawn` and against `mcp-server-commands` (and the paired per-round median), the server
 * process's own CPU per call (utime+stime of its main process from /proc, commands not counted),
 * its peak RSS during the call (VmHWM after a clear_refs reset), and what came back (bytes, wrong
 * answers). Nothing is judged here: the acceptance of issue 31 is read off the ratios.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { startCommands, startDesktopCommander, startDsh, startNaive, startSpawnFloor } from './lib/peers.mjs'
import { median, p90, round } from './lib/stats.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const CASES = ['true', 'lines', 'find', 'big', 'burst']
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    only: { type: 'string', multiple: true },
    json: { type: 'string' },
    also: { type: 'string', multiple: true },
  },
})
const only = (values.only ?? []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean)
for (const name of only) if (!CASES.includes(name)) throw new Error(`unknown case ${JSON.stringify(name)}; expected one of ${CASES.join(', ')}`)
const cases = only.length ? CASES.filter((c) => only.includes(c)) : CASES
const rounds = Number(values.rounds ?? (values.quick ? 5 : 15))
const log = (line) => console.error(`[peers] ${line}`)

const SEQ_BYTES = 6_888_896
const BIG_BYTES = 100_000_000
const BURST = 50

/**
 * What each case runs and how an answer is checked. `kind` is `spawn` (the floor: `r.length` is the
 * whole text's), `dsh` (dsh-bash, any build) or `peer`; `only` lists the kinds (or names) a case measures.
 */
const CASE = {
  true: { command: 'true', ok: (kind, r) => !r.isError && (kind === 'spawn' ? r.length === 0 : kind === 'dsh' ? r.text === '(no output)' : true) },
  lines: {
    command: 'seq 1 1000000',
    // mcp-server-commands stops at its 1 MiB maxBuffer: counted wrong, as it is.
    ok: (kind, r) => !r.isError && (kind === 'spawn' ? r.length === SEQ_BYTES : r.text.trimEnd().endsWith('999999\n1000000') || (kind === 'peer' && r.text.includes('1000000'))),
    // dsh-bash must also name the complete file (the model keeps a way to all of it).
    extra: (kind, r) => kind !== 'dsh' || /full output: \/\S+stdout\.log\]/.test(r.text),
  },
  // Not `naive`: its 30 MB answer ended in `Connection closed` here, its server gone.
  find: { command: 'find / -xdev 2>/dev/null | head -300000', only: ['spawn', 'dsh', 'mcp-server-commands', 'desktop-commander'], ok: (kind, r) => !r.isError && (r.length ?? r.text.length) > 0 },
  big: {
    command: "head -c 100000000 /dev/zero | tr '\\0' a",
    only: ['spawn', 'dsh'],
    // 100 MB is over the default maxSpillBytes (64 MiB): the marker says `(unavailable)`.
    ok: (kind, r) => !r.isError && (kind === 'spawn' ? r.length === BIG_BYTES : /a{1000}/.test(r.text) && /full output: (\/\S+stdout\.log|\(unavailable\))\]/.test(r.text)),
  },
  burst: { command: 'sleep 0.5; echo x', parallel: BURST, ok: (kind, r) => !r.isError && /(^|\n)x\n?(\n|$)/.test(r.text) },
}

/** utime+stime of a process in ms (its own threads only). */
function cpuMs(pid) {
  let stat
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return NaN // the server is gone: its calls come back as errors, counted wrong
  }
  const fields = stat.split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/** Resets the peak RSS of a process (clear_refs 5); false when not allowed. */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}
function statusKiB(pid, key) {
  try {
    return Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN)
  } catch {
    return NaN // gone, as in cpuMs
  }
}

const variants = []
const notMeasured = {}
for (const start of [startSpawnFloor, startDsh, startCommands, startDesktopCommander, startNaive]) {
  try {
    const server = await start()
    if (server.why) notMeasured[start.name] = server.why
    else variants.push({ ...server, kind: server.name === 'spawn' ? 'spawn' : server.name === 'dsh-bash' ? 'dsh' : 'peer' })
  } catch (error) {
    notMeasured[start.name] = `not measured: ${error.message.split('\n')[0]}`
  }
}
for (const spec of values.also ?? []) {
  const [name, main] = spec.split(/=(.*)/s)
  if (!name || !main || CASES.includes(name) || variants.some((v) => v.name === name)) throw new Error(`--also wants NAME=MAIN with a new name, got ${JSON.stringify(spec)}`)
  variants.push({ ...(await startDsh(main)), name, kind: 'dsh' })
}
for (const why of Object.values(notMeasured)) log(why)

const samples = {}
const record = (c, v, key, value) => (((samples[c] ??= {})[v] ??= { wall: [], cpu: [], peakMiB: [], bytes: [], wrong: [] })[key].push(value))

async function once(c, variant) {
  const spec = CASE[c]
  const cpu0 = cpuMs(variant.pid)
  const peak = c === 'big' && resetPeak(variant.pid)
  const rss0 = statusKiB(variant.pid, 'VmRSS')
  const t0 = performance.now()
  const results = await Promise.all(Array.from({ length: spec.parallel ?? 1 }, () => variant.call(spec.command)))
  const wall = performance.now() - t0
  const cpu = cpuMs(variant.pid) - cpu0
  record(c, variant.name, 'wall', wall)
  record(c, variant.name, 'cpu', cpu / results.length)
  if (peak) record(c, variant.name, 'peakMiB', (statusKiB(variant.pid, 'VmHWM') - rss0) / 1024)
  record(c, variant.name, 'bytes', results[0].length ?? Buffer.byteLength(results[0].text))
  for (const r of results) {
    if (!(spec.ok(variant.kind, r) && (spec.extra?.(variant.kind, r) ?? true))) {
      record(c, variant.name, 'wrong', r.text.length > 300 ? `${r.text.slice(0, 150)} … ${r.text.slice(-150)}` : r.text)
      break
    }
  }
}

log(`load ${loadavg().map((x) => x.toFixed(1)).join(' ')}; ${rounds} rounds of ${cases.join(', ')}; variants ${variants.map((v) => v.name).join(', ')}`)
const started = new Date().toISOString()
const load0 = loadavg()
try {
  // One warm-up round (first calls create the helper, the pipe pool, the caches).
  for (let round = -1; round < rounds; round++) {
    for (const c of cases) {
      const list = variants.filter((v) => !CASE[c].only || CASE[c].only.includes(v.kind) || CASE[c].only.includes(v.name))
      const k = ((round % list.length) + list.length) % list.length
      let order = [...list.slice(k), ...list.slice(0, k)]
      if (round % 2) order = order.reverse()
      for (const variant of order) {
        const t0 = performance.now()
        if (round < 0) await Promise.all(Array.from({ length: CASE[c].parallel ?? 1 }, () => variant.call(CASE[c].command)))
        else await once(c, variant)
        if (round < 0) log(`warm-up ${c} ${variant.name}: ${(performance.now() - t0).toFixed(0)} ms`)
      }
    }
    if (round >= 0) log(`round ${round + 1}/${rounds} done (load ${loadavg()[0].toFixed(1)})`)
  }
} finally {
  for (const v of variants) await v.close()
}

const report = { date: started, load: { start: load0.map((x) => round(x, 2)), end: loadavg().map((x) => round(x, 2)) }, cpus: cpus().length, node: process.version, rounds, notMeasured, cases: {} }
for (const c of cases) {
  const byVariant = samples[c] ?? {}
  const out = {}
  for (const [v, s] of Object.entries(byVariant)) {
    const ratio = (base) => {
      const b = byVariant[base]
      if (!b || v === base) return undefined
      return { ofMedians: round(median(s.wall) / median(b.wall)), pairedMedian: round(median(s.wall.map((t, i) => t / b.wall[i]))) }
    }
    out[v] = {
      medianMs: round(median(s.wall), 1),
      p90Ms: round(p90(s.wall), 1),
      vsSpawn: ratio('spawn'),
      vsCommands: ratio('mcp-server-commands'),
      cpuMsPerCall: round(median(s.cpu), 2),
      ...(s.peakMiB.length ? { peakRssGrowthMiB: round(median(s.peakMiB), 1) } : {}),
      bytesReturned: median(s.bytes),
      wrong: s.wrong.length,
      ...(s.wrong.length ? { wrongExample: s.wrong[0] } : {}),
      samples: s.wall.map((t) => round(t, 1)),
    }
  }
  report.cases[c] = out
}

for (const [c, out] of Object.entries(report.cases)) {
  console.log(`\n${c}: ${CASE[c].parallel ? `${CASE[c].parallel} × ` : ''}${CASE[c].command}`)
  // Ratios: of medians, and in parentheses the median of the per-round ratios (paired).
  const ratio = (r) => (r ? `${r.ofMedians.toFixed(2)} (${r.pairedMedian.toFixed(2)})` : '')
  console.log(`  ${'variant'.padEnd(20)} ${'median'.padStart(9)} ${'p90'.padStart(9)} ${'/spawn'.padStart(13)} ${'/msc'.padStart(13)} ${'cpu/call'.padStart(9)} ${'peak MiB'.padStart(9)} ${'bytes'.padStart(10)} wrong`)
  for (const [v, s] of Object.entries(out)) {
    console.log(
      `  ${v.padEnd(20)} ${s.medianMs.toFixed(1).padStart(9)} ${s.p90Ms.toFixed(1).padStart(9)} ${ratio(s.vsSpawn).padStart(13)} ${ratio(s.vsCommands).padStart(13)} ${s.cpuMsPerCall.toFixed(1).padStart(9)} ${(s.peakRssGrowthMiB?.toFixed(1) ?? '').padStart(9)} ${String(s.bytesReturned).padStart(10)} ${s.wrong}`,
    )
  }
}
console.log(`\nload ${report.load.start.join(' ')} → ${report.load.end.join(' ')}`)
const jsonPath = values.json ?? resolve(here, 'results', 'peers-latest.json')
mkdirSync(dirname(jsonPath), { recursive: true })
writeFileSync(jsonPath, `${JSON.stringify(report, null, 2)}\n`)
log(`JSON: ${jsonPath}`)
