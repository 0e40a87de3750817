/**
 * The spawn-bound limit of this machine for the load benchmark: the same commands, the same
 * concurrency, started by a minimal Node process with `child_process.spawn` (pipes drained), no MCP,
 * no executor. Prints {rounds, seconds, roundsPerSecond} as JSON.
 *
 *   node bench/lib/spawn-bound.mjs SESSIONS ROUNDS
 */
import { spawn } from 'node:child_process'
import { LOAD_COMMANDS } from './load-commands.mjs'

const sessions = Number(process.argv[2] ?? 50)
const rounds = Number(process.argv[3] ?? 20)

function run(command) {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', command], { stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let bytes = 0
    child.stdout.on('data', (chunk) => (bytes += chunk.length))
    child.stderr.resume()
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`${command} exited ${code}`))))
  })
}

const started = performance.now()
await Promise.all(
  Array.from({ length: sessions }, async () => {
    for (let round = 0; round < rounds; round++) {
      await run(LOAD_COMMANDS.fast)
      await run(LOAD_COMMANDS.lines)
      await run(LOAD_COMMANDS.background)
    }
  }),
)
const seconds = (performance.now() - started) / 1000
process.stdout.write(JSON.stringify({ rounds: sessions * rounds, seconds, roundsPerSecond: (sessions * rounds) / seconds }))
