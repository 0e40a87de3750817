import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { ASK_USER_SENTENCE, askUserShape, HIDDEN_REPLY, laterNotices, secretInputErrors, TYPED_TEXT, waitingText } from '../src/index.js'

/** The README lists the model-facing texts as interface strings: they must be there byte for byte. */
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const quoted = (text: string) => `\`${text}\``

describe('tool-bash README: the secret-input texts, byte for byte', () => {
  it('lists the typed-reply line, the hidden-reply text, the description paragraph and the parameter description', () => {
    expect(readme).toContain(quoted(TYPED_TEXT))
    expect(readme).toContain(quoted(HIDDEN_REPLY))
    expect(ASK_USER_SENTENCE.startsWith('\n\n')).toBe(true)
    expect(readme).toContain(quoted(ASK_USER_SENTENCE.slice(2)))
    const description = (askUserShape.ask_user as z.ZodType).description
    expect(description).toBeDefined()
    expect(readme).toContain(quoted(description!))
  })

  it('lists the waiting lines and the notices of a question that waits for dsh-bash reply (<id>, <n> seconds, <ms>)', () => {
    const n = (text: string) => text.replace('after 300s', 'after <n>s').replace('within 300s', 'within <n>s')
    expect(readme).toContain(quoted(n(waitingText('<id>', { outcome: 'pending', waitMs: 300_000, unasked: 'no-elicitation' }))))
    expect(readme).toContain(
      quoted(n(waitingText('<id>', { outcome: 'pending', waitMs: 300_000, unasked: { action: '<decline, cancel or error>', ms: '<ms>' } as never }))),
    )
    expect(readme).toContain(quoted(laterNotices.typed('<id>')))
    expect(readme).toContain(quoted(laterNotices.declined('<id>')))
    expect(readme).toContain(quoted(n(laterNotices.expired('<id>', 300_000))))
  })

  it('lists every error message of ask_user (with <id> for the task id)', () => {
    const messages = [
      secretInputErrors.declined('<id>'),
      secretInputErrors.cancelled('<id>'),
      secretInputErrors.unavailable('<id>'),
      secretInputErrors.echoOn('<id>'),
      secretInputErrors.rawMode('<id>'),
      secretInputErrors.echoUnknown('<id>'),
      secretInputErrors.both(),
      secretInputErrors.neither(),
      secretInputErrors.blank(),
    ].map((error) => error.message)
    for (const message of messages) expect(readme).toContain(quoted(message))
  })
})
