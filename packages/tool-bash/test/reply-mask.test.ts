import { describe, expect, it } from 'vitest'
import { HIDDEN_REPLY, MIN_HIDDEN_REPLY, ReplyMask } from '../src/reply-mask.js'

const live = () => true

describe('ReplyMask', () => {
  it('hides every remembered reply of a task, and only in that task', () => {
    const mask = new ReplyMask()
    mask.remember('bash-1', 'hunter2', live)
    expect(mask.hide('bash-1', 'you typed hunter2, hunter2!')).toBe(`you typed ${HIDDEN_REPLY}, ${HIDDEN_REPLY}!`)
    expect(mask.hide('bash-2', 'hunter2')).toBe('hunter2')
  })

  it(`keeps replies under ${MIN_HIDDEN_REPLY} characters out: they would blank ordinary text`, () => {
    const mask = new ReplyMask()
    mask.remember('bash-1', 'yes', live)
    expect(mask.hide('bash-1', 'yes, yes')).toBe('yes, yes')
  })

  it('replaces a reply that contains another one whole', () => {
    const mask = new ReplyMask()
    mask.remember('bash-1', 'pass', live)
    mask.remember('bash-1', 'password1', live)
    expect(mask.hide('bash-1', 'password1 then pass')).toBe(`${HIDDEN_REPLY} then ${HIDDEN_REPLY}`)
  })

  it('forgets the tasks the executor no longer knows when the next reply comes', () => {
    const mask = new ReplyMask()
    mask.remember('bash-1', 'first-secret', live)
    mask.remember('bash-2', 'second-secret', (id) => id !== 'bash-1')
    expect(mask.hide('bash-1', 'first-secret')).toBe('first-secret')
    expect(mask.hide('bash-2', 'second-secret')).toBe(HIDDEN_REPLY)
  })

  it('keeps at most 16 replies per task, the longest', () => {
    const mask = new ReplyMask()
    for (let i = 0; i < 20; i++) mask.remember('bash-1', `reply-${String(i).padStart(2, '0')}${'x'.repeat(i)}`, live)
    expect(mask.hide('bash-1', 'reply-19' + 'x'.repeat(19))).toBe(HIDDEN_REPLY)
    expect(mask.hide('bash-1', 'reply-00')).toBe('reply-00')
  })
})
