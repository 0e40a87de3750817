/*
 * Finding a command's processes in /proc: the group claim and the settled scans. A port of
 * bash-local's group-claim.ts and scan.ts and of the Perl agent's rules, kept in one place now.
 *
 * Why a look needs care: a process inside execve has, for a moment, a fresh memory map whose
 * environment and arguments are not set yet, and a read that opened the old map reads nothing; a
 * `setsid sleep &` escapee passes through two execs just as its shell exits, which is exactly when
 * the agent looks. So every entry is classified, and one caught inside an exec (`unsure`) is never
 * taken for "not ours": a settled scan looks again until none is left.
 */
#include "agent.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int read_stat(pid_t pid, pstat_t *st) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  /* The name (field 2) is in parentheses and may hold spaces and parentheses: cut at the last `)`. */
  char *close_paren = strrchr(text, ')');
  if (!close_paren || close_paren[1] != ' ') return -1;
  char *p = close_paren + 2;
  /* Field N of proc(5) is rest[N - 3]: state 3, ppid 4, pgrp 5, session 6, flags 9, starttime 22. */
  char *field[20];
  int count = 0;
  while (count < 20 && *p) {
    field[count++] = p;
    while (*p && *p != ' ') p++;
    if (*p) *p++ = '\0';
  }
  if (count < 20) return -1;
  st->pid = pid;
  st->state = field[0][0];
  st->ppid = (pid_t)strtol(field[1], NULL, 10);
  st->pgid = (pid_t)strtol(field[2], NULL, 10);
  st->sid = (pid_t)strtol(field[3], NULL, 10);
  st->flags = strtoul(field[6], NULL, 10);
  st->start = strtoull(field[19], NULL, 10);
  return 0;
}

/* ---- the group claim ---- */

void claim_init_parent(claim_t *c, pid_t pgid) {
  memset(c, 0, sizeof *c);
  c->pgid = pgid;
  c->parent = 1;
  c->watched = 1;
  c->kind = pgid > 0 ? CLAIM_LED : CLAIM_RELEASED;
  c->why = pgid > 0 ? NULL : "none";
}

void claim_init_start(claim_t *c, pid_t pgid, unsigned long long start, int watched) {
  memset(c, 0, sizeof *c);
  c->pgid = pgid;
  c->start = start;
  c->watched = watched;
  c->kind = pgid > 0 && start > 0 ? CLAIM_LED : CLAIM_RELEASED;
  c->why = c->kind == CLAIM_LED ? NULL : "none";
}

static void release(claim_t *c, const char *why) {
  c->kind = CLAIM_RELEASED;
  c->why = why;
}

/*
 * The group to match in the next look, or 0 when the number is not the command's any more. The
 * kernel's guarantees: a pid number is not handed out again while any process (a zombie too) uses
 * it as its pid, group or session id; and a group with that number can only be made anew by a
 * process whose pid is that number. So while the leader holds the number (unreaped, or alive with
 * its start time) the group is ours; once it is gone, only while looks keep seeing a member and no
 * process has the leader's pid.
 */
pid_t claim_current(claim_t *c) {
  pstat_t st;
  if (c->kind == CLAIM_RELEASED) return 0;
  if (c->kind == CLAIM_LED) {
    if (c->parent) {
      /* Our own child, not reaped: alive or a zombie, it holds the number. */
      if (!c->leader_reaped) return c->pgid;
      c->kind = CLAIM_ORPHANED;
    } else {
      if (read_stat(c->pgid, &st) == 0) {
        if (st.start == c->start) return c->pgid;
        release(c, "reused");
        return 0;
      }
      /* Gone. A one-shot look cannot tell whether the group ended and a stranger took the number
         since the leader left; only a watcher that keeps looking may hold it as orphaned. */
      if (!c->watched) {
        release(c, "gone");
        return 0;
      }
      c->kind = CLAIM_ORPHANED;
      return c->pgid;
    }
  }
  /* Orphaned: with members alive the number could not be handed out, so a process holding it now
     means the group ended between two looks and this is a stranger's. */
  if (read_stat(c->pgid, &st) == 0) {
    release(c, "reused");
    return 0;
  }
  return c->pgid;
}

/*
 * After a look that matched claim_current(): how many members (any state: a zombie holds the
 * number too) it saw. EMPTY_LOOKS in a row with none: over for good. Why not one: a look lists
 * /proc first and reads each entry after, so a member that forks and exits in between is gone when
 * read while its child, born after the listing, is not in it.
 */
void claim_observe(claim_t *c, int members) {
  if (c->kind == CLAIM_RELEASED) return;
  if (c->parent && c->kind == CLAIM_LED && !c->leader_reaped) return;
  if (members > 0) {
    c->empty_looks = 0;
    return;
  }
  if (++c->empty_looks >= EMPTY_LOOKS) release(c, "empty");
}

/* ---- one look ---- */

void tracker_init(tracker_t *t, const char *marker) {
  memset(t, 0, sizeof *t);
  claim_init_parent(&t->claim, 0);
  if (marker && *marker) {
    buf_t b = {0};
    buf_printf(&b, "%s=%s", MARKER_VARIABLE, marker);
    t->needle = b.data;
    t->needle_len = b.len;
  }
}

void tracker_free(tracker_t *t) {
  free(t->needle);
  t->needle = NULL;
  pidset_free(&t->stuck);
  free(t->cgroup);
  t->cgroup = NULL;
}

void scan_free(scan_t *s) {
  pidset_free(&s->found);
  pidset_free(&s->unsure);
  pidset_free(&s->grouped);
  pidset_free(&s->marked);
  pidset_free(&s->caged);
}

static void scan_reset(scan_t *s) {
  pidset_clear(&s->found);
  pidset_clear(&s->unsure);
  pidset_clear(&s->grouped);
  pidset_clear(&s->marked);
  pidset_clear(&s->caged);
  s->group = 0;
}

/* True when the NUL-separated `env` holds `needle` as a whole variable. */
static int has_variable(const char *env, size_t len, const char *needle, size_t nlen) {
  if (!needle) return 0;
  size_t at = 0;
  while (at < len) {
    const char *end = memchr(env + at, '\0', len - at);
    size_t item = end ? (size_t)(end - (env + at)) : len - at;
    if (item == nlen && memcmp(env + at, needle, nlen) == 0) return 1;
    at += item + 1;
  }
  return 0;
}

typedef enum { SEEN_GONE, SEEN_DEAD, SEEN_FOREIGN, SEEN_UNSURE, SEEN_LIVE } seen_t;

/* The environment of a live process: whether it carries the needle, or why it cannot tell. */
static seen_t read_environ(pid_t pid, const tracker_t *t, int *marked, buf_t *scratch) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
  if (read_file(path, scratch) < 0) {
    /* EACCES/EPERM: another user's or a setuid program: not ours to read, nor to signal. Else
       (ESRCH) it has no memory map any more: exiting. */
    return errno == EACCES || errno == EPERM ? SEEN_FOREIGN : SEEN_DEAD;
  }
  if (scratch->len == 0) {
    /* Empty: a cleared environment, or a read that fell into an execve. Arguments are set in the
       same step as the environment, so arguments mean the exec is over: read once more. */
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    if (read_file(path, scratch) < 0) return SEEN_GONE;
    if (scratch->len == 0) return SEEN_UNSURE;
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    if (read_file(path, scratch) < 0) return SEEN_GONE;
  }
  *marked = has_variable(scratch->data, scratch->len, t->needle, t->needle_len);
  return SEEN_LIVE;
}

typedef struct {
  pid_t pid, ppid;
} parent_t;

/* One pass over /proc for group `group` (0: none); returns the members of the group it saw. */
static int pass(tracker_t *t, pid_t group, scan_t *out, pid_t self) {
  static buf_t scratch;
  static parent_t *parents;
  static size_t parents_cap;
  size_t nparents = 0;
  int members = 0;
  pidset_t caged = {0};
  scan_reset(out);
  out->group = group;
  if (t->cgroup) cgroup_pids(t->cgroup, &caged);
  DIR *dir = opendir("/proc");
  if (!dir) {
    pidset_free(&caged);
    return 0;
  }
  struct dirent *entry;
  while ((entry = readdir(dir))) {
    if (!isdigit((unsigned char)entry->d_name[0])) continue;
    pid_t pid = (pid_t)strtol(entry->d_name, NULL, 10);
    if (pid <= 0 || pid == self) continue;
    pstat_t st;
    if (read_stat(pid, &st) < 0) continue;
    int in_group = group && st.pgid == group;
    /* A member holds the number whatever its state: it counts for the claim. */
    if (in_group) members++;
    if (st.state == 'Z' || st.state == 'X' || (st.flags & (PF_KTHREAD | PF_EXITING))) continue;
    int marked = 0;
    seen_t seen = SEEN_LIVE;
    int in_cgroup = pidset_has(&caged, pid);
    if (!in_group && t->needle) seen = read_environ(pid, t, &marked, &scratch);
    if (seen == SEEN_GONE || seen == SEEN_DEAD || (seen == SEEN_FOREIGN && !in_cgroup)) continue;
    if (nparents == parents_cap) {
      parents_cap = parents_cap ? parents_cap * 2 : 256;
      parents = xrealloc(parents, parents_cap * sizeof *parents);
    }
    parents[nparents++] = (parent_t){pid, st.ppid};
    if (in_group) {
      pidset_add(&out->found, pid);
      pidset_add(&out->grouped, pid);
    } else if (marked) {
      pidset_add(&out->found, pid);
      pidset_add(&out->marked, pid);
    } else if (in_cgroup) {
      pidset_add(&out->found, pid);
      pidset_add(&out->caged, pid);
    } else if (seen == SEEN_UNSURE) {
      pidset_add(&out->unsure, pid);
    }
  }
  closedir(dir);
  pidset_free(&caged);
  /* Children of the tree are of the tree (repeated: grandchildren of a child found this way): a
     child that cleared its environment and left the group is found while its parent lives. */
  for (int grew = 1; grew;) {
    grew = 0;
    for (size_t i = 0; i < nparents; i++) {
      if (!pidset_has(&out->found, parents[i].pid) && pidset_has(&out->found, parents[i].ppid)) {
        pidset_add(&out->found, parents[i].pid);
        pidset_remove(&out->unsure, parents[i].pid);
        grew = 1;
      }
    }
  }
  return members;
}

void tracker_once(tracker_t *t, scan_t *out, pid_t self) {
  pid_t group = claim_current(&t->claim);
  int members = pass(t, group, out, self);
  if (group) {
    claim_observe(&t->claim, members);
    /* An orphaned group with no member in this look is looked at once more before it goes (the
       member that forked between the listing and its read left its child out of this look). */
    if (!members && t->claim.kind == CLAIM_ORPHANED) {
      group = claim_current(&t->claim);
      members = pass(t, group, out, self);
      if (group) claim_observe(&t->claim, members);
    }
  }
  for (size_t i = 0; i < t->stuck.n;) {
    pid_t pid = t->stuck.v[i];
    /* Out of its exec now (or gone): not stuck any more. */
    if (!pidset_has(&out->unsure, pid)) {
      pidset_remove(&t->stuck, pid);
      continue;
    }
    pidset_remove(&out->unsure, pid);
    i++;
  }
}

/*
 * Looks until every process the first look caught inside an exec has been seen outside one (1 ms
 * apart), so that `found` holds every live process of the command at the first look: the union of
 * the looks, less what the last look no longer sees at all (ended: its pid could be reused).
 * `unsure` comes back empty: what was still unsure at the limit is given up on (and not waited for
 * again while it stays inside that exec).
 */
void tracker_settled(tracker_t *t, scan_t *out, pid_t self) {
  double deadline = now_ms() + SETTLE_LIMIT_MS;
  scan_t last = {0};
  tracker_once(t, &last, self);
  scan_reset(out);
  pidset_t pending = {0};
  for (size_t i = 0; i < last.found.n; i++) pidset_add(&out->found, last.found.v[i]);
  for (size_t i = 0; i < last.grouped.n; i++) pidset_add(&out->grouped, last.grouped.v[i]);
  for (size_t i = 0; i < last.marked.n; i++) pidset_add(&out->marked, last.marked.v[i]);
  for (size_t i = 0; i < last.caged.n; i++) pidset_add(&out->caged, last.caged.v[i]);
  for (size_t i = 0; i < last.unsure.n; i++) pidset_add(&pending, last.unsure.v[i]);
  while (pending.n > 0 && now_ms() < deadline) {
    sleep_ms(1);
    tracker_once(t, &last, self);
    for (size_t i = 0; i < last.found.n; i++) pidset_add(&out->found, last.found.v[i]);
    for (size_t i = 0; i < last.grouped.n; i++) pidset_add(&out->grouped, last.grouped.v[i]);
    for (size_t i = 0; i < last.marked.n; i++) pidset_add(&out->marked, last.marked.v[i]);
    for (size_t i = 0; i < last.caged.n; i++) pidset_add(&out->caged, last.caged.v[i]);
    for (size_t i = 0; i < pending.n;)
      if (!pidset_has(&last.unsure, pending.v[i])) pidset_remove(&pending, pending.v[i]);
      else i++;
  }
  for (size_t i = 0; i < pending.n; i++) pidset_add(&t->stuck, pending.v[i]);
  for (size_t i = 0; i < out->found.n;) {
    pid_t pid = out->found.v[i];
    if (!pidset_has(&last.found, pid) && !pidset_has(&last.unsure, pid)) {
      pidset_remove(&out->found, pid);
      pidset_remove(&out->grouped, pid);
      pidset_remove(&out->marked, pid);
      pidset_remove(&out->caged, pid);
    } else {
      i++;
    }
  }
  out->group = last.group;
  pidset_free(&pending);
  scan_free(&last);
}

void describe_scan(const scan_t *s, buf_t *out) {
  size_t shown = 0;
  for (size_t i = 0; i < s->found.n; i++) {
    if (++shown > 50) {
      buf_printf(out, " +%zu", s->found.n - 50);
      break;
    }
    pid_t pid = s->found.v[i];
    char path[64], text[1024], name[16] = "?", state = '?';
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = read(fd, text, sizeof text - 1);
      close(fd);
      if (n > 0) {
        text[n] = '\0';
        char *open_paren = strchr(text, '('), *close_paren = strrchr(text, ')');
        if (open_paren && close_paren && close_paren > open_paren) {
          size_t len = (size_t)(close_paren - open_paren - 1);
          if (len > 15) len = 15;
          for (size_t k = 0; k < len; k++) {
            char ch = open_paren[1 + k];
            name[k] = isalnum((unsigned char)ch) || ch == '.' || ch == '_' || ch == '-' ? ch : '?';
          }
          name[len] = '\0';
          if (close_paren[1] == ' ') state = close_paren[2];
        }
      }
    }
    const char *why = pidset_has(&s->grouped, pid)  ? "group"
                      : pidset_has(&s->marked, pid) ? "marker"
                      : pidset_has(&s->caged, pid)  ? "cgroup"
                                                    : "tree";
    buf_printf(out, "%s%d:%s:%c:%s", out->len ? " " : "", (int)pid, why, state, name);
  }
}
