/**
 * Child process of the big-output benchmark: runs ONE `bash` tool call in a fresh app, so that the
 * peak RSS growth of the process that runs the executor is measured cleanly.
 * argv[2]: JSON {command, config, expect: {streamBytes, tail}}; the result goes back over IPC.
 */
import { readFileSync, statSync, writeFileSync, existsSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { bareSpawn, createApp, settle } from './app.mjs'

const job = JSON.parse(process.argv[2])

function status(field) {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'))
  return match ? Number(match[1]) * 1024 : NaN
}

// mode 'tool': the command through the `bash` tool; mode 'pipe': a bare spawn whose stdout pipe
// this process drains and discards (the floor for any tool that reads a pipe), measured alike.
const pipeMode = job.mode === 'pipe'
const app = pipeMode ? undefined : await createApp({ config: { ...job.config } })
const agent = app?.agent('bench-big')
// Warm up the code paths (JIT, stream machinery, collector trimming) before the baseline.
for (let i = 0; i < 3; i++) {
  if (pipeMode) await bareSpawn('seq 200000')
  else await app.text('bash', { command: 'seq 200000', description: 'Warm up with some output' }, agent)
}
await settle(200)

let hwmReset = true
try {
  writeFileSync('/proc/self/clear_refs', '5') // resets VmHWM to the current RSS
} catch {
  hwmReset = false
}
const baseline = process.memoryUsage().rss
const baselineHwm = status('VmHWM')
let sampledPeak = baseline
let samples = 0
const sampler = setInterval(() => {
  samples++
  sampledPeak = Math.max(sampledPeak, process.memoryUsage().rss)
}, 20)
process.send?.({ type: 'baseline', rss: baseline })

const eld = monitorEventLoopDelay({ resolution: 10 })
eld.enable()
const cpu0 = process.cpuUsage()
const t0 = performance.now()
const result = pipeMode
  ? { piped: await bareSpawn(job.command) }
  : await app.call('bash', { command: job.command, description: 'Print a lot of output', timeoutMs: 600_000 }, agent)
const wallMs = performance.now() - t0
const cpu = process.cpuUsage(cpu0)
eld.disable()
clearInterval(sampler)
sampledPeak = Math.max(sampledPeak, process.memoryUsage().rss)
const hwm = status('VmHWM')

if (pipeMode) {
  process.send?.({
    type: 'result',
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    eventLoopDelayMs: { p99: eld.percentile(99) / 1e6, max: eld.max / 1e6 },
    rss: { baseline, sampledPeak, hwm, hwmReset, growthSampled: sampledPeak - baseline, growthHwm: hwmReset ? hwm - baseline : null },
    bytes: result.piped.bytes,
  })
  process.exit(0)
}
const text = result.content.map((c) => c.text).join('\n')
const marker = /\n\[output truncated; full output: (.*)\]$/.exec(text)
const body = marker ? text.slice(0, marker.index) : text
const spill = marker?.[1]
let spillBytes = null
let spillDeleted = null
if (spill && spill !== '(unavailable)') spillBytes = statSync(spill).size

const checks = {
  isError: result.isError,
  truncationLine: Boolean(marker),
  tailExact: job.expect.tail === undefined ? null : body === job.expect.tail,
  spill: spill ?? null,
  spillBytes,
  spillComplete: spillBytes === null ? null : spillBytes === job.expect.streamBytes,
}
await app.dispose()
if (spill && spill !== '(unavailable)') spillDeleted = !existsSync(spill)
checks.spillDeletedAfterDispose = spillDeleted

process.send?.({
  type: 'result',
  wallMs,
  cpuMs: (cpu.user + cpu.system) / 1000,
  eventLoopDelayMs: { p99: eld.percentile(99) / 1e6, max: eld.max / 1e6 },
  rss: { baseline, sampledPeak, hwm, hwmReset, baselineHwm, samples, growthSampled: sampledPeak - baseline, growthHwm: hwmReset ? hwm - baseline : null },
  bytesToModel: Buffer.byteLength(text),
  textTail: text.slice(-120),
  checks,
})
process.exit(0)
