// The cost of the sandbox per call: `true` run N times through the local executor and through the
// sandbox executor, interleaved (so that a busy machine slows both alike); medians in ms.
// Usage: npx tsc -b && node packages/bash-sandbox/bench/cost.mjs [N]
import { Context } from 'cordis'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { SandboxExecutor } from '@deepseek-ai/dsh-bash-sandbox'

const n = Number(process.argv[2] ?? 50)
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const executors = {
  local: new LocalExecutor(new Context(), {}),
  'sandbox workspace-write': new SandboxExecutor(new Context(), { mode: 'workspace-write' }),
  'sandbox read-only': new SandboxExecutor(new Context(), { mode: 'read-only' }),
  'sandbox network on': new SandboxExecutor(new Context(), { mode: 'workspace-write', network: true }),
  // Egress by domain: the proxy's listener per launch and the bridge process in the sandbox.
  'sandbox egress by domain': new SandboxExecutor(new Context(), { mode: 'workspace-write', network: { allow: ['example.com'] } }),
}
for (const [name, executor] of Object.entries(executors)) {
  if (executor.unavailableReason) {
    console.error(`${name}: ${executor.unavailableReason}`)
    process.exit(1)
  }
}
const times = Object.fromEntries(Object.keys(executors).map((name) => [name, []]))
const once = async (executor) => {
  const started = performance.now()
  const result = await executor.run(executor.resolve({ command: 'true' }))
  if (result.exitCode !== 0) throw new Error(`true failed: ${JSON.stringify(result)}`)
  return performance.now() - started
}
for (const executor of Object.values(executors)) for (let i = 0; i < 3; i++) await once(executor) // warm up
for (let i = 0; i < n; i++) {
  for (const [name, executor] of Object.entries(executors)) times[name].push(await once(executor))
}
const base = median(times.local)
console.log(`containment: ${executors.local.containment}; ${n} calls of \`true\` each, interleaved; ms per call`)
console.log(`${'executor'.padEnd(26)} ${'median'.padStart(6)}  ${'extra'.padStart(6)}  ${'paired extra'.padStart(12)}`)
for (const [name, values] of Object.entries(times)) {
  const m = median(values)
  // The median of the per-round differences: less sensitive to the machine's load drifting.
  const paired = median(values.map((value, i) => value - times.local[i]))
  const extra = name === 'local' ? '' : `${`+${(m - base).toFixed(1)}`.padStart(6)}  ${`+${paired.toFixed(1)}`.padStart(12)}`
  console.log(`${name.padEnd(26)} ${m.toFixed(1).padStart(6)}  ${extra}`)
}
await Promise.all(Object.values(executors).map((executor) => executor.shutdown()))
