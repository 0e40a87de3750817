/**
 * The floor of bench/peers.mjs: a Node process that does nothing but run commands the way the
 * simplest tool would, in its own process: `spawn('bash', ['--noprofile', '--norc', '-c', CMD])`,
 * keep every byte of stdout and stderr, decode them to one string when the process closes.
 *
 * A process of its own, not the bench process: the bench holds the clients of every server and
 * the megabytes they return, and a fork copies the page tables of all of it (bench/README.md,
 * "Launcher"), so spawning from there charged the floor for the bench's own memory.
 *
 * Protocol: one JSON line per request on stdin, `{"id": N, "command": "…"}`; one JSON line per
 * answer on stdout, `{"id": N, "length": <characters>, "head": "…", "tail": "…", "isError": bool}`
 * (the text itself stays here: copying megabytes back would be the bench's cost, not the floor's).
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'

function run(command) {
  return new Promise((resolve) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', command], { stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    const err = []
    child.stdout.on('data', (chunk) => out.push(chunk))
    child.stderr.on('data', (chunk) => err.push(chunk))
    child.on('close', (code) => resolve({ text: Buffer.concat(out).toString() + Buffer.concat(err).toString(), isError: code !== 0 }))
  })
}

let pending = 0
let ended = false
createInterface({ input: process.stdin })
  .on('line', async (line) => {
    const { id, command } = JSON.parse(line)
    pending++
    const { text, isError } = await run(command)
    process.stdout.write(`${JSON.stringify({ id, length: text.length, head: text.slice(0, 300), tail: text.slice(-300), isError })}\n`)
    if (--pending === 0 && ended) process.exit(0)
  })
  .on('close', () => {
    ended = true
    if (pending === 0) process.exit(0)
  })
