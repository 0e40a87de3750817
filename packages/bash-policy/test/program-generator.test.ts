import { spawnSync } from 'node:child_process'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decide } from '../src/index.js'
import { oraclePolicy, violations } from './oracle/judge.js'
import { oldAwkEffects, oldLessFlags, oldSedFlags, oldTarFlags } from './oracle/old-readers.js'
import { awkLine, lessLine, sedLine, tarLine, type ProgramLine } from './oracle/programs.js'
import { oracleUnavailable, runLines } from './oracle/sandbox.js'

/**
 * The program readers under the oracle: generated sed scripts, awk programs (for mawk, gawk, the
 * one true awk and busybox, those installed), tar option bundles and less options. Every line the
 * policy allows runs under strace in the sandbox and must do no harm. The control: lines the
 * readers of before issue 25 allowed (test/oracle/old-readers.ts) and the new ones refuse run too,
 * and for each program some must do harm — the generator finds the holes the round-3 attacker
 * found, so it would find the next one.
 *
 * DSH_POLICY_PROGRAM_RUNS=N lines per program (default 120), DSH_POLICY_PROGRAM_SEED=S,
 * DSH_POLICY_PROGRAM_CONTROL=N control lines per program (default 12).
 */
const unavailable = oracleUnavailable()
if (unavailable) console.log(`[bash-policy programs] skipped: ${unavailable}`)

const RUNS = Number(process.env.DSH_POLICY_PROGRAM_RUNS ?? 120)
const SEED = Number(process.env.DSH_POLICY_PROGRAM_SEED ?? 20261203)
/** Control lines run per program (the ones the old reader allowed and the new one refuses). */
const CONTROL = Number(process.env.DSH_POLICY_PROGRAM_CONTROL ?? 12)

const awks = ['mawk', 'gawk', 'original-awk', 'busybox'].filter((name) => spawnSync('sh', ['-c', `command -v ${name}`]).status === 0)

function oldAllows(entry: ProgramLine): boolean {
  switch (entry.program) {
    case 'sed':
      return oldSedFlags(entry.argv).length === 0
    case 'awk': {
      const at = entry.argv[0] === 'busybox' ? 2 : 1
      return oldAwkEffects('awk', entry.argv[at]).length === 0
    }
    case 'tar':
      return oldTarFlags(entry.argv).length === 0
    case 'less':
      return oldLessFlags(entry.argv).length === 0
  }
}

const generators = { sed: sedLine, awk: awkLine, tar: tarLine, less: lessLine }

describe.skipIf(unavailable)('the program generator (sed, awk, tar, less syntax through the oracle)', () => {
  it(`finds no allowed line that does harm, and finds harm the old readers allowed (${RUNS} lines per program, seed ${SEED})`, async () => {
    const entries: ProgramLine[] = []
    for (const [name, arbitrary] of Object.entries(generators)) {
      const seen = new Set<string>()
      for (const entry of fc.sample(arbitrary, { seed: SEED + name.length, numRuns: RUNS })) {
        if (seen.has(entry.line)) continue
        seen.add(entry.line)
        entries.push(entry)
      }
    }
    const decisions = await Promise.all(entries.map((entry) => decide(oraclePolicy, entry.line)))
    const allowed = entries.filter((_entry, i) => decisions[i].kind === 'allow')
    const control: ProgramLine[] = []
    for (const program of Object.keys(generators)) {
      // Those the new reader refuses for what they do (runs, writes) first: they are the likely harm.
      const candidates = entries
        .map((entry, i) => ({ entry, reason: decisions[i].kind === 'allow' ? undefined : decisions[i].reason ?? '' }))
        .filter(({ entry, reason }) => entry.program === program && reason !== undefined && oldAllows(entry))
        .sort((a, b) => Number(/with certainty|not read|not understood/.test(a.reason!)) - Number(/with certainty|not read|not understood/.test(b.reason!)))
      control.push(...candidates.slice(0, CONTROL).map(({ entry }) => entry))
    }
    const toRun = [...allowed, ...control]
    const started = performance.now()
    const traces = await runLines(toRun.map((entry) => entry.line))
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    const harm = toRun.map((_entry, i) => (traces[i].started ? violations(traces[i]) : ['the oracle did not run it']))
    const caught = allowed.map((entry, i) => ({ entry, found: harm[i] })).filter(({ found }) => found.length)
    const controlHarm = control.map((entry, i) => ({ entry, found: harm[allowed.length + i] })).filter(({ found }) => found.length)
    const count = (list: ProgramLine[], program: string) => list.filter((entry) => entry.program === program).length
    console.log(
      `[bash-policy programs] awks: ${awks.join(', ')}; ${entries.length} distinct lines, ${allowed.length} allowed ` +
        `(${Object.keys(generators).map((p) => `${p} ${count(allowed, p)}`).join(', ')}) and ${control.length} control lines run in ${seconds} s; ` +
        `control lines that did harm: ${Object.keys(generators).map((p) => `${p} ${count(controlHarm.map((c) => c.entry), p)}`).join(', ')}` +
        Object.keys(generators)
          .flatMap((p) => controlHarm.filter(({ entry }) => entry.program === p).slice(0, 3))
          .map(({ entry, found }) => `\n  control: ${JSON.stringify(entry.line)}: ${found[0]}`)
          .join(''),
    )
    if (caught.length) console.log(`[bash-policy programs] add to the corpus:\n${caught.map(({ entry, found }) => `${JSON.stringify(entry.line)}: ${found.join('; ')}`).join('\n')}`)
    expect(caught.map(({ entry, found }) => `${entry.line}: ${found.join('; ')}`)).toEqual([])
    for (const program of Object.keys(generators)) {
      // Reach: each reader lets the generator's harmless lines through, or the oracle learns nothing.
      expect(count(allowed, program), `${program} lines allowed`).toBeGreaterThan(RUNS / 10)
      // Control: the generator finds what the old reader let through.
      expect(count(controlHarm.map((c) => c.entry), program), `${program} control lines that did harm`).toBeGreaterThan(0)
    }
  }, 900_000)
})
