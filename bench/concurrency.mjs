/**
 * 4. Concurrency: 200 background tasks, each printing 1,000 numbered lines with small sleeps so
 * they overlap, polled round-robin with `bash_output` (one call per event-loop turn, like requests
 * arriving at a server). Every line must arrive exactly once, in order; every task's completion
 * notice exactly once. Event-loop delay is sampled over the whole run (monitorEventLoopDelay).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createApp, settle, tick } from './lib/app.mjs'
import { round, summary } from './lib/stats.mjs'

const STATUS = /\[status: ([^\]]*)\]$/
const DROPPED = /\[some output was dropped from memory; full output: [^\]]*\]\n$/

/**
 * One task: 1,000 numbered lines, a 100 ms pause every 20 lines (so every task lives ≥ 5 s and all
 * 200 overlap). The pause is bash's own `read -t` on a pipe that never delivers (no fork per pause),
 * so the tasks sleep instead of competing for the 2 CPUs: the loop measures the executor, not a
 * CPU-starved machine. Each `echo` is one write(2) of a whole line.
 */
function taskCommand(n, lines) {
  return `exec 3<> <(:); for ((i = 1; i <= ${lines}; i++)); do echo "task${n} line$i"; if ((i % 20 == 0)); then read -t 0.1 -u 3; fi; done; exit 0`
}

export async function run({ quick = false, log = () => {} } = {}) {
  const tasks = quick ? 50 : 200
  const lines = 1000
  const app = await createApp()
  const agent = app.agent('bench-concurrency')
  const notices = new Map()
  agent.onInject((entry) => {
    const text = entry.content.map((c) => c.text).join('\n')
    const id = /background bash task (\S+) finished/.exec(text)?.[1]
    if (id) notices.set(id, (notices.get(id) ?? 0) + 1)
  })
  // The whole run, and its two phases: starting the tasks (200 spawns) and polling them.
  const histogram = monitorEventLoopDelay({ resolution: 10 })
  const startPhase = monitorEventLoopDelay({ resolution: 10 })
  const pollPhase = monitorEventLoopDelay({ resolution: 10 })
  try {
    log(`concurrency: ${tasks} tasks × ${lines} lines`)
    histogram.enable()
    startPhase.enable()
    const t0 = performance.now()
    const state = []
    const startCalls = []
    for (let n = 0; n < tasks; n++) {
      const callStarted = performance.now()
      const text = await app.text('bash', { command: taskCommand(n, lines), description: 'Print numbered lines in background', run_in_background: true }, agent)
      const id = /started background task (\S+)/.exec(text)?.[1]
      startCalls.push(performance.now() - callStarted)
      state.push({ n, id, pending: '', got: [], done: false, lossy: false, finalStatus: undefined, reads: 0 })
      await tick()
    }
    const startedMs = performance.now() - t0
    startPhase.disable()
    pollPhase.enable()
    let polls = 0
    let rounds = 0
    while (state.some((s) => !s.done)) {
      rounds++
      for (const s of state) {
        if (s.done) continue
        let text = await app.text('bash_output', { task_id: s.id }, agent)
        polls++
        s.reads++
        const status = STATUS.exec(text)
        if (!status) throw new Error(`no status line in bash_output of ${s.id}: ${text.slice(-200)}`)
        // What precedes the status line ends in a newline: the body's own, or the one added before
        // the markers when the body did not end in one (the text does not say which; every echo
        // here writes a whole line at once, so reads end at line boundaries and a torn line would
        // show up as a mangled line below).
        text = text.slice(0, status.index)
        if (DROPPED.test(text)) {
          s.lossy = true
          text = text.replace(DROPPED, '')
        }
        if (text !== '(no new output)\n') {
          const chunk = s.pending + text
          const parts = chunk.split('\n')
          s.pending = parts.pop()
          s.got.push(...parts)
        }
        // The read that reports the end carries everything (the executor ends the streams first).
        if (status[1] !== 'running') {
          s.done = true
          s.finalStatus = status[1]
        }
        await tick()
      }
      await settle(10)
    }
    const wallMs = performance.now() - t0
    histogram.disable()
    pollPhase.disable()
    await settle(50)

    let lost = 0
    let repeated = 0
    let outOfOrder = 0
    let mangled = 0
    let badStatus = 0
    for (const s of state) {
      if (s.pending !== '') s.got.push(s.pending)
      const seen = new Map()
      let last = 0
      for (const line of s.got) {
        const m = /^task(\d+) line(\d+)$/.exec(line)
        if (!m || Number(m[1]) !== s.n) {
          mangled++
          continue
        }
        const i = Number(m[2])
        seen.set(i, (seen.get(i) ?? 0) + 1)
        if (i <= last) outOfOrder++
        last = i
      }
      for (let i = 1; i <= lines; i++) {
        const k = seen.get(i) ?? 0
        if (k === 0) lost++
        else if (k > 1) repeated += k - 1
      }
      if (s.finalStatus !== 'completed, exit code: 0') badStatus++
    }
    const noticeCounts = state.map((s) => notices.get(s.id) ?? 0)
    const ms = (ns) => round(ns / 1e6, 2)
    const eld = (h) => ({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean) })
    return {
      tasks,
      linesPerTask: lines,
      lines: tasks * lines,
      lost,
      repeated,
      outOfOrder,
      mangled,
      lossyReads: state.filter((s) => s.lossy).length,
      badStatus,
      noticesMissing: noticeCounts.filter((k) => k === 0).length,
      noticesRepeated: noticeCounts.filter((k) => k > 1).length,
      polls,
      pollRounds: rounds,
      startAllMs: round(startedMs, 1),
      // One `bash` call with run_in_background: almost all of it is the synchronous spawn (fork+exec).
      startCallMs: summary(startCalls),
      wallMs: round(wallMs, 1),
      eventLoopDelayMs: eld(histogram),
      eventLoopDelayStartPhaseMs: eld(startPhase),
      eventLoopDelayPollPhaseMs: eld(pollPhase),
    }
  } finally {
    for (const h of [histogram, startPhase, pollPhase]) h.disable()
    await app.dispose()
  }
}
