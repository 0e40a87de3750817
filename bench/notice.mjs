/**
 * 5. Notice latency: from the moment a background task's last process exits to the moment its
 * completion notice is injected into the owning agent (the real `Agents` service, `onInject`).
 * The command's very last act is `exec date +%s%N > file`: `date` replaces the shell, so the
 * timestamp it writes is taken a few microseconds before the last process of the task exits.
 * Tasks run one at a time (latency of one notice), then N at once (a burst of notices): all N
 * are started first and wait on a FIFO (`read < go`); opening and closing its write end releases
 * them together, so the burst measures many notices at once, not the starting of the tasks.
 */
import { execFileSync } from 'node:child_process'
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { createApp, settle } from './lib/app.mjs'
import { pidsMatching } from './lib/proc.mjs'
import { round, summary } from './lib/stats.mjs'

export async function run({ quick = false, log = () => {} } = {}) {
  const sequential = quick ? 5 : 30
  const burst = quick ? 10 : 50
  const app = await createApp()
  const agent = app.agent('bench-notice')
  const injectedAt = new Map()
  agent.onInject((entry) => {
    const at = performance.timeOrigin + performance.now() // wall-clock ms, sub-ms resolution
    const text = entry.content.map((c) => c.text).join('\n')
    const id = /background bash task (\S+) finished/.exec(text)?.[1]
    if (id && !injectedAt.has(id)) injectedAt.set(id, { at, text })
  })
  const start = async (k, wait) => {
    const file = join(app.workspace, `exit-${k}.ns`)
    const text = await app.text(
      'bash',
      { command: `${wait}; exec date +%s%N > ${file}`, description: 'Wait then record the exit time', run_in_background: true },
      agent,
    )
    return { id: /started background task (\S+)/.exec(text)[1], file }
  }
  const latency = async ({ id, file }) => {
    const deadline = Date.now() + 20_000
    while (!injectedAt.has(id)) {
      if (Date.now() > deadline) throw new Error(`no notice for ${id}`)
      await settle(5)
    }
    const exitMs = Number(BigInt(readFileSync(file, 'utf8').trim()) / 1000n) / 1000
    rmSync(file, { force: true })
    return injectedAt.get(id).at - exitMs
  }
  try {
    log(`notice latency: ${sequential} one at a time, then a burst of ${burst}`)
    const one = []
    for (let k = 0; k < sequential; k++) one.push(await latency(await start(k, 'sleep 0.2')))
    const fifo = join(app.workspace, 'go')
    execFileSync('mkfifo', [fifo])
    const tasks = []
    for (let k = 0; k < burst; k++) tasks.push(await start(`b${k}`, `read -r x < ${fifo}`))
    // Every task's shell is blocked opening the FIFO (its open(2) waits for a writer).
    const deadline = Date.now() + 60_000
    while (pidsMatching(`read -r x < ${fifo}`).length < burst && Date.now() < deadline) await settle(20)
    await settle(200)
    closeSync(openSync(fifo, 'w')) // releases them all: each reader sees end-of-file
    const many = []
    for (const task of tasks) many.push(await latency(task))
    const sample = injectedAt.values().next().value?.text
    return {
      sequential: { ...summary(one), all: one.map((x) => round(x, 1)) },
      burst: { tasks: burst, ...summary(many) },
      noticeText: sample,
      notices: injectedAt.size,
    }
  } finally {
    await app.dispose()
  }
}
