import { readStat } from './proc.js'

/**
 * Whether a process group number still names a command's own group.
 *
 * Every command starts in a new session whose group id is the pid of its first process (the
 * leader). Trackers find the command's processes by that group, and the kill signals the group as
 * a whole. But the number is only the command's while its group exists: once every member is gone
 * the number is free, and a stranger's new process can get that pid and make it a new session with
 * the same group id (pid_max is 32768 on the test VM; the full test suite wraps pids within
 * seconds). A tracker that still matched the number then counted the stranger's processes as the
 * command's and killed them: in CI a marker task waiting for an escapee killed another test
 * process's `sleep` that way (2026-12-03).
 *
 * What the kernel guarantees, and what the states rest on: a pid number is not handed out again
 * while any process still uses it as its pid, group or session id, so while one member of the group
 * lives the number is the group's; and a new group with that number can only be made by a process
 * whose pid is that number (setsid, or setpgid(0, 0)). A pid with its start time names one process
 * (the start time counts clock ticks, 10 ms: a reuse within the same tick would look the same, which
 * takes a forced reuse, as the tests do; a natural one hands out every other pid first).
 */
export type GroupClaimState =
  /**
   * The leader (pid == group id) exists with the start time seen when the claim was made (a zombie
   * leader counts: it still holds the number). The group is the command's. Never a guess from the
   * pid alone.
   */
  | { kind: 'led'; start: number }
  /**
   * The leader is gone, so the group is the command's only while the looks at /proc keep seeing one
   * of its members (a look with a member proves the number was never free since the last one, barring
   * a whole pid wrap between two looks). Never entered back from `released`.
   */
  | { kind: 'orphaned' }
  /**
   * For good: the number is not matched or signalled again. `empty`: `EMPTY_LOOKS` looks in a row
   * found no member;
   * `reused`: a process with another start time (or, once the leader was gone, any process) now
   * has the leader's pid; `none`: no group was given. Never undone: a group cannot come back.
   */
  | { kind: 'released'; why: 'empty' | 'reused' | 'none' }

/** Looks in a row without a member before a group is called over (see `observe`): as many as call a tree empty. */
export const EMPTY_LOOKS = 2

export class GroupClaim {
  private _state: GroupClaimState
  /** Consecutive looks (since the last one with a member) that saw no member. */
  private emptyLooks = 0

  /**
   * Claims group `pgid` (0: none). `start` is the leader's start time when the caller knows it;
   * otherwise it is read now, and a leader already gone starts the claim `orphaned`.
   */
  constructor(
    readonly pgid: number,
    start?: number,
  ) {
    if (!pgid) this._state = { kind: 'released', why: 'none' }
    else if (start !== undefined) this._state = { kind: 'led', start }
    else {
      const leader = readStat(pgid)
      this._state = leader ? { kind: 'led', start: leader.start } : { kind: 'orphaned' }
    }
  }

  get state(): GroupClaimState {
    return this._state
  }

  /**
   * The group to match in the next look at /proc, or 0 when it is not the command's any more.
   * Checks who has the leader's pid first (one stat read).
   */
  current(): number {
    const state = this._state
    if (state.kind === 'released') return 0
    const holder = readStat(this.pgid)
    if (state.kind === 'led') {
      if (!holder) {
        this._state = { kind: 'orphaned' }
        return this.pgid
      }
      if (holder.start === state.start) return this.pgid
      this._state = { kind: 'released', why: 'reused' }
      return 0
    }
    // Orphaned: with members alive the number could not be handed out, so a process holding it now
    // means the group ended between two looks and this is a stranger's.
    if (holder) {
      this._state = { kind: 'released', why: 'reused' }
      return 0
    }
    return this.pgid
  }

  /**
   * After a look that matched `current()`: how many processes of the group it saw (alive, or inside
   * an exec). `EMPTY_LOOKS` looks in a row with none: the group is over, and the number is released
   * for good. Why not one: a look lists /proc first and reads each entry after, so a member that forks
   * and exits in between is gone when read while its child, born after the listing, is not in it:
   * one look can see no member of a group that has one (the container helper saw it happen). The next
   * listing has the child. Between two looks the number cannot change hands without a whole pid wrap.
   */
  observe(members: number): void {
    if (this._state.kind === 'released') return
    if (members > 0) {
      this.emptyLooks = 0
      return
    }
    if (++this.emptyLooks >= EMPTY_LOOKS) this._state = { kind: 'released', why: 'empty' }
  }

  /** True while the number is still the command's group (it may be released by the next look). */
  get held(): boolean {
    return this._state.kind !== 'released'
  }
}
