import { describe, expect, it } from 'vitest'
import { decide } from '../src/index.js'
import { oraclePolicy, violations } from './oracle/judge.js'
import { oracleUnavailable, runLines } from './oracle/sandbox.js'
import { oracleCorpus } from './oracle-corpus.js'

/**
 * The differential oracle: every corpus line the policy allows is run by real bash under strace
 * in a bubblewrap sandbox, and whatever it executed outside the allow rules, wrote or connected is
 * a policy error. Attack lines must never be allowed; harmless ones should be (≥ 95%).
 * DSH_POLICY_ORACLE_FULL=1 also runs every line the policy refuses, to show what each attack does.
 */
const unavailable = oracleUnavailable()
if (unavailable) console.log(`[bash-policy oracle] skipped: ${unavailable}`)
const full = process.env.DSH_POLICY_ORACLE_FULL === '1'

/** Attacks the oracle itself must see as harmful: if it does not, the oracle is blind, not the policy right. */
const CANARIES = [
  "x=$'a[\\x24(touch m)]'; echo $((x))",
  'BASH_CMDS[ls]=/usr/bin/touch; ls m',
  'PATH=$PWD/evilbin:$PATH; ls',
  '[[ x ]] >m',
  'echo "$(>m)"',
  "printf 'DATA\\n' </dev/tcp/127.0.0.1/9 1<&0",
  'cat <<EOF\nE\\\nOF\ntouch m\nEOF',
  'echo "${q:-\'$(touch m)\'}"',
  '[ a > m ]',
  "sed -n 'w m' a.txt",
  'test -v "$b"',
  'printf "$fmt" "$b" 1',
  'echo {a[x]}>/dev/null',
  // Safe only because the sandbox has no capabilities: the attempt is what the oracle sees.
  'date -s 2020-01-01',
]

describe.skipIf(unavailable)('the differential oracle (real bash under strace in bwrap)', () => {
  it('has at least 600 corpus lines, every family non-empty', () => {
    expect(oracleCorpus.length).toBeGreaterThanOrEqual(600)
    const seen = new Set<string>()
    const duplicates = oracleCorpus.filter((entry) => seen.has(entry.line) || !seen.add(entry.line)).map((entry) => entry.line)
    expect(duplicates).toEqual([])
  })

  it('sees the canary attacks do harm (the oracle is not blind)', async () => {
    const traces = await runLines(CANARIES)
    const blind = CANARIES.filter((_line, i) => violations(traces[i]).length === 0 || !traces[i].started)
    expect(blind).toEqual([])
  })

  it('allows no corpus line that executes a program outside the allow rules, writes or connects; allows ≥ 95% of the harmless lines', async () => {
    const decisions = await Promise.all(oracleCorpus.map((entry) => decide(oraclePolicy, entry.line)))
    const allowedAttacks = oracleCorpus.filter((entry, i) => !entry.harmless && decisions[i].kind === 'allow').map((entry) => entry.line)
    const harmless = oracleCorpus.filter((entry) => entry.harmless)
    const refused = oracleCorpus
      .map((entry, i) => ({ entry, decision: decisions[i] }))
      .filter(({ entry, decision }) => entry.harmless && decision.kind !== 'allow')
      .map(({ entry, decision }) => `${JSON.stringify(entry.line)}: ${decision.reason}`)
    const toRun = oracleCorpus.filter((entry, i) => full || decisions[i].kind === 'allow')
    const started = performance.now()
    const traces = await runLines(toRun.map((entry) => entry.line))
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    const wrong: string[] = []
    const harmfulAttacks: string[] = []
    toRun.forEach((entry, i) => {
      const found = violations(traces[i])
      const decision = decisions[oracleCorpus.indexOf(entry)]
      if (!traces[i].started) wrong.push(`${JSON.stringify(entry.line)}: the oracle did not run it`)
      if (found.length && decision.kind === 'allow') wrong.push(`${JSON.stringify(entry.line)}: allowed, but ${found.join('; ')}`)
      if (found.length && !entry.harmless) harmfulAttacks.push(entry.line)
      if (found.length && entry.harmless) wrong.push(`${JSON.stringify(entry.line)} is marked harmless, but ${found.join('; ')}`)
    })
    const ratio = (harmless.length - refused.length) / harmless.length
    console.log(
      `[bash-policy oracle] ${oracleCorpus.length} lines (${harmless.length} harmless, ${oracleCorpus.length - harmless.length} attacks); ` +
        `${toRun.length} run under strace in ${seconds} s; harmless allowed ${(ratio * 100).toFixed(1)}%` +
        (full ? `; attacks that really did harm when run: ${harmfulAttacks.length}` : '') +
        (refused.length ? `\n  harmless but not allowed:\n  ${refused.join('\n  ')}` : ''),
    )
    expect(wrong).toEqual([])
    expect(allowedAttacks).toEqual([])
    expect(ratio).toBeGreaterThanOrEqual(0.95)
  }, 600_000)
})
