// Decision time of @deepseek-ai/dsh-bash-policy for a 20-command line, after warm-up.
// Run after `npx tsc -b`: node bench/policy.mjs [iterations]
import { readFileSync } from 'node:fs'
import { decide, extract, loadParser, parsePolicy } from '../packages/bash-policy/dist/index.js'

const iterations = Number(process.argv[2] ?? 2000)
const policyFile = new URL('../examples/policy.cautious.json', import.meta.url)
const policy = parsePolicy(readFileSync(policyFile, 'utf8'), 'policy.cautious.json')

// 20 simple commands: lists, a pipeline, a substitution (in backticks: outside the safe subset, so
// the line asks; `$(date +%F)` would be allowed since issue 25), a wrapper, quoting, a redirection to /dev/null.
const line = [
  'cd src',
  'ls -la | grep "\\.ts$" | sort | uniq -c | head -20',
  'cat package.json | jq .name',
  'git status --short',
  'git log --oneline -5',
  'echo "today is `date +%F`"',
  'wc -l *.ts',
  'find . -name "*.test.ts" -type f',
  "rg -n 'TODO' --glob '!dist'",
  'timeout 5 git diff --stat',
  'test -f README.md',
  'pwd',
  'echo done >/dev/null 2>&1',
].join(' && ')

// The same shape inside the safe subset (no substitution), so the subset check walks the whole tree
// and the decision is allow: the worst case for the constructive check.
const subsetLine = line.replace('echo "today is `date +%F`"', 'echo "today is $HOME"').replace('cat package.json | jq .name', 'cat package.json | head -5')

const t0 = process.hrtime.bigint()
const parser = await loadParser()
const loadMs = Number(process.hrtime.bigint() - t0) / 1e6

const commands = extract(parser, line, policy.maxCommands).filter((finding) => finding.kind === 'command').length
if (commands !== 20) throw new Error(`expected 20 commands in the benchmark line, found ${commands}`)

const round = (ms) => Math.round(ms * 1000) / 1000

async function measure(text) {
  for (let i = 0; i < 500; i++) await decide(policy, text)
  const times = []
  let decision
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint()
    decision = await decide(policy, text)
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
  }
  times.sort((a, b) => a - b)
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))]
  return { decision: decision.kind, medianMs: round(at(0.5)), p90Ms: round(at(0.9)), p99Ms: round(at(0.99)) }
}

const mixed = await measure(line)
const subset = await measure(subsetLine)
if (subset.decision !== "allow") throw new Error(`the subset line should be allowed, got ${subset.decision}: ${JSON.stringify(await decide(policy, subsetLine))}`)

console.log(
  JSON.stringify(
    {
      benchmark: 'bash-policy decide(), 20-command line',
      node: process.version,
      commands,
      bytes: Buffer.byteLength(line),
      parserLoadMs: round(loadMs),
      iterations,
      ...mixed,
      subsetLine: { bytes: Buffer.byteLength(subsetLine), ...subset, ratioToMixed: round(subset.medianMs / mixed.medianMs) },
      targetMedianMs: 1,
    },
    null,
    2,
  ),
)
