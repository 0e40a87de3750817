/**
 * 3. Kill: a background command starts 100 sleeping descendants (40 plain `&`, 30 `setsid`,
 * 30 `nohup … &`), then `bash_kill`. Measures the time from the call to the moment no process of
 * the tree is left (watched from a worker thread through /proc), the time until `bash_kill`
 * returns, and survivors (must be 0). Cooperative tree, and a tree that ignores SIGTERM
 * (`trap '' TERM`, inherited by every descendant), with the default graceMs (3000).
 */
import { Worker } from 'node:worker_threads'
import { spawn } from 'node:child_process'
import { BASH, createApp, settle } from './lib/app.mjs'
import { pidsMatching } from './lib/proc.mjs'
import { median, round, summary } from './lib/stats.mjs'

const WATCH = new URL('./lib/watch-worker.mjs', import.meta.url)
const GRACE_MS = 3000 // the default graceMs
const now = () => performance.timeOrigin + performance.now()

function treeCommand(marker, ignoreTerm) {
  const s = `sleep ${marker}`
  return [
    ignoreTerm ? "trap '' TERM" : ':',
    `for i in $(seq 40); do ${s} & done`,
    `for i in $(seq 30); do setsid ${s} & done`,
    `for i in $(seq 30); do nohup ${s} >/dev/null 2>&1 & done`,
    'wait',
  ].join('; ')
}

async function waitFor(check, limitMs, what) {
  const deadline = Date.now() + limitMs
  for (;;) {
    const value = check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await settle(20)
  }
}

/**
 * One kill. `app` undefined: the bare baseline — the same tree started by a bare spawn and killed
 * by hand (SIGTERM to each of its 101 known pids; for the TERM-ignoring tree SIGKILL after
 * graceMs), which is the floor for "how fast can 101 processes die on this machine now".
 */
async function oneKill(app, agent, ignoreTerm, rep) {
  const marker = `86400.${process.pid}${rep}${ignoreTerm ? 1 : 0}${Math.floor(Math.random() * 1e6)}`
  let id
  let bare
  if (app) {
    const started = await app.text('bash', { command: treeCommand(marker, ignoreTerm), description: 'Start a hundred sleeping descendants', run_in_background: true }, agent)
    id = /started background task (\S+)/.exec(started)?.[1]
    if (!id) throw new Error(`unexpected start text: ${started}`)
  } else {
    bare = spawn(BASH, ['--noprofile', '--norc', '-c', treeCommand(marker, ignoreTerm)], { detached: true, stdio: 'ignore' })
    bare.unref()
  }
  // argv starts with `sleep`: setsid and nohup have exec'd already (their own argv also holds the marker).
  const sleepArgv = new RegExp(`^sleep\0${marker.replace('.', '\\.')}\0`)
  // The whole tree: 100 sleepers and the shell (whose -c text holds the marker), nothing in between.
  const all = await waitFor(() => {
    const sleepers = pidsMatching(sleepArgv)
    const tree = pidsMatching(marker)
    return sleepers.length === 100 && tree.length === 101 ? tree : undefined
  }, 20_000, '100 sleepers')
  const watcher = new Worker(WATCH, { workerData: { pids: all } })
  let ready
  const isReady = new Promise((resolve) => (ready = resolve))
  const gone = new Promise((resolve) =>
    watcher.on('message', (m) => {
      if (m.ready !== undefined) ready(m.ready)
      if (m.goneAt !== undefined) resolve(m.goneAt)
    }),
  )
  // The watcher must be polling before the clock starts (a worker can take a while to boot).
  const watched = await isReady
  if (watched !== all.length) throw new Error(`watcher sees ${watched} of ${all.length} processes`)
  const t0 = now()
  let text
  if (app) text = await app.text('bash_kill', { task_id: id }, agent)
  else {
    const signalAll = (signal) => {
      for (const pid of all) {
        try {
          process.kill(pid, signal)
        } catch {}
      }
    }
    signalAll('SIGTERM')
    if (ignoreTerm) {
      await settle(GRACE_MS)
      signalAll('SIGKILL')
    }
    text = '(bare kill)'
  }
  const returnedAt = now()
  const goneAt = await Promise.race([gone, settle(10_000).then(() => NaN)])
  watcher.postMessage('stop')
  await watcher.terminate()
  const survivorsAtReturn = pidsMatching(marker).length
  await settle(200)
  const survivorsLater = pidsMatching(marker).length
  const status = app ? await app.text('bash_output', { task_id: id }, agent) : '(bare)'
  return {
    tree: all.length,
    goneMs: goneAt - t0,
    returnMs: returnedAt - t0,
    killText: text,
    status: status.split('\n').pop(),
    survivorsAtReturn,
    survivorsLater,
  }
}

export async function run({ quick = false, log = () => {} } = {}) {
  const app = await createApp() // default graceMs: 3000
  const agent = app.agent('bench-kill')
  const out = { containment: app.bash.containment, graceMs: GRACE_MS }
  try {
    for (const [name, ignoreTerm, reps] of [
      ['cooperative', false, quick ? 2 : 7],
      ['ignoresTERM', true, quick ? 1 : 3],
    ]) {
      log(`kill: ${name}, ${reps} rep(s) each of bash_kill and a bare kill, alternating`)
      const runs = { tool: [], bare: [] }
      for (let i = 0; i < reps; i++) {
        const order = i % 2 === 0 ? ['tool', 'bare'] : ['bare', 'tool']
        for (const which of order) runs[which].push(await oneKill(which === 'tool' ? app : undefined, agent, ignoreTerm, i))
      }
      const tool = runs.tool
      out[name] = {
        reps,
        processesPerTree: tool.map((r) => r.tree),
        goneMs: summary(tool.map((r) => r.goneMs)),
        returnMs: summary(tool.map((r) => r.returnMs)),
        goneMsAll: tool.map((r) => round(r.goneMs, 1)),
        bareGoneMs: summary(runs.bare.map((r) => r.goneMs)),
        bareGoneMsAll: runs.bare.map((r) => round(r.goneMs, 1)),
        survivors: Math.max(...tool.map((r) => Math.max(r.survivorsAtReturn, r.survivorsLater))),
        bareSurvivors: Math.max(...runs.bare.map((r) => Math.max(r.survivorsAtReturn, r.survivorsLater))),
        killText: tool[0].killText,
        statusLine: tool[0].status,
      }
    }
    return out
  } finally {
    await app.dispose()
  }
}
