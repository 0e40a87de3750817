import { describe, expect, it } from 'vitest'
import { TaskTable } from '../src/task-table.js'
import { TaskView } from '../src/task.js'

function entry(table: TaskTable<{ view: TaskView }>, status: 'running' | 'completed' | 'killed' = 'running') {
  const view = new TaskView(table.nextId(), 'true', '/')
  if (status !== 'running') view.end(status, 0, null)
  const e = { view }
  table.add(e)
  return e
}

describe('TaskTable', () => {
  it('hands out ids bash-1, bash-2, … never reused after eviction', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const a = entry(table, 'completed')
    const b = entry(table, 'completed')
    expect([a.view.id, b.view.id]).toEqual(['bash-1', 'bash-2'])
    expect(table.evictFinished(0).map((e) => e.view.id)).toEqual(['bash-1', 'bash-2'])
    expect(table.nextId()).toBe('bash-3')
  })

  it('get: the entry, or undefined for an unknown or evicted id', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const a = entry(table, 'completed')
    expect(table.get(a.view.id)).toBe(a)
    expect(table.get('bash-99')).toBeUndefined()
    table.evictFinished(0)
    expect(table.get(a.view.id)).toBeUndefined()
    expect(table.size).toBe(0)
  })

  it('refuses a second entry under an id already present', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const a = entry(table)
    expect(() => table.add({ view: new TaskView(a.view.id, 'x', '/') })).toThrow(/bash-1 is already present/)
    expect(table.get(a.view.id)).toBe(a)
  })

  it('entries: oldest first, a copy that survives changes to the table', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const all = [entry(table, 'completed'), entry(table), entry(table, 'killed')]
    const listed = table.entries()
    expect(listed).toEqual(all)
    table.evictFinished(0)
    expect(listed).toHaveLength(3)
    expect(table.entries()).toEqual([all[1]])
  })

  it('evicts the oldest finished tasks beyond the limit, never a running one', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const r1 = entry(table)
    const f1 = entry(table, 'completed')
    const r2 = entry(table)
    const f2 = entry(table, 'killed')
    const f3 = entry(table, 'completed')
    expect(table.evictFinished(1)).toEqual([f1, f2])
    expect(table.entries()).toEqual([r1, r2, f3])
  })

  it('evicts nothing at or under the limit (and returns an empty list)', () => {
    const table = new TaskTable<{ view: TaskView }>()
    entry(table, 'completed')
    entry(table, 'completed')
    entry(table)
    expect(table.evictFinished(2)).toEqual([])
    expect(table.evictFinished(5)).toEqual([])
    expect(table.size).toBe(3)
  })

  it('running tasks alone are never evicted, even with a limit of 0', () => {
    const table = new TaskTable<{ view: TaskView }>()
    for (let i = 0; i < 4; i++) entry(table)
    expect(table.evictFinished(0)).toEqual([])
    expect(table.size).toBe(4)
  })

  it('a negative or fractional limit counts as its floor, at least 0', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const [a, b] = [entry(table, 'completed'), entry(table, 'completed')]
    expect(table.evictFinished(1.9)).toEqual([a])
    expect(table.evictFinished(-3)).toEqual([b])
  })

  it('a task that ends later becomes evictable in insertion order, not end order', () => {
    const table = new TaskTable<{ view: TaskView }>()
    const a = entry(table)
    const b = entry(table, 'completed')
    a.view.end('completed', 0, null)
    expect(table.evictFinished(1)).toEqual([a])
    expect(table.entries()).toEqual([b])
  })
})
