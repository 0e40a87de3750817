/**
 * 2. Big output through the `bash` tool, against the same command redirected to a file by a bare
 * spawn. The tool call runs in a child Node process (lib/big-worker.mjs) whose RSS is watched from
 * here (/proc/<pid>/status VmRSS every 20 ms) and by itself (VmHWM after a clear_refs reset, and
 * process.memoryUsage() every 20 ms). Bare and tool runs alternate.
 */
import { fork } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { OutputCollector } from '@deepseek-ai/dsh-bash-kit'
import { bareSpawn } from './lib/app.mjs'
import { MiB, median, rotate, round } from './lib/stats.mjs'

const WORKER = fileURLToPath(new URL('./lib/big-worker.mjs', import.meta.url))
const MAX_OUTPUT_BYTES = 64_000 // the default maxOutputBytes
const GB_COMMAND = "head -c 1000000000 /dev/zero | tr '\\0' a"
const SEQ_COMMAND = 'seq 10000000'

function seqTail(n, bytes) {
  const lines = []
  let size = 0
  for (let i = n; i >= 1 && size < bytes + 16; i--) {
    const line = `${i}\n`
    lines.push(line)
    size += line.length
  }
  return lines.reverse().join('').slice(-bytes)
}

function seqBytes(n) {
  let total = 0
  for (let digits = 1, lo = 1; lo <= n; digits++, lo *= 10) total += (Math.min(n, lo * 10 - 1) - lo + 1) * (digits + 1)
  return total
}

const CASES = [
  { name: '1GB', command: GB_COMMAND, streamBytes: 1_000_000_000, tail: 'a'.repeat(MAX_OUTPUT_BYTES) },
  { name: 'seq1e7', command: SEQ_COMMAND, streamBytes: seqBytes(10_000_000), tail: seqTail(10_000_000, MAX_OUTPUT_BYTES) },
]

function vmRss(pid) {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) * 1024 : NaN
  } catch {
    return NaN
  }
}

function toolRun(testCase, config) {
  return childRun({ mode: 'tool', command: testCase.command, config, expect: { streamBytes: testCase.streamBytes, tail: testCase.tail } })
}

function childRun(job) {
  return new Promise((resolve, reject) => {
    const child = fork(WORKER, [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    let baseline
    let peak = 0
    let result
    const watcher = setInterval(() => {
      if (baseline !== undefined) peak = Math.max(peak, vmRss(child.pid) || 0)
    }, 20)
    child.on('message', (message) => {
      if (message.type === 'baseline') baseline = message.rss
      else if (message.type === 'result') result = message
    })
    child.once('error', reject)
    child.once('exit', (code) => {
      clearInterval(watcher)
      if (!result) return reject(new Error(`big-output worker exited with ${code} and no result`))
      result.rss.parentSampledPeak = peak
      result.rss.growthParentSampled = peak ? peak - baseline : null
      resolve(result)
    })
  })
}

async function bareRun(testCase, dir) {
  const file = join(dir, 'bare.out')
  const t0 = performance.now()
  const r = await bareSpawn(`${testCase.command} > ${file}`)
  const wallMs = performance.now() - t0
  const size = statSync(file).size
  rmSync(file, { force: true })
  if (r.code !== 0) throw new Error(`bare run of ${testCase.name} failed: exit ${r.code}`)
  if (size !== testCase.streamBytes) throw new Error(`bare run of ${testCase.name} wrote ${size} bytes, expected ${testCase.streamBytes}`)
  return wallMs
}

/**
 * Diagnostic: the same command by a bare spawn whose stdout pipe is drained (and discarded) by a
 * fresh Node process (lib/big-worker.mjs in 'pipe' mode): what any pipe-reading tool pays at least.
 */
async function pipeRun(testCase) {
  const r = await childRun({ mode: 'pipe', command: testCase.command })
  if (r.bytes !== testCase.streamBytes) throw new Error(`pipe run of ${testCase.name} read ${r.bytes} bytes`)
  return r
}

/**
 * Diagnostic, immune to the machine's noise: main-thread CPU time of the kit's OutputCollector
 * (the executor's per-stream buffer) swallowing 1 GB in 64 KiB chunks, the size Node reads from a
 * pipe, with the default limits (64,000 bytes kept, 64 MiB spill cap).
 */
function collectorCost() {
  const chunks = Array.from({ length: 64 }, () => Buffer.alloc(65536, 97))
  const runs = []
  for (let r = 0; r < 3; r++) {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-collector-'))
    const collector = new OutputCollector({ maxBytes: MAX_OUTPUT_BYTES, maxSpillBytes: 64 * MiB, spillPath: join(dir, 'spill.log') })
    const cpu0 = process.cpuUsage()
    for (let written = 0, i = 0; written < 1e9; written += 65536, i++) collector.write(chunks[i % chunks.length])
    collector.end()
    const cpu = process.cpuUsage(cpu0)
    collector.dispose()
    rmSync(dir, { recursive: true, force: true })
    runs.push((cpu.user + cpu.system) / 1000)
  }
  return { cpuMsPerGB: round(median(runs), 0), runs: runs.map((x) => round(x, 0)) }
}

export async function run({ quick = false, log = () => {} } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-big-'))
  const configs = [
    { label: 'default cap (64 MiB)', key: 'default', config: {}, reps: quick ? 1 : 5 },
    { label: 'maxSpillBytes 2 GiB', key: 'bigSpill', config: { maxSpillBytes: 2 * 1024 * MiB }, reps: 1 },
  ]
  const out = {}
  try {
    log('big output: collector cost per GB')
    out.collector = collectorCost()
    for (const testCase of CASES) {
      for (const { key, label, config, reps } of configs) {
        const bare = []
        const pipe = []
        const tool = []
        log(`big output: ${testCase.name}, ${label}, ${reps} rep(s)`)
        const steps = {
          bare: async () => bare.push(await bareRun(testCase, dir)),
          pipe: async () => pipe.push(await pipeRun(testCase)),
          tool: async () => tool.push(await toolRun(testCase, config)),
        }
        // Rotate the order each repetition.
        for (let i = 0; i < reps; i++) for (const step of rotate(Object.keys(steps), i)) await steps[step]()
        const growth = tool.map((t) => Math.max(t.rss.growthSampled, t.rss.growthHwm ?? 0, t.rss.growthParentSampled ?? 0))
        const bareMedian = median(bare)
        const toolMedian = median(tool.map((t) => t.wallMs))
        const last = tool[tool.length - 1]
        out[`${testCase.name}/${key}`] = {
          command: testCase.command,
          config: label,
          streamBytes: testCase.streamBytes,
          reps,
          bareMs: bare.map((x) => round(x, 1)),
          pipeMs: pipe.map((x) => round(x.wallMs, 1)),
          pipeCpuMs: pipe.map((x) => round(x.cpuMs, 0)),
          pipeRssGrowthMiB: round(Math.max(...pipe.map((x) => Math.max(x.rss.growthSampled, x.rss.growthHwm ?? 0, x.rss.growthParentSampled ?? 0))) / MiB, 1),
          pipeRatio: round(median(pipe.map((x) => x.wallMs)) / bareMedian),
          toolVsPipeRatio: round(toolMedian / median(pipe.map((x) => x.wallMs))),
          toolMs: tool.map((t) => round(t.wallMs, 1)),
          wallRatio: round(toolMedian / bareMedian),
          // CPU time of the Node process that runs the executor (its share of the work).
          executorCpuMs: tool.map((t) => round(t.cpuMs, 0)),
          eventLoopDelayP99Ms: tool.map((t) => round(t.eventLoopDelayMs.p99, 1)),
          eventLoopDelayMaxMs: tool.map((t) => round(t.eventLoopDelayMs.max, 1)),
          rssGrowthBytes: growth,
          rssGrowthMaxMiB: round(Math.max(...growth) / MiB, 1),
          rssDetail: tool.map((t) => t.rss),
          bytesToModel: last.bytesToModel,
          textTail: last.textTail,
          checks: tool.map((t) => t.checks),
        }
      }
    }
    return out
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
