import type { BashTask } from '@deepseek-ai/dsh-bash'

/** What the table needs of an entry: its public view (id and status). */
export interface TaskTableEntry {
  readonly view: Pick<BashTask, 'id' | 'status'>
}

/**
 * The executor's background tasks by id, in insertion order (oldest first), with the id sequence
 * and the eviction of finished tasks. It holds entries only: it starts, stops and frees nothing
 * itself (eviction hands the evicted entries back to the caller, which frees their output).
 */
export class TaskTable<E extends TaskTableEntry> {
  private readonly _entries = new Map<string, E>()
  private _seq = 0

  /** The next task id (`bash-1`, `bash-2`, …): unique per table, never reused, even after eviction. */
  nextId(): string {
    return `bash-${++this._seq}`
  }

  /**
   * Adds an entry under its view's id. A second entry with an id already present is a bug of the
   * caller (ids come from `nextId`): it throws rather than replace a live task silently.
   */
  add(entry: E): void {
    const id = entry.view.id
    if (this._entries.has(id)) throw new Error(`task table: ${id} is already present`)
    this._entries.set(id, entry)
  }

  /** The entry of a tracked task; undefined for an unknown or evicted id. */
  get(id: string): E | undefined {
    return this._entries.get(id)
  }

  /** Every tracked entry, oldest first (a copy: safe to change the table while iterating it). */
  entries(): E[] {
    return [...this._entries.values()]
  }

  get size(): number {
    return this._entries.size
  }

  /**
   * Removes the oldest finished tasks until at most `keepFinished` finished ones are left; running
   * tasks are never removed, whatever their number. Returns the removed entries, oldest first
   * (empty when nothing had to go), for the caller to free.
   */
  evictFinished(keepFinished: number): E[] {
    const keep = Math.max(0, Math.floor(keepFinished))
    const finished = this.entries().filter((entry) => entry.view.status !== 'running')
    if (finished.length <= keep) return []
    const evicted = finished.slice(0, finished.length - keep)
    for (const entry of evicted) this._entries.delete(entry.view.id)
    return evicted
  }
}
