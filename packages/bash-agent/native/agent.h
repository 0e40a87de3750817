/*
 * dsh-bash-agent: the one far-side agent of dsh-bash. Containers, pods and SSH hosts run
 * this static binary; it starts commands, finds and kills every process they start, and speaks the
 * protocol of docs/agent-protocol.md over its stdin/stdout, whatever carries them.
 *
 * Files: main.c (modes), serve.c (the protocol loop and commands), proc.c (reading /proc, the group
 * claim, settled scans), kill.c (signals, freeze-then-kill), cgroup.c (a delegated cgroup, when the
 * agent has one), lifeline.c (PID 1 of a container or pod), secret.c (the environment's secret
 * rules), util.c (buffers, clocks, I/O).
 */
#ifndef DSH_AGENT_H
#define DSH_AGENT_H
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The protocol's version: a client refuses an agent whose hello names another one. */
#define PROTOCOL_VERSION 1
/* The variable every process of a command inherits (the kit's MARKER_VARIABLE). */
#define MARKER_VARIABLE "DSH_BASH_TASK"
/* What a serving agent's command line reads (/proc/<pid>/cmdline: this, then only NULs). */
#define AGENT_PROCESS_NAME "dsh-bash-agent"

#ifndef SOURCE_SHA256
#define SOURCE_SHA256 "unknown"
#endif

/* ---- util.c ---- */
typedef struct {
  char *data;
  size_t len, cap;
} buf_t;
void buf_append(buf_t *b, const void *data, size_t n);
void buf_appends(buf_t *b, const char *s);
void buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_consume(buf_t *b, size_t n);
void buf_free(buf_t *b);
/* Monotonic milliseconds (CLOCK_MONOTONIC). */
double now_ms(void);
void sleep_ms(double ms);
/* Reads a whole (small or large) file into b; -1 with errno set on failure. */
int read_file(const char *path, buf_t *b);
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

typedef struct {
  pid_t *v;
  size_t n, cap;
} pidset_t;
void pidset_add(pidset_t *s, pid_t pid);
int pidset_has(const pidset_t *s, pid_t pid);
void pidset_remove(pidset_t *s, pid_t pid);
void pidset_clear(pidset_t *s);
void pidset_free(pidset_t *s);

/* ---- proc.c ---- */
typedef struct {
  pid_t pid, ppid, pgid, sid;
  char state;
  unsigned long flags;
  /* Clock ticks since boot (field 22): with the pid it names one process. */
  unsigned long long start;
} pstat_t;
#define PF_EXITING 0x4UL
#define PF_KTHREAD 0x200000UL
int read_stat(pid_t pid, pstat_t *st);

/*
 * Whether a process group number is still a command's own (port of bash-local's group-claim.ts and
 * the Perl agent's claim): `led` while its leader holds the number, `orphaned` while every look
 * still sees a member and no process has the leader's pid, `released` for good.
 */
typedef enum { CLAIM_LED, CLAIM_ORPHANED, CLAIM_RELEASED } claim_kind_t;
typedef struct {
  pid_t pgid;
  claim_kind_t kind;
  /* Who proves `led`: the parent's knowledge (1: led until `leader_reaped`), or the start time
     (0: led while the process with the pid has `start`). */
  int parent;
  int leader_reaped;
  /* Without watching (a one-shot kill), a missing leader releases at once instead of orphaning. */
  int watched;
  unsigned long long start;
  int empty_looks;
  /* Why it was released: "none", "empty", "reused". */
  const char *why;
} claim_t;
/* Looks in a row without a member before a group is called over. */
#define EMPTY_LOOKS 2
void claim_init_parent(claim_t *c, pid_t pgid);
void claim_init_start(claim_t *c, pid_t pgid, unsigned long long start, int watched);
pid_t claim_current(claim_t *c);
void claim_observe(claim_t *c, int members);

/* One command's processes: its group (under its claim) and its marker, children of both. */
typedef struct {
  claim_t claim;
  char *needle; /* "DSH_BASH_TASK=<marker>" */
  size_t needle_len;
  pidset_t stuck; /* given up on inside one exec (see settled) */
  /* A delegated cgroup holding the command (cgroup.c), or NULL. */
  char *cgroup;
} tracker_t;
typedef struct {
  pidset_t found;   /* live processes of the command */
  pidset_t unsure;  /* caught inside execve: may be of it */
  pidset_t grouped; /* of found: members of the claimed group at that look */
  pidset_t marked;  /* of found: outside the group, carrying the marker */
  pidset_t caged;   /* of found: in the command's cgroup, neither in the group nor marked */
  pid_t group;      /* the group this look matched (0: none) */
} scan_t;
void tracker_init(tracker_t *t, const char *marker);
void tracker_free(tracker_t *t);
void scan_free(scan_t *s);
/* One look (two when a held orphaned group shows no member: see proc.c). */
void tracker_once(tracker_t *t, scan_t *out, pid_t self);
/* Looks until no process is caught inside an exec (at most SETTLE_LIMIT_MS). */
void tracker_settled(tracker_t *t, scan_t *out, pid_t self);
#define SETTLE_LIMIT_MS 2000
/* `pid:why:state:name …` of a scan (at most 50 entries, then `+N`). */
void describe_scan(const scan_t *s, buf_t *out);

/* ---- kill.c ---- */
/* Signals every process of the last settled scan: the group as a whole while a found process is in
   it, the rest one by one; TERM also gets CONT. Returns how many processes it found. */
size_t signal_scan(const scan_t *s, int sig);
/* Freeze (SIGSTOP to a fixpoint, or the cgroup freezer), SIGKILL, confirm with two empty settled
   scans. Returns 1 when confirmed empty within limit_ms, else 0; `killed` counts signalled pids. */
int freeze_kill(tracker_t *t, pid_t self, double limit_ms, size_t *killed);
#define KILL_LIMIT_MS 5000
#define CONFIRM_SCANS 2

/* ---- cgroup.c ---- */
/* The agent's own delegated cgroup v2 directory when it may make children there (set up by
   cgroup_setup), else NULL. */
extern char *cgroup_base;
void cgroup_setup(void);
/* A new child cgroup for a command (NULL when there is no base or it cannot be made). */
char *cgroup_make(const char *name);
/* The child side: joins `dir` (writes 0 to its cgroup.procs). -1 on failure. */
int cgroup_join(const char *dir);
void cgroup_pids(const char *dir, pidset_t *out);
int cgroup_freeze(const char *dir, int on);
int cgroup_kill(const char *dir);
void cgroup_remove(const char *dir);

/* ---- secret.c ---- */
/* The kit's secret rules (globs over the whole name, case-insensitive; `!NAME` keeps one), from
   the `serve` command line; the strings are kept, not copied. */
void secret_rules_init(int n, char **rules);
/* True when the variable name[0..len) is to be dropped from a command's environment. */
int is_secret(const char *name, size_t len);

/* ---- serve.c / lifeline.c ---- */
int serve_main(int argc, char **argv);
int init_main(int argc, char **argv);
int pod_init_main(int argc, char **argv);

#endif
