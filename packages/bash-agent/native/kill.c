/*
 * Signals and freeze-then-kill (a port of bash-local's exact-kill.ts and pgroup.ts signalAll).
 * The group is signalled as a whole only while a process the latest scan found is in it: a group
 * whose members are all gone leaves its number free, and a stranger's new session can take it.
 */
#include "agent.h"
#include <signal.h>

size_t signal_scan(const scan_t *s, int sig) {
  if (s->group && s->grouped.n > 0) {
    kill(-s->group, sig);
    if (sig == SIGTERM) kill(-s->group, SIGCONT);
  }
  for (size_t i = 0; i < s->found.n; i++) {
    /* Members have it already: a second SIGTERM would run a shell's TERM trap twice. */
    if (s->group && pidset_has(&s->grouped, s->found.v[i])) continue;
    kill(s->found.v[i], sig);
    /* A stopped process cannot act on SIGTERM until it runs again. */
    if (sig == SIGTERM) kill(s->found.v[i], SIGCONT);
  }
  return s->found.n;
}

static void kill_found(const scan_t *s, pidset_t *killed) {
  if (s->group && s->grouped.n > 0) kill(-s->group, SIGKILL);
  for (size_t i = 0; i < s->found.n; i++) {
    kill(s->found.v[i], SIGKILL);
    pidset_add(killed, s->found.v[i]);
  }
}

/*
 * 1. Freeze: the cgroup freezer when the command has a cgroup, and SIGSTOP to each process a
 *    settled scan found (and their group while one of them is in it), rescanning until a settled
 *    scan finds nothing new: a process with SIGSTOP pending cannot fork (a fork either restarts or
 *    its child is already in /proc for the next scan).
 * 2. SIGKILL everything the last scan found (all of it frozen); a frozen pid it no longer finds has
 *    ended and gets SIGCONT, never SIGKILL: its number may be a stranger's by now.
 * 3. Confirm: SIGKILL whatever a settled scan still finds until CONFIRM_SCANS in a row find nothing.
 */
int freeze_kill(tracker_t *t, pid_t self, double limit_ms, size_t *killed_count) {
  double deadline = now_ms() + limit_ms;
  pidset_t frozen = {0}, killed = {0};
  scan_t scan = {0};
  int ok = 1;
  if (t->cgroup) cgroup_freeze(t->cgroup, 1);
  tracker_settled(t, &scan, self);
  for (;;) {
    if (scan.group && scan.grouped.n > 0) kill(-scan.group, SIGSTOP);
    int fresh = 0;
    for (size_t i = 0; i < scan.found.n; i++) {
      pid_t pid = scan.found.v[i];
      if (pidset_has(&frozen, pid)) continue;
      kill(pid, SIGSTOP);
      pidset_add(&frozen, pid);
      fresh = 1;
    }
    if (!fresh || now_ms() >= deadline) break;
    tracker_settled(t, &scan, self);
  }
  if (t->cgroup) cgroup_kill(t->cgroup);
  kill_found(&scan, &killed);
  for (size_t i = 0; i < frozen.n; i++)
    if (!pidset_has(&scan.found, frozen.v[i])) kill(frozen.v[i], SIGCONT);
  int empty = 0;
  double pause = 1;
  while (empty < CONFIRM_SCANS) {
    tracker_settled(t, &scan, self);
    if (scan.found.n == 0) {
      empty++;
      continue;
    }
    empty = 0;
    if (now_ms() >= deadline) {
      ok = 0;
      break;
    }
    if (t->cgroup) cgroup_kill(t->cgroup);
    kill_found(&scan, &killed);
    /* A killed process is found until it is a zombie: give the kernel a moment, then a longer one. */
    sleep_ms(pause);
    pause = pause * 2 > 50 ? 50 : pause * 2;
  }
  if (t->cgroup) cgroup_freeze(t->cgroup, 0);
  if (killed_count) *killed_count = killed.n;
  pidset_free(&frozen);
  pidset_free(&killed);
  scan_free(&scan);
  return ok;
}
