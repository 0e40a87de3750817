import { describe, expect, it } from 'vitest'
import { LoopTurns } from '../src/loop-turns.js'

/** Arms a 0 ms timer that logs `name`, then blocks until it is due: the next turn's timer phase runs it. */
function dueTimer(events: string[], name: string): void {
  setTimeout(() => events.push(name), 0)
  const until = performance.now() + 3
  while (performance.now() < until) {
    // busy: the timer is due once this returns
  }
}

/** A queue under contention: two calls held (another call is in progress besides the caller's). */
function busyTurns(): LoopTurns {
  const turns = new LoopTurns()
  turns.hold()
  turns.hold()
  return turns
}

describe('LoopTurns', () => {
  it('releases waiters first come, first served', async () => {
    const turns = busyTurns()
    const order: number[] = []
    await Promise.all([0, 1, 2, 3, 4].map((n) => turns.next(true).then(() => order.push(n))))
    expect(order).toEqual([0, 1, 2, 3, 4])
    expect(turns.waiting).toBe(0)
  })

  it('releases one waiter per turn of the loop: a due timer runs between two releases', async () => {
    const turns = busyTurns()
    const events: string[] = []
    // Twenty waiters queued in one go, as twenty requests read in one poll phase would be.
    await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        turns.next(true).then(() => {
          events.push(`release ${n}`)
          dueTimer(events, `timer ${n}`)
        }),
      ),
    )
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(events).toEqual(Array.from({ length: 20 }, (_, n) => [`release ${n}`, `timer ${n}`]).flat())
  })

  it('without it, twenty continuations run back to back (what the queue is for)', async () => {
    const events: string[] = []
    await Promise.all(
      Array.from({ length: 20 }, (_, n) =>
        Promise.resolve().then(() => {
          events.push(`release ${n}`)
          dueTimer(events, `timer ${n}`)
        }),
      ),
    )
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(events.slice(0, 20)).toEqual(Array.from({ length: 20 }, (_, n) => `release ${n}`))
  })

  it('a waiter queued while another is released goes in a later turn, never in the same one', async () => {
    const turns = busyTurns()
    const events: string[] = []
    await turns.next(true).then(async () => {
      events.push('outer')
      dueTimer(events, 'timer')
      await turns.next(true)
      events.push('inner')
    })
    expect(events).toEqual(['outer', 'timer', 'inner'])
  })

  it('without contention it does not wait: no call held, or only the caller\'s own', async () => {
    const turns = new LoopTurns()
    const events: string[] = []
    const free = turns.next(false).then(() => events.push('free'))
    const release = turns.hold()
    const own = turns.next(true).then(() => events.push('own call only'))
    dueTimer(events, 'timer')
    await Promise.all([free, own])
    events.push('after')
    await new Promise((resolve) => setTimeout(resolve, 5))
    // Both resolved in this turn (before the due timer of the next one).
    expect(events).toEqual(['free', 'own call only', 'after', 'timer'])
    // With the caller's call and one other held, or any other call held for a request, it waits.
    const other = turns.hold()
    const waits: string[] = []
    const a = turns.next(true).then(() => waits.push('result'))
    const b = turns.next(false).then(() => waits.push('request'))
    dueTimer(waits, 'timer')
    await Promise.all([a, b])
    // Neither resolved in this microtask run: the first in this turn's check phase, the second in the next turn.
    expect(waits).toEqual(['result', 'timer', 'request'])
    other()
    release()
    release()
    expect(turns.active).toBe(0)
  })

  it('a waiter keeps its place: a call that finds others waiting queues behind them even without contention', async () => {
    const turns = busyTurns()
    const order: string[] = []
    const first = turns.next(true).then(() => order.push('first'))
    const second = turns.next(false).then(() => order.push('second'))
    await Promise.all([first, second])
    expect(order).toEqual(['first', 'second'])
  })

  it('keeps nothing scheduled once every waiter is released (the loop can exit)', async () => {
    const turns = busyTurns()
    await turns.next(true)
    await turns.next(true)
    expect(turns.waiting).toBe(0)
    // No immediate is pending: a fresh one runs in the very next check phase with nothing before it.
    const handles = (process as unknown as { getActiveResourcesInfo(): string[] }).getActiveResourcesInfo().filter((r) => r === 'Immediate')
    expect(handles).toEqual([])
  })
})
