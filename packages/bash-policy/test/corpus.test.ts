import { describe, expect, it } from 'vitest'
import { decide } from '../src/index.js'
import { corpus, testPolicy } from './corpus.js'

const families = new Map<string, typeof corpus[number][]>()
for (const entry of corpus) families.set(entry.family, [...(families.get(entry.family) ?? []), entry])

describe('the corpus', () => {
  it('has at least 150 commands', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(150)
  })

  for (const [family, entries] of families) {
    describe(family, () => {
      it.each(entries.map((entry) => [JSON.stringify(entry.command).slice(0, 120), entry] as const))('%s', async (_name, entry) => {
        const decision = await decide(testPolicy, entry.command)
        expect({ command: entry.command, kind: decision.kind }).toEqual({ command: entry.command, kind: entry.expect })
        if (entry.reason) expect(decision.reason).toContain(entry.reason)
      })
    })
  }
})
