/**
 * MCP server start-up (issue 14, point 4): spawn → the `initialize` answer on stdio, per server,
 * interleaved rounds in a rotated order, median and p90. Run after `npx tsc -b`:
 *
 *   node bench/startup.mjs [--rounds N] [--commands DIR] [--also NAME=PATH/main.js …] [--tools] [--otel]
 *
 * Servers:
 * - `dsh-bash`: `node packages/cli/dist/main.js mcp --workdir <tmp>` (local executor, defaults);
 * - `sdk-minimal`: a minimal SDK stdio server with one tool (bench/lib/minimal-sdk-server.mjs): the
 *   floor any server built on @modelcontextprotocol/sdk pays on this machine;
 * - `mcp-server-commands`: when `--commands DIR` names a directory where it is installed
 *   (`npm install mcp-server-commands` in a temp dir outside the repo; never in the lockfile);
 * - `node-bare`: `node -e` that answers at once, without loading anything (process start alone);
 * - `--also NAME=PATH`: another build of the CLI (e.g. the commit before a change, built elsewhere).
 * - `--otel`: also `dsh-bash+otel`, the same server with OTEL_EXPORTER_OTLP_ENDPOINT set (to a closed
 *   port on 127.0.0.1: nothing is exported, no span is made; what loading the SDK costs).
 * `--tools`: time to the answer of `tools/list` instead (initialize, initialized, tools/list sent at
 * once): the start with the tools loaded, which is where the tracer loads; servers that are not
 * dsh-bash builds (node-bare, sdk-minimal, mcp-server-commands) are then left out.
 * The target is about dsh-bash's median; ratios against the others say how much is ours.
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const { values } = parseArgs({
  options: { rounds: { type: 'string' }, commands: { type: 'string' }, also: { type: 'string', multiple: true }, tools: { type: 'boolean' }, otel: { type: 'boolean' } },
})
const rounds = Number(values.rounds ?? 25)
const here = (path) => fileURLToPath(new URL(path, import.meta.url))
const workspace = mkdtempSync(join(tmpdir(), 'dsh-bench-startup-'))

const INIT = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
})}\n`

const TOOLS_LIST = `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`
/** Variables of a server's own (the others inherit this process's, without any OTEL_ one). */
const envOf = {}
const baseEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')))

const servers = {
  'dsh-bash': [process.execPath, here('../packages/cli/dist/main.js'), 'mcp', '--workdir', workspace],
  'sdk-minimal': [process.execPath, here('./lib/minimal-sdk-server.mjs')],
  'node-bare': [
    process.execPath,
    '-e',
    `process.stdin.once('data',()=>process.stdout.write(JSON.stringify({jsonrpc:'2.0',id:1,result:{}})+'\\n'));process.stdin.on('end',()=>process.exit(0))`,
  ],
}
for (const spec of values.also ?? []) {
  const [name, path] = spec.split('=')
  if (!name || !path || !existsSync(path)) throw new Error(`--also: expected NAME=PATH/main.js of a built CLI, got ${JSON.stringify(spec)}`)
  servers[name] = [process.execPath, path, 'mcp', '--workdir', workspace]
}
if (values.otel) {
  servers['dsh-bash+otel'] = servers['dsh-bash']
  envOf['dsh-bash+otel'] = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }
}
if (values.tools) {
  for (const name of ['sdk-minimal', 'node-bare']) delete servers[name]
}
if (values.commands && !values.tools) {
  const pkg = join(values.commands, 'node_modules', 'mcp-server-commands', 'package.json')
  if (!existsSync(pkg)) throw new Error(`--commands: ${pkg} does not exist`)
  const meta = JSON.parse(readFileSync(pkg, 'utf8'))
  const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin)[0]
  servers['mcp-server-commands'] = [process.execPath, join(values.commands, 'node_modules', 'mcp-server-commands', bin)]
}

/**
 * One start: ms from spawn to the first byte of the initialize answer (with `--tools`: of the
 * tools/list answer); checks it is that answer.
 */
function once(name, [command, ...args]) {
  const id = values.tools ? 2 : 1
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'], env: { ...baseEnv, ...envOf[name] } })
    let out = ''
    let answered = false
    child.stdout.on('data', (chunk) => {
      out += chunk
      if (answered) return
      const line = out.split('\n').slice(0, -1).find((l) => JSON.parse(l).id === id)
      if (line === undefined) return
      answered = true
      const ms = performance.now() - started
      const answer = JSON.parse(line)
      child.stdin.end()
      child.once('exit', () => (answer.result ? resolve(ms) : reject(new Error(`not an answer to request ${id}: ${out.slice(0, 200)}`))))
    })
    child.once('error', reject)
    child.stdin.write(values.tools ? INIT + TOOLS_LIST : INIT)
  })
}

const samples = Object.fromEntries(Object.keys(servers).map((name) => [name, []]))
const names = Object.keys(servers)
for (let round = -2; round < rounds; round++) {
  // Rotated order: no server always runs first (after an idle pause) or last.
  for (let i = 0; i < names.length; i++) {
    const name = names[(i + Math.max(round, 0)) % names.length]
    const ms = await once(name, servers[name])
    if (round >= 0) samples[name].push(ms)
  }
  process.stderr.write('.')
}
process.stderr.write('\n')
rmSync(workspace, { recursive: true, force: true })

const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}
const stats = Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, { median: quantile(xs, 0.5), p90: quantile(xs, 0.9) }]))
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
console.log(`spawn → ${values.tools ? 'tools/list' : 'initialize'} answer on stdio, ${rounds} interleaved rounds (load average ${load})`)
for (const [name, s] of Object.entries(stats)) {
  // Paired: the same round's two starts, a moment apart (the load moves less within a round).
  const paired = () => quantile(samples[name].map((ms, i) => samples['dsh-bash'][i] / ms), 0.5).toFixed(2)
  const ratio = name === 'dsh-bash' ? '' : `   dsh-bash/${name}: ×${(stats['dsh-bash'].median / s.median).toFixed(2)} (paired ×${paired()})`
  console.log(`${name.padEnd(20)} median ${s.median.toFixed(0).padStart(5)} ms   p90 ${s.p90.toFixed(0).padStart(5)} ms${ratio}`)
}
console.log(JSON.stringify({ rounds, until: values.tools ? 'tools/list' : 'initialize', load, stats, samples }))
