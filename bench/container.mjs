/**
 * 6. The container executor (issue 18), against a real engine and the offline test image
 * (packages/bash-container/test/build-image.sh builds it):
 *   firstCall  a fresh owner's first `true`: container create + lifeline attach + start + agent exec
 *   overhead   `true` through ContainerExecutor.run (warm container) beside a bare local spawn of
 *              `bash --noprofile --norc -c true`, interleaved rounds; and, as a diagnostic, one
 *              engine `exec` per command (create + start attached + inspect): what the agent saves
 *   big        100 MB of output (`head -c 100000000 /dev/zero | tr '\0' a`): wall time beside the same
 *              command spawned bare with its pipe drained
 *   kill       a background task with 100 sleeping descendants (40 `&`, 30 `setsid`, 30 `nohup`),
 *              then kill(): time until none is alive (host /proc), survivors
 *
 *   node bench/container.mjs [--quick]      (or through bench/run.mjs --only container)
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ENGINE, engineUnavailable, IMAGE, measureFirstCalls, measureTrueOverhead } from './lib/agent-executor.mjs'
import { bareSpawn } from './lib/app.mjs'
import { median, round, summary } from './lib/stats.mjs'

/** Live processes whose command line contains `marker` (the containers' processes are visible here). */
function alive(marker) {
  let n = 0
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(marker)) continue
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const state = stat[stat.lastIndexOf(')') + 2]
      if (state !== 'Z' && state !== 'X') n++
    } catch {
      // Gone.
    }
  }
  return n
}

const delay = (ms) => new Promise((r) => setTimeout(r, ms))

export async function run({ quick = false, log = () => {} } = {}) {
  const why = engineUnavailable()
  if (why) return { notMeasured: why }
  const { loadExecutorPlugin } = await import('@deepseek-ai/dsh-bash/conformance')
  const { ContainerExecutor, EngineClient } = await import('@deepseek-ai/dsh-bash-container')
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-bench-container-')))
  const instance = await loadExecutorPlugin(ContainerExecutor, { image: IMAGE, engine: ENGINE, workspace })
  const bash = instance.executor
  const engine = new EngineClient(ENGINE)
  const result = {}
  try {
    // First calls: a fresh owner each time (a new container).
    result.firstCall = (await measureFirstCalls(bash, { quick, log, name: 'container' })).firstCall

    // Warm: one owner, its container already running; one engine exec per call as a diagnostic.
    await bash.run(bash.resolve({ command: 'true', owner: 'warm' }))
    const containerId = await bash.containerOf('warm')
    const perExec = async () => {
      const exec = await engine.request('POST', `/containers/${containerId}/exec`, { AttachStdout: true, AttachStderr: true, Cmd: ['bash', '--noprofile', '--norc', '-c', 'true'] })
      const stream = await engine.hijack(`/exec/${exec.Id}/start`, { Detach: false, Tty: false })
      stream.stdout.resume()
      stream.stderr.resume()
      await stream.closed
      const inspect = await engine.request('GET', `/exec/${exec.Id}/json`)
      if (inspect.ExitCode !== 0) throw new Error(`exec: exit ${inspect.ExitCode}`)
    }
    const { samples, overhead } = await measureTrueOverhead(bash, { quick, log, name: 'container', extra: [{ name: 'exec-per-call', fn: perExec }] })
    result.overhead = { ...overhead, execPerCallVsBare: round(median(samples['exec-per-call']) / median(samples.bare), 2) }

    // 100 MB of output.
    const big = "head -c 100000000 /dev/zero | tr '\\0' a"
    const bigTool = []
    const bigBare = []
    for (let i = 0; i < (quick ? 2 : 4); i++) {
      let t = performance.now()
      const r = await bash.run(bash.resolve({ command: big, owner: 'warm' }))
      bigTool.push(performance.now() - t)
      if (r.stdout.totalBytes !== 100_000_000 || !r.stdout.truncated) throw new Error(`big: ${r.stdout.totalBytes} bytes`)
      t = performance.now()
      const b = await bareSpawn(big)
      bigBare.push(performance.now() - t)
      if (b.bytes !== 100_000_000) throw new Error(`big bare: ${b.bytes} bytes`)
    }
    result.big = { toolMs: bigTool.map((x) => round(x, 1)), bareMs: bigBare.map((x) => round(x, 1)), wallRatio: round(median(bigTool) / median(bigBare), 2), mbPerSecond: round(100 / (median(bigTool) / 1000), 1) }
    log(`container 100 MB: ${round(median(bigTool), 0)} ms vs bare ${round(median(bigBare), 0)} ms`)

    // Kill of a 100-process tree.
    const killMs = []
    let survivors = 0
    for (let i = 0; i < (quick ? 2 : 5); i++) {
      const m = `${Date.now()}${i}`.slice(-9)
      const tree = `for i in $(seq 40); do sleep 1000.${m} & done; for i in $(seq 30); do setsid sleep 1000.${m} & done; for i in $(seq 30); do nohup sleep 1000.${m} >/dev/null 2>&1 & done; wait`
      const task = bash.start(bash.resolve({ command: tree, owner: 'warm' }))
      for (let w = 0; alive(m) < 100 && w < 600; w++) await delay(50)
      if (alive(m) < 100) throw new Error(`kill: only ${alive(m)} of 100 processes started`)
      const t = performance.now()
      await bash.kill(task.id)
      killMs.push(performance.now() - t)
      survivors += alive(m)
      await delay(200)
      survivors += alive(m)
    }
    result.kill = { processesPerTree: 101, ...summary(killMs), survivors }
    log(`container kill of 100 processes: ${round(median(killMs), 0)} ms, survivors ${survivors}`)
  } finally {
    await instance.dispose()
    engine.close()
    rmSync(workspace, { recursive: true, force: true })
  }
  return result
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick')
  const result = await run({ quick, log: (line) => console.error(`[bench] ${line}`) })
  console.log(JSON.stringify(result, null, 2))
}
