import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { RunStops, stopOnAbort, stopOnDispose, stopOnTimeout, yieldAfter } from '../src/run-stops.js'

function stops(refuse = () => false) {
  const kills: number[] = []
  const s = new RunStops(() => {
    if (refuse()) return false
    kills.push(kills.length)
    return true
  })
  return { s, kills }
}

describe('RunStops: the first recorded cause wins', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('no cause until one is recorded; later causes are ignored', () => {
    const { s } = stops()
    expect(s.cause).toBeUndefined()
    expect(s.signal.aborted).toBe(false)
    expect(s.record('abort')).toBe(true)
    expect(s.record('timeout')).toBe(false)
    expect(s.cause).toBe('abort')
    expect(s.signal.reason).toBe('abort')
  })

  it('timeout: records and kills', () => {
    const { s, kills } = stops()
    stopOnTimeout(s, 1000)
    vi.advanceTimersByTime(999)
    expect(kills).toEqual([])
    vi.advanceTimersByTime(1)
    expect(s.cause).toBe('timeout')
    expect(s.timedOut).toBe(true)
    expect(kills).toHaveLength(1)
  })

  it('timeout cancelled: nothing happens', () => {
    const { s, kills } = stops()
    stopOnTimeout(s, 10)()
    vi.advanceTimersByTime(100)
    expect(s.cause).toBeUndefined()
    expect(kills).toEqual([])
  })

  it('timeout after a yield still kills (the cause stays yield)', async () => {
    const { s, kills } = stops()
    stopOnTimeout(s, 100)
    const y = yieldAfter(s, 10, () => true)
    vi.advanceTimersByTime(10)
    expect(await y.yielded).toBe(true)
    vi.advanceTimersByTime(90)
    expect(s.cause).toBe('yield')
    expect(kills).toHaveLength(1)
    expect(s.timedOut).toBe(true)
  })

  it('timeout after a yield whose task was killed first: not timed out', async () => {
    let taskKilled = false
    const { s, kills } = stops(() => taskKilled)
    stopOnTimeout(s, 100)
    const y = yieldAfter(s, 10, () => true)
    vi.advanceTimersByTime(10)
    await y.yielded
    taskKilled = true
    vi.advanceTimersByTime(90)
    expect(kills).toEqual([])
    expect(s.timedOut).toBe(false)
  })

  it('abort: kills when first; an already aborted signal stops at once; detached it does nothing', () => {
    const a = stops()
    const controller = new AbortController()
    const detach = stopOnAbort(a.s, controller.signal)
    controller.abort()
    expect(a.s.cause).toBe('abort')
    expect(a.kills).toHaveLength(1)
    detach()

    const b = stops()
    stopOnAbort(b.s, AbortSignal.abort())
    expect(b.s.cause).toBe('abort')

    const c = stops()
    const late = new AbortController()
    stopOnAbort(c.s, late.signal)()
    late.abort()
    expect(c.s.cause).toBeUndefined()
    expect(c.kills).toEqual([])

    expect(stopOnAbort(stops().s, undefined)).toBeTypeOf('function')
  })

  it('abort after a timeout: the cause stays timeout, no second kill', () => {
    const { s, kills } = stops()
    const controller = new AbortController()
    stopOnTimeout(s, 5)
    stopOnAbort(s, controller.signal)
    vi.advanceTimersByTime(5)
    controller.abort()
    expect(s.cause).toBe('timeout')
    expect(kills).toHaveLength(1)
  })

  it('dispose: kills when first, ignored after another cause', () => {
    const a = stops()
    stopOnDispose(a.s)
    expect(a.s.cause).toBe('dispose')
    expect(a.kills).toHaveLength(1)
    const b = stops()
    b.s.record('abort')
    stopOnDispose(b.s)
    expect(b.s.cause).toBe('abort')
    expect(b.kills).toEqual([])
  })

  it('yield: loses to an earlier cause, to canYield() false, and to a cancel; never kills', async () => {
    const a = stops()
    a.s.record('dispose')
    const ya = yieldAfter(a.s, 5, () => true)
    vi.advanceTimersByTime(5)
    expect(await ya.yielded).toBe(false)

    const b = stops()
    const yb = yieldAfter(b.s, 5, () => false)
    vi.advanceTimersByTime(5)
    expect(await yb.yielded).toBe(false)
    expect(b.s.cause).toBeUndefined()

    const c = stops()
    const yc = yieldAfter(c.s, 5, () => true)
    yc.cancel()
    vi.advanceTimersByTime(5)
    expect(await yc.yielded).toBe(false)
    expect(c.s.cause).toBeUndefined()
    expect([a.kills, b.kills, c.kills]).toEqual([[], [], []])
  })
})
