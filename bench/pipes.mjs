#!/usr/bin/env node
/**
 * Issue 13: what real pipes and the descriptor-closing preludes cost.
 *
 *   node bench/pipes.mjs [--quick]     (after `npx tsc -b`)
 *
 * Interleaved rounds (each round runs every variant once, in a rotated order), medians and p90:
 *   true      `ctx.bash.run` of `true` with outputPipes "fifo" (FIFO pool) vs "socket" (Node's socketpairs)
 *   seq       `seq 1 10000000` (78,888,897 bytes of stdout) the same two ways
 *   prelude   a bare spawn of `bash --noprofile --norc -c true` with BASH_ENV = the new prelude
 *             (cgroup join skipped, descriptors closed) vs BASH_ENV unset
 *   launcher  a bare spawn of a wrapper start: the new `bash -c <launcher>` (closes descriptors,
 *             keeps fd 3) vs the old `/bin/sh -c 'exec "$@"'`, both exec'ing `bash -c true`
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { LocalExecutor } from '../packages/bash-local/dist/index.js'
import { launcherScript, preludeScript } from '../packages/bash-local/dist/prelude.js'
import { median, p90, rotate, round } from './lib/stats.mjs'

const quick = process.argv.includes('--quick')
const BASH = '/bin/bash'

function load(config) {
  const ctx = new Context()
  ctx.plugin(LocalExecutor, config)
  return ctx.get('bash')
}

function bare(file, args, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], env })
    child.stdout.resume()
    child.stderr.resume()
    child.once('error', reject)
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))))
  })
}

async function measure(variants, rounds, warmup) {
  const samples = Object.fromEntries(variants.map((v) => [v.name, []]))
  for (let i = 0; i < warmup + rounds; i++) {
    for (const v of rotate(variants, i)) {
      const t = performance.now()
      await v.fn()
      if (i >= warmup) samples[v.name].push(performance.now() - t)
    }
  }
  return samples
}

const fifo = load({ outputPipes: 'fifo' })
const socket = load({ outputPipes: 'socket' })
const dir = mkdtempSync(join(tmpdir(), 'dsh-bench-pipes-'))
const prelude = join(dir, 'prelude.sh')
writeFileSync(prelude, preludeScript())
const envWith = { ...process.env, BASH_ENV: prelude }
const envWithout = { ...process.env }
delete envWithout.BASH_ENV

const expectText = async (bash, command, check) => {
  const r = await bash.run(bash.resolve({ command }))
  if (!check(r)) throw new Error(`unexpected result for ${command}: ${JSON.stringify(r).slice(0, 300)}`)
}
const seqBytes = 78_888_897

const groups = {
  true: await measure(
    [
      { name: 'fifo', fn: () => expectText(fifo, 'true', (r) => r.exitCode === 0 && r.stdout.text === '') },
      { name: 'socket', fn: () => expectText(socket, 'true', (r) => r.exitCode === 0 && r.stdout.text === '') },
    ],
    quick ? 40 : 300,
    quick ? 5 : 20,
  ),
  seq: await measure(
    [
      { name: 'fifo', fn: () => expectText(fifo, 'seq 1 10000000', (r) => r.stdout.totalBytes === seqBytes) },
      { name: 'socket', fn: () => expectText(socket, 'seq 1 10000000', (r) => r.stdout.totalBytes === seqBytes) },
    ],
    quick ? 3 : 9,
    1,
  ),
  prelude: await measure(
    [
      { name: 'new prelude', fn: () => bare(BASH, ['--noprofile', '--norc', '-c', 'true'], envWith) },
      { name: 'no prelude', fn: () => bare(BASH, ['--noprofile', '--norc', '-c', 'true'], envWithout) },
    ],
    quick ? 40 : 300,
    quick ? 5 : 20,
  ),
  launcher: await measure(
    [
      { name: 'bash launcher', fn: () => bare(BASH, ['--noprofile', '--norc', '-c', launcherScript(1), 'dsh-bash', BASH, '--noprofile', '--norc', '-c', 'true'], envWithout) },
      { name: 'sh launcher (old)', fn: () => bare('/bin/sh', ['-c', 'exec "$@"', 'dsh-bash', BASH, '--noprofile', '--norc', '-c', 'true'], envWithout) },
    ],
    quick ? 40 : 300,
    quick ? 5 : 20,
  ),
}
await fifo.shutdown()
await socket.shutdown()
rmSync(dir, { recursive: true, force: true })

const report = {}
for (const [group, samples] of Object.entries(groups)) {
  const [a, b] = Object.keys(samples)
  const ma = median(samples[a])
  const mb = median(samples[b])
  report[group] = {
    [a]: { median: round(ma), p90: round(p90(samples[a])), n: samples[a].length },
    [b]: { median: round(mb), p90: round(p90(samples[b])), n: samples[b].length },
    ratio: round(ma / mb),
    differenceMs: round(ma - mb),
  }
  console.log(`${group.padEnd(9)} ${a}: ${ma.toFixed(2)} ms (p90 ${p90(samples[a]).toFixed(2)})  ${b}: ${mb.toFixed(2)} ms (p90 ${p90(samples[b]).toFixed(2)})  ratio ${(ma / mb).toFixed(3)}  difference ${(ma - mb).toFixed(2)} ms`)
}
console.log(JSON.stringify(report))
