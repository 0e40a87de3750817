/**
 * 6. Load (issue 16): one `dsh-bash mcp --http` server, many concurrent sessions (SDK clients over
 * Streamable HTTP), each doing rounds of a foreground `true`, a foreground `seq 1 2000` and a
 * background task polled to completion. Reported: calls per second, p50/p99 call latency, the
 * server's event-loop delay p99 and RSS (measured inside the server process by a preloaded probe,
 * no change to its code), errors, lost or repeated lines; and in the same run the spawn-bound limit
 * of this machine (a minimal Node process starting the same commands at the same concurrency, no MCP).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { BACKGROUND_LINES, LOAD_COMMANDS } from './lib/load-commands.mjs'
import { CLI_MAIN } from './lib/mcp.mjs'
import { quantile, round } from './lib/stats.mjs'

const PROBE = fileURLToPath(new URL('./lib/eld-probe.mjs', import.meta.url))
const SPAWN_BOUND = fileURLToPath(new URL('./lib/spawn-bound.mjs', import.meta.url))

/** Starts the real CLI server over HTTP with the probe preloaded; resolves with its URL and token. */
async function startServer(workspace, probeFile) {
  const token = 'load-bench-token'
  // DSH_BENCH_EXECUTOR_CONFIG (JSON): the local executor's config, e.g. '{"launcher":"helper"}' (issue 16).
  const extra = process.env.DSH_BENCH_EXECUTOR_CONFIG ? ['--executor-config', process.env.DSH_BENCH_EXECUTOR_CONFIG] : []
  // DSH_BENCH_CPU_PROFILE=<prefix> (read by the probe): a CPU profile of the server per phase, <prefix>.<n>.cpuprofile.
  // DSH_BENCH_SERVER_NODE_FLAGS: extra node flags for the server process only (e.g. GC settings).
  const flags = (process.env.DSH_BENCH_SERVER_NODE_FLAGS ?? '').split(' ').filter(Boolean)
  // DSH_BENCH_SERVER_NICE=<n>: `--nice <n>` (the server's autogroup; src/priority.ts of the CLI), the
  // server then in a session of its own as a supervisor would start it (else the bench shares it).
  const nice = process.env.DSH_BENCH_SERVER_NICE
  if (nice !== undefined) extra.push(`--nice=${nice}`)
  const child = spawn(process.execPath, [...flags, '--import', PROBE, CLI_MAIN, 'mcp', '--http', '127.0.0.1:0', '--workdir', workspace, ...extra], {
    detached: nice !== undefined,
    env: { ...process.env, DSH_BASH_TOKEN: token, DSH_BENCH_PROBE_FILE: probeFile },
    // DSH_BENCH_SERVER_STDOUT=<file>: the server's stdout there (e.g. with `--trace-gc` in the flags above).
    stdio: ['pipe', process.env.DSH_BENCH_SERVER_STDOUT ? openSync(process.env.DSH_BENCH_SERVER_STDOUT, 'w') : 'ignore', 'pipe'],
  })
  let stderr = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start in 30 s:\n${stderr}`)), 30_000)
    child.stderr.on('data', (chunk) => {
      stderr += chunk
      const match = /listening on (\S+)/.exec(stderr)
      if (match) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    child.on('exit', (code) => reject(new Error(`the server exited (${code}):\n${stderr}`)))
  })
  return { child, url, token }
}

/**
 * An idle Node process with the same probe, alive during the load: the event-loop delay any process
 * sees on this machine at that load (waiting for a CPU), i.e. the floor under the server's figure.
 */
async function startControl(probeFile) {
  const child = spawn(process.execPath, ['--import', PROBE, '-e', 'setInterval(() => {}, 60_000); console.log("ready")'], {
    env: { ...process.env, DSH_BENCH_PROBE_FILE: probeFile, DSH_BENCH_CPU_PROFILE: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  // SIGUSR2 before the probe has loaded would end the process (its default action): wait for it.
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve)
    child.once('exit', (code) => reject(new Error(`the idle control process exited (${code})`)))
  })
  return child
}

/** Asks the probe for the numbers of the phase that just ended (and resets it). */
async function probe(child, file) {
  rmSync(file, { force: true })
  child.kill('SIGUSR2')
  for (let i = 0; i < 200; i++) {
    try {
      return JSON.parse(readFileSync(file, 'utf8'))
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
  throw new Error('the event-loop probe did not answer')
}

const textOf = (result) => (result.content ?? []).map((c) => c.text ?? '').join('\n')

/** The first line of a result the budget cut: the files holding the whole streams, or `(unavailable)`. */
const CUT_LINE = /^\[(?:output truncated|some output was dropped from memory); full output: ([^\]\n]+)\]$/

/**
 * The numbered lines a result stands for. A cut result that names the stdout file (same machine):
 * the file holds the stream from byte 0, so the lines from `from` through the text's last line are
 * taken there, and checked like the rest. Cut with `(unavailable)`: only the text, so the missing
 * lines count as lost.
 */
function numberedLines(text, from) {
  const named = CUT_LINE.exec(text.split('\n', 1)[0])?.[1]
  const file = named?.split(', ').find((path) => path.endsWith('-stdout.log'))
  const inText = text.split('\n').filter((line) => /^\d+$/.test(line))
  if (!file) return inText
  const lines = readFileSync(file, 'utf8').split('\n')
  // Earlier results delivered the stream's first from-1 lines; this one runs through its last line.
  const last = inText.length > 0 ? lines.indexOf(inText[inText.length - 1], from - 1) : lines.length - 1
  return lines.slice(from - 1, last + 1).filter((line) => /^\d+$/.test(line))
}

/** Checks that `text` holds exactly the numbers from..to, one per line, each once, in order. */
function countLines(text, from, to, tally) {
  const numbers = numberedLines(text, from).map(Number)
  let expected = from
  for (const n of numbers) {
    if (n === expected) expected++
    else if (n < expected) tally.repeated++
    else {
      tally.lost += n - expected
      expected = n + 1
    }
  }
  return expected
}

async function session(url, token, rounds, record) {
  const client = new Client({ name: 'dsh-load', version: '0.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }))
  const call = async (kind, name, args) => {
    const started = performance.now()
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 300_000 })
      record.latency[kind].push(performance.now() - started)
      record.calls++
      if (result.isError) record.errors.push(`${name}: ${textOf(result).slice(0, 200)}`)
      return textOf(result)
    } catch (error) {
      record.errors.push(`${name}: ${error.message}`)
      return ''
    }
  }
  try {
    for (let round = 0; round < rounds; round++) {
      const fast = await call('true', 'bash', { command: LOAD_COMMANDS.fast, description: 'do nothing' })
      if (!fast.startsWith('(no output)')) record.errors.push(`true: ${JSON.stringify(fast.slice(0, 100))}`)
      const lines = await call('seq', 'bash', { command: LOAD_COMMANDS.lines, description: 'print numbered lines' })
      const next = countLines(lines, 1, 2000, record)
      if (next <= 2000) record.lost += 2001 - next
      const started = await call('start', 'bash', { command: LOAD_COMMANDS.background, description: 'print lines in background', run_in_background: true })
      const id = /started background task (\S+)/.exec(started)?.[1]
      if (!id) {
        record.errors.push(`start: ${started.slice(0, 100)}`)
        continue
      }
      let expected = 1
      for (let poll = 0; poll < 10_000; poll++) {
        const text = await call('poll', 'bash_output', { task_id: id })
        expected = countLines(text, expected, BACKGROUND_LINES, record)
        if (/\[status: completed, exit code: 0\]/.test(text)) break
        if (/\[status: (killed|completed)/.test(text)) {
          record.errors.push(`task ${id}: ${text.slice(-100)}`)
          break
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      if (expected <= BACKGROUND_LINES) record.lost += BACKGROUND_LINES + 1 - expected
    }
  } finally {
    await client.close().catch(() => {})
  }
}

function spawnBound(sessions, rounds) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SPAWN_BOUND, String(sessions), String(rounds)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (chunk) => (out += chunk))
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`spawn-bound baseline exited ${code}`))))
  })
}

export async function run({ quick = false, log = () => {} } = {}) {
  const sessions = quick ? 10 : 50
  const rounds = quick ? 5 : 20
  const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-load-'))
  const probeFile = join(workspace, '..', `dsh-bench-probe-${process.pid}.json`)
  const server = await startServer(workspace, probeFile)
  const controlFile = `${probeFile}.control`
  const control = await startControl(controlFile)
  try {
    log(`load: ${sessions} sessions × ${rounds} rounds against ${server.url}`)
    // The first probe closes the start-up phase (module loading blocks the loop), measured apart.
    const startup = await probe(server.child, probeFile)
    await probe(control, controlFile)
    const record = { calls: 0, errors: [], lost: 0, repeated: 0, latency: { true: [], seq: [], start: [], poll: [] } }
    const started = performance.now()
    const clientCpuAt = process.cpuUsage()
    await Promise.all(Array.from({ length: sessions }, () => session(server.url, server.token, rounds, record)))
    const seconds = (performance.now() - started) / 1000
    const clientCpu = process.cpuUsage(clientCpuAt)
    const loaded = await probe(server.child, probeFile)
    const idle = await probe(control, controlFile)
    log(`load: ${record.calls} calls in ${seconds.toFixed(1)} s; spawn-bound baseline next`)
    const bound = await spawnBound(sessions, rounds)
    const all = Object.values(record.latency).flat()
    const foreground = [...record.latency.true, ...record.latency.seq]
    return {
      sessions,
      rounds,
      serverNice: process.env.DSH_BENCH_SERVER_NICE === undefined ? null : Number(process.env.DSH_BENCH_SERVER_NICE),
      calls: record.calls,
      seconds: round(seconds, 2),
      callsPerSecond: round(record.calls / seconds, 1),
      roundsPerSecond: round((sessions * rounds) / seconds, 2),
      spawnBoundRoundsPerSecond: round(bound.roundsPerSecond, 2),
      throughputVsSpawnBound: round((sessions * rounds) / seconds / bound.roundsPerSecond, 3),
      latencyMs: {
        all: { p50: round(quantile(all, 0.5)), p99: round(quantile(all, 0.99)) },
        foreground: { p50: round(quantile(foreground, 0.5)), p99: round(quantile(foreground, 0.99)) },
        true: { p50: round(quantile(record.latency.true, 0.5)), p99: round(quantile(record.latency.true, 0.99)) },
      },
      serverEventLoopDelayMs: { p50: round(loaded.p50), p99: round(loaded.p99), max: round(loaded.max), startupPhaseP99: round(startup.p99) },
      // The same probe in an idle Node process during the load: what waiting for a CPU alone costs.
      idleProcessEventLoopDelayMs: { p50: round(idle.p50), p99: round(idle.p99), max: round(idle.max) },
      // CPU seconds per call: the server process, and this process's 50 SDK clients (they share the CPUs).
      cpuMsPerCall: { server: round((loaded.cpuSeconds * 1000) / record.calls), serverSystem: round((loaded.cpuSystemSeconds * 1000) / record.calls), clients: round((clientCpu.user + clientCpu.system) / 1000 / record.calls) },
      serverGc: Object.fromEntries(Object.entries(loaded.gc ?? {}).map(([kind, k]) => [kind, { count: k.count, totalMs: round(k.totalMs), maxMs: round(k.maxMs), over10ms: k.over10ms }])),
      serverRssMiB: { atEnd: round(loaded.rss / 2 ** 20, 1), peak: round(loaded.peakRss / 2 ** 20, 1) },
      errors: record.errors.length,
      firstErrors: record.errors.slice(0, 5),
      lost: record.lost,
      repeated: record.repeated,
    }
  } finally {
    control.kill('SIGKILL')
    rmSync(controlFile, { force: true })
    server.child.stdin.end()
    await new Promise((resolve) => {
      const timer = setTimeout(() => (server.child.kill('SIGKILL'), resolve()), 15_000)
      server.child.on('exit', () => (clearTimeout(timer), resolve()))
    })
    rmSync(workspace, { recursive: true, force: true })
    rmSync(probeFile, { force: true })
  }
}

// `node bench/load.mjs [--quick]` runs it alone.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await run({ quick: process.argv.includes('--quick'), log: (line) => console.error(`[bench] ${line}`) })
  console.log(JSON.stringify(result, null, 2))
}
