/*
 * `serve`: the protocol loop (docs/agent-protocol.md). One process per container, pod or SSH
 * connection; every command of that session is its child. Single-threaded around poll(2): output
 * to the client is queued (never a blocking write), so a client that stops reading stalls the
 * commands' output (they block on their pipes) but never a kill, a wait or a count.
 */
#include "agent.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

/* Past this much queued for the client, command output is not read (their pipes fill and block). */
#define OUT_HIGH_WATER (4u << 20)
/* A command longer than this goes to a private file (one argument may hold 128 KiB). */
#define MAX_INLINE_COMMAND 100000
#define MAX_FRAME (64u << 20)

typedef struct wait_req {
  struct wait_req *next;
  double next_at, step, report_every, report_due;
  int clean, stalled;
} wait_req_t;

typedef struct cmd {
  struct cmd *next;
  char *id;
  pid_t pid;
  int sweep; /* a marker-only termination (op sweep): no process of ours, no exit frame */
  int reaped, forgotten, pty;
  int out_fd, err_fd, in_fd;
  buf_t inbuf;
  int ineof;
  tracker_t tr;
  /* Termination: TERM sent at start; polls until empty, freeze-then-kill at kill_at. */
  int terming, hard;
  double kill_at, term_next, term_step;
  int term_clean;
  wait_req_t *waits;
  int waits_seen;
} cmd_t;

static const char *shell;
static const char *stall_mode; /* test hook, see docs/agent-protocol.md */
static cmd_t *cmds;
static buf_t outq, inq;
static int stdin_open = 1;
static pid_t self;

/* ---- the client side: frames out, frames in ---- */

static void shutdown_all(int code);

static void flush_out(void) {
  while (outq.len > 0) {
    ssize_t n = write(1, outq.data, outq.len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      /* EPIPE and the like: nobody reads us any more. */
      shutdown_all(0);
    }
    buf_consume(&outq, (size_t)n);
  }
}

static void send_frame(const char *op, const char *id, const void *data, size_t len) {
  buf_printf(&outq, "%s %s %zu\n", op, id, len);
  buf_append(&outq, data, len);
  flush_out();
}

static void send_text(const char *op, const char *id, const char *text) { send_frame(op, id, text, strlen(text)); }

static cmd_t *find_cmd(const char *id) {
  for (cmd_t *c = cmds; c; c = c->next)
    if (strcmp(c->id, id) == 0) return c;
  return NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void free_cmd(cmd_t *c) {
  cmd_t **p = &cmds;
  while (*p && *p != c) p = &(*p)->next;
  if (*p) *p = c->next;
  close_fd(&c->out_fd);
  close_fd(&c->err_fd);
  close_fd(&c->in_fd);
  buf_free(&c->inbuf);
  for (wait_req_t *w = c->waits, *next; w; w = next) {
    next = w->next;
    free(w);
  }
  if (c->tr.cgroup) cgroup_remove(c->tr.cgroup);
  tracker_free(&c->tr);
  free(c->id);
  free(c);
}

/* The stdin of the agent ended (the client is gone) or a signal asked it to stop: every command's
   processes are killed, then the agent exits. The lifeline of every transport. */
static void shutdown_all(int code) {
  for (cmd_t *c = cmds; c; c = c->next) {
    /* One settled look first: most commands left nothing, and a freeze costs several looks. */
    scan_t s = {0};
    tracker_settled(&c->tr, &s, self);
    size_t found = s.found.n;
    scan_free(&s);
    if (found > 0) freeze_kill(&c->tr, self, KILL_LIMIT_MS, NULL);
  }
  while (cmds) free_cmd(cmds);
  if (cgroup_base) rmdir(cgroup_base);
  _exit(code);
}

/* ---- commands ---- */

static void read_stream(cmd_t *c, int err) {
  static char chunk[65536];
  int *fd = err ? &c->err_fd : &c->out_fd;
  if (*fd < 0) return;
  ssize_t n = read(*fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  /* A terminal's master reads EIO once no process holds the slave any more: its end of output. */
  if (n <= 0) {
    close_fd(fd);
    send_text(err ? "eof2" : "eof1", c->id, "");
    return;
  }
  send_frame(err ? "err" : "out", c->id, chunk, (size_t)n);
}

/* Output the main process wrote before it exited goes first. */
static void drain(cmd_t *c) {
  for (int which = 0; which < 2; which++)
    for (int i = 0; i < 64; i++) {
      int fd = which ? c->err_fd : c->out_fd;
      if (fd < 0) break;
      struct pollfd p = {fd, POLLIN, 0};
      if (poll(&p, 1, 0) <= 0) break;
      read_stream(c, which);
    }
}

static size_t count_leftovers(cmd_t *c) {
  scan_t s = {0};
  tracker_settled(&c->tr, &s, self);
  size_t n = s.found.n;
  if (!c->reaped && c->pid && pidset_has(&s.found, c->pid)) n--;
  scan_free(&s);
  return n;
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    cmd_t *c = NULL;
    for (cmd_t *x = cmds; x; x = x->next)
      if (x->pid == pid && !x->reaped && !x->sweep) c = x;
    if (!c) continue;
    drain(c);
    c->reaped = 1;
    c->tr.claim.leader_reaped = 1;
    /* The leftover count rides along: the client asks for it right after every exit. */
    char text[64];
    size_t left = count_leftovers(c);
    if (WIFSIGNALED(status)) snprintf(text, sizeof text, "s %d %zu", WTERMSIG(status), left);
    else snprintf(text, sizeof text, "c %d %zu", WEXITSTATUS(status), left);
    send_text("exit", c->id, text);
    if (c->forgotten && !c->terming && !c->waits) free_cmd(c);
  }
}

static int named(const char *entry, const char *name) {
  size_t n = strlen(name);
  return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

/* The command's environment: the agent's own less secret names (secret.c) and the kit's own
   variables, then the caller's pairs (trusted: they win), then the marker. */
static char **command_env(char **pairs, int npairs, const char *marker) {
  size_t n = 0;
  while (environ[n]) n++;
  char **env = xmalloc((n + (size_t)npairs + 2) * sizeof *env);
  size_t k = 0;
  static const char *dropped[] = {"BASH_ENV", "ENV", "DSH_BASH_CGROUP", "DSH_BASH_ENV_NEXT", MARKER_VARIABLE};
  for (size_t i = 0; i < n; i++) {
    const char *e = environ[i];
    const char *eq = strchr(e, '=');
    if (!eq) continue;
    int drop = is_secret(e, (size_t)(eq - e));
    for (size_t d = 0; d < sizeof dropped / sizeof *dropped && !drop; d++) drop = named(e, dropped[d]);
    for (int p = 0; p < npairs && !drop; p++) {
      const char *peq = strchr(pairs[p], '=');
      if (peq && (size_t)(peq - pairs[p]) == (size_t)(eq - e) && strncmp(pairs[p], e, (size_t)(eq - e)) == 0) drop = 1;
    }
    if (!drop) env[k++] = (char *)e;
  }
  for (int p = 0; p < npairs; p++) env[k++] = pairs[p];
  buf_t m = {0};
  buf_printf(&m, "%s=%s", MARKER_VARIABLE, marker);
  env[k++] = m.data;
  env[k] = NULL;
  return env;
}

static void child_fail(int errfd, int code, const char *fmt, const char *arg) {
  char text[1024];
  snprintf(text, sizeof text, fmt, arg, strerror(errno));
  ssize_t ignored = write(errfd, text, strlen(text));
  (void)ignored;
  _exit(code);
}

typedef struct {
  const char *wd, *marker, *mode, *command;
  char **pairs;
  int npairs;
} run_t;

static void set_size(int fd, int cols, int rows) {
  struct winsize ws = {(unsigned short)rows, (unsigned short)cols, 0, 0};
  ioctl(fd, TIOCSWINSZ, &ws);
}

static int open_pty(int cols, int rows, int *master, int *slave) {
  char name[128];
  *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*master < 0) return -1;
  if (unlockpt(*master) < 0 || ptsname_r(*master, name, sizeof name) != 0) goto fail;
  set_size(*master, cols, rows);
  /* Opened here (O_NOCTTY: the agent never takes a terminal) so that the master cannot read EIO
     before the child has it. */
  *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*slave < 0) goto fail;
  return 0;
fail:
  close(*master);
  return -1;
}

static void start_cmd(const char *id, run_t *r) {
  int cols = 0, rows = 0, pty = sscanf(r->mode, "pty,%d,%d", &cols, &rows) == 2;
  int piped_stdin = strcmp(r->mode, "pipe") == 0;
  if (!pty && !piped_stdin && strcmp(r->mode, "none") != 0) return send_text("fail", id, "spawn:unknown stdin mode");
  int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, master = -1, slave = -1, status[2];
  if (pty) {
    if (open_pty(cols > 0 ? cols : 80, rows > 0 ? rows : 24, &master, &slave) < 0) {
      char text[256];
      snprintf(text, sizeof text, "spawn:pty: %s", strerror(errno));
      return send_text("fail", id, text);
    }
  } else if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || (piped_stdin && pipe2(in, O_CLOEXEC) < 0)) {
    char text[256];
    snprintf(text, sizeof text, "spawn:pipe: %s", strerror(errno));
    for (int i = 0; i < 2; i++) close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]);
    return send_text("fail", id, text);
  }
  if (pipe2(status, O_CLOEXEC) < 0) die("pipe: %s", strerror(errno));
  char *cg = cgroup_make(id[0] ? id : "cmd");
  pid_t pid = fork();
  if (pid < 0) {
    char text[256];
    snprintf(text, sizeof text, "spawn:fork: %s", strerror(errno));
    send_text("fail", id, text);
    for (int i = 0; i < 2; i++) close_fd(&out[i]), close_fd(&err[i]), close_fd(&in[i]), close_fd(&status[i]);
    close_fd(&master), close_fd(&slave);
    if (cg) cgroup_remove(cg), free(cg);
    return;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    if (cg) cgroup_join(cg);
    if (pty) {
      /* The new session's controlling terminal: ^C and ^Z become signals of its foreground group. */
      if (ioctl(slave, TIOCSCTTY, 0) < 0) child_fail(status[1], 126, "spawn:no controlling terminal%s: %s", "");
      dup2(slave, 0), dup2(slave, 1), dup2(slave, 2);
    } else {
      if (piped_stdin) dup2(in[0], 0);
      else {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0 && null != 0) dup2(null, 0), close(null);
      }
      dup2(out[1], 1), dup2(err[1], 2);
    }
    struct stat st;
    if (stat(r->wd, &st) < 0) child_fail(status[1], 125, "nowd%s", "");
    if (!S_ISDIR(st.st_mode)) child_fail(status[1], 125, "notdir%s", "");
    if (chdir(r->wd) < 0) child_fail(status[1], 125, "noaccess%s", "");
    environ = command_env(r->pairs, r->npairs, r->marker);
    /* Only fds 0-2 reach the command: everything the agent holds is close-on-exec. */
    char *argv[6] = {(char *)shell, "--noprofile", "--norc", "-c", (char *)r->command, NULL};
    if (strlen(r->command) > MAX_INLINE_COMMAND) {
      /* Longer than the kernel allows for one argument: a private file the shell reads and deletes. */
      const char *tmp = getenv("TMPDIR");
      char file[4096];
      snprintf(file, sizeof file, "%s/dsh-bash-command.%d.%ld", tmp && *tmp ? tmp : "/tmp", (int)getpid(), (long)(now_ms() * 1000) % 1000000000L);
      int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) child_fail(status[1], 126, "spawn:cannot store the command in %s: %s", file);
      size_t len = strlen(r->command), at = 0;
      while (at < len) {
        ssize_t n = write(fd, r->command + at, len - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) child_fail(status[1], 126, "spawn:cannot store the command in %s: %s", file);
        at += (size_t)n;
      }
      close(fd);
      char *long_argv[7] = {(char *)shell, "--noprofile", "--norc", "-c", "eval \"$(cat -- \"$0\" && rm -f -- \"$0\")\"", file, NULL};
      execvp(shell, long_argv);
      child_fail(status[1], 127, "spawn:cannot run %s: %s", shell);
    }
    execvp(shell, argv);
    child_fail(status[1], 127, "spawn:cannot run %s: %s", shell);
  }
  close(status[1]);
  close_fd(&out[1]), close_fd(&err[1]), close_fd(&in[0]), close_fd(&slave);
  /* The child's word: nothing (it exec'd: close-on-exec closed the pipe) or why it could not start. */
  char why[1024];
  ssize_t got = 0, n;
  while ((n = read(status[0], why + got, sizeof why - 1 - (size_t)got)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += n;
    if ((size_t)got >= sizeof why - 1) break;
  }
  close(status[0]);
  if (got > 0) {
    why[got] = '\0';
    waitpid(pid, NULL, 0);
    close_fd(&out[0]), close_fd(&err[0]), close_fd(&in[1]), close_fd(&master);
    if (cg) cgroup_remove(cg), free(cg);
    return send_text("fail", id, why);
  }
  cmd_t *c = xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->id = xstrdup(id);
  c->pid = pid;
  c->pty = pty;
  tracker_init(&c->tr, r->marker);
  claim_init_parent(&c->tr.claim, pid);
  c->tr.cgroup = cg;
  if (pty) {
    c->out_fd = master;
    c->err_fd = -1;
    c->in_fd = fcntl(master, F_DUPFD_CLOEXEC, 3);
  } else {
    c->out_fd = out[0];
    c->err_fd = err[0];
    c->in_fd = piped_stdin ? in[1] : -1;
  }
  int fds[3] = {c->out_fd, c->err_fd, c->in_fd};
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
  c->next = cmds;
  cmds = c;
  /* The leader's start time rides along: a second-channel kill matches the group only while the
     process with this pid is still this one. */
  pstat_t st;
  char text[64];
  snprintf(text, sizeof text, "%d %llu", (int)pid, read_stat(pid, &st) == 0 ? st.start : 0ULL);
  send_text("ok", id, text);
}

static void flush_stdin(cmd_t *c) {
  while (c->in_fd >= 0 && c->inbuf.len > 0) {
    ssize_t n = write(c->in_fd, c->inbuf.data, c->inbuf.len);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return;
      /* The reader is gone (EPIPE): what is left cannot be delivered. */
      buf_consume(&c->inbuf, c->inbuf.len);
      break;
    }
    buf_consume(&c->inbuf, (size_t)n);
  }
  if (c->ineof && c->inbuf.len == 0 && c->in_fd >= 0) close_fd(&c->in_fd);
}

static void start_term(cmd_t *c, double grace_ms) {
  if (c->terming) return;
  scan_t s = {0};
  tracker_settled(&c->tr, &s, self);
  size_t hit = signal_scan(&s, SIGTERM);
  scan_free(&s);
  double t = now_ms();
  c->terming = 1;
  c->hard = 0;
  c->kill_at = t + grace_ms;
  c->term_step = 10;
  c->term_next = t + 10 < c->kill_at ? t + 10 : c->kill_at;
  /* A clean first look still needs a second one before `termed`. */
  c->term_clean = hit ? 0 : 1;
}

static void add_wait(cmd_t *c, double report_ms) {
  wait_req_t *w = xmalloc(sizeof *w);
  memset(w, 0, sizeof *w);
  double t = now_ms();
  w->next_at = t;
  w->step = 10;
  w->report_every = report_ms;
  w->report_due = report_ms > 0 ? t + report_ms : 0;
  /* Test hook: a wait that never scans, as one whose loop was stuck (every wait, or with `once`
     each command's first). */
  if (stall_mode && *stall_mode) w->stalled = strcmp(stall_mode, "once") == 0 ? c->waits_seen == 0 : 1;
  c->waits_seen++;
  w->next = c->waits;
  c->waits = w;
}

/* `in` … `sweep`: see docs/agent-protocol.md. */
static void control(const char *op, const char *id, char *payload, size_t len) {
  if (strcmp(op, "run") == 0) {
    if (find_cmd(id)) return send_text("error", id, "run: the id is taken");
    run_t r = {0};
    char *field[4], *p = payload, *end = payload + len;
    for (int i = 0; i < 4; i++) {
      char *nul = memchr(p, '\0', (size_t)(end - p));
      if (!nul) return send_text("error", id, "run: malformed payload");
      field[i] = p;
      p = nul + 1;
    }
    r.wd = field[0], r.marker = field[1], r.mode = field[2];
    r.npairs = atoi(field[3]);
    if (r.npairs < 0 || r.npairs > 100000) return send_text("error", id, "run: malformed payload");
    r.pairs = xmalloc(((size_t)r.npairs + 1) * sizeof *r.pairs);
    for (int i = 0; i < r.npairs; i++) {
      char *nul = memchr(p, '\0', (size_t)(end - p));
      if (!nul || !strchr(p, '=')) {
        free(r.pairs);
        return send_text("error", id, "run: malformed payload");
      }
      r.pairs[i] = xstrdup(p);
      p = nul + 1;
    }
    /* The rest is the command (its own NULs, if any, kept: bash stops at the first). */
    r.command = p;
    start_cmd(id, &r);
    for (int i = 0; i < r.npairs; i++) free(r.pairs[i]);
    free(r.pairs);
    return;
  }
  if (strcmp(op, "sweep") == 0) {
    /* A marker-only termination of a command this agent did not start (one lost with an earlier
       connection): payload `<marker> <grace ms>`. */
    char marker[512];
    double grace = 0;
    if (find_cmd(id) || sscanf(payload, "%511s %lf", marker, &grace) < 1) return send_text("error", id, "sweep: malformed payload");
    cmd_t *c = xmalloc(sizeof *c);
    memset(c, 0, sizeof *c);
    c->id = xstrdup(id);
    c->sweep = c->reaped = c->forgotten = 1;
    c->out_fd = c->err_fd = c->in_fd = -1;
    tracker_init(&c->tr, marker);
    c->next = cmds;
    cmds = c;
    return start_term(c, grace);
  }
  cmd_t *c = find_cmd(id);
  if (!c) {
    if (strcmp(op, "count") == 0) send_text("count", id, "0");
    else if (strcmp(op, "term") == 0) send_text("termed", id, "");
    else if (strcmp(op, "wait") == 0) send_text("empty", id, "");
    else if (strcmp(op, "modes") == 0) send_text("modes", id, "");
    else if (strcmp(op, "in") && strcmp(op, "eof") && strcmp(op, "size") && strcmp(op, "forget")) send_text("error", id, "unknown op");
    return;
  }
  if (strcmp(op, "in") == 0) {
    if (c->in_fd < 0) return;
    buf_append(&c->inbuf, payload, len);
    flush_stdin(c);
  } else if (strcmp(op, "eof") == 0) {
    /* With a terminal, Ctrl-D is a byte: the input never ends. */
    if (!c->pty) c->ineof = 1;
    flush_stdin(c);
  } else if (strcmp(op, "size") == 0) {
    int cols, rows;
    if (c->pty && c->in_fd >= 0 && sscanf(payload, "%d %d", &cols, &rows) == 2 && cols > 0 && rows > 0) set_size(c->in_fd, cols, rows);
  } else if (strcmp(op, "modes") == 0) {
    /* The terminal's echo and line-mode flags in stty's words (`-echo icanon`), read with tcgetattr
       on the master (a pty master's settings are its slave's): echo is off while a program reads a
       secret. Empty without a terminal. */
    struct termios tio;
    int fd = c->in_fd >= 0 ? c->in_fd : c->out_fd;
    if (!c->pty || fd < 0 || tcgetattr(fd, &tio) < 0) send_text("modes", id, "");
    else send_text("modes", id, (tio.c_lflag & ECHO) ? ((tio.c_lflag & ICANON) ? "echo icanon" : "echo -icanon") : ((tio.c_lflag & ICANON) ? "-echo icanon" : "-echo -icanon"));
  } else if (strcmp(op, "count") == 0) {
    char text[32];
    snprintf(text, sizeof text, "%zu", count_leftovers(c));
    send_text("count", id, text);
  } else if (strcmp(op, "term") == 0) {
    start_term(c, atof(payload));
  } else if (strcmp(op, "wait") == 0) {
    add_wait(c, len ? atof(payload) : 0);
  } else if (strcmp(op, "forget") == 0) {
    close_fd(&c->out_fd), close_fd(&c->err_fd), close_fd(&c->in_fd);
    buf_free(&c->inbuf);
    c->forgotten = 1;
    for (wait_req_t *w = c->waits, *next; w; w = next) {
      next = w->next;
      free(w);
    }
    c->waits = NULL;
    if (c->reaped && !c->terming) free_cmd(c);
  } else {
    send_text("error", id, "unknown op");
  }
}

static void protocol_error(const char *what) {
  send_text("error", "0", what);
  shutdown_all(3);
}

static void parse_input(void) {
  while (inq.len > 0) {
    char *nl = memchr(inq.data, '\n', inq.len);
    if (!nl) {
      if (inq.len > 512) protocol_error("a frame header longer than 512 bytes");
      return;
    }
    *nl = '\0';
    char op[32], id[256];
    unsigned long long len;
    char extra;
    if (sscanf(inq.data, "%31s %255s %llu%c", op, id, &len, &extra) != 3 || len > MAX_FRAME) protocol_error("a malformed frame header");
    size_t header = (size_t)(nl - inq.data) + 1;
    if (inq.len < header + len) {
      *nl = '\n';
      return;
    }
    char *payload = xmalloc((size_t)len + 1);
    memcpy(payload, inq.data + header, (size_t)len);
    payload[len] = '\0';
    buf_consume(&inq, header + (size_t)len);
    control(op, id, payload, (size_t)len);
    free(payload);
  }
}

/* ---- timers: terminations and waits ---- */

static double run_timers(void) {
  double t = now_ms(), next = -1;
#define DUE(x) (next < 0 || (x) < next ? (next = (x)) : 0)
  for (cmd_t *c = cmds, *after; c; c = after) {
    after = c->next;
    if (c->terming && t >= c->term_next) {
      if (t >= c->kill_at && !c->hard) {
        size_t killed = 0;
        c->hard = 1;
        if (freeze_kill(&c->tr, self, KILL_LIMIT_MS, &killed)) c->term_clean = CONFIRM_SCANS;
        else c->term_clean = 0;
      } else {
        scan_t s = {0};
        tracker_settled(&c->tr, &s, self);
        if (s.found.n == 0) c->term_clean++;
        else {
          c->term_clean = 0;
          /* Past the freeze-then-kill (a process it could not end: uninterruptible sleep): KILL on
             every look, 50 ms apart, as long as it takes. */
          if (c->hard) signal_scan(&s, SIGKILL);
        }
        scan_free(&s);
      }
      t = now_ms();
      if (c->term_clean >= CONFIRM_SCANS) {
        c->terming = 0;
        send_text("termed", c->id, "");
        if (c->sweep || (c->forgotten && c->reaped && !c->waits)) {
          free_cmd(c);
          continue;
        }
      } else if (c->term_clean > 0) {
        c->term_next = t + 10;
      } else if (c->hard) {
        c->term_next = t + 50;
      } else {
        if (c->term_step < 100) c->term_step *= 2;
        c->term_next = t + c->term_step;
        if (c->term_next > c->kill_at) c->term_next = c->kill_at;
      }
    }
    if (c->terming) DUE(c->term_next);
    for (wait_req_t **wp = &c->waits; *wp;) {
      wait_req_t *w = *wp;
      if (w->stalled) {
        wp = &w->next;
        continue;
      }
      if (t >= w->next_at) {
        scan_t s = {0};
        tracker_settled(&c->tr, &s, self);
        t = now_ms();
        if (s.found.n == 0) {
          if (++w->clean >= CONFIRM_SCANS) {
            scan_free(&s);
            send_text("empty", c->id, "");
            *wp = w->next;
            free(w);
            continue;
          }
          w->next_at = t + 10;
        } else {
          w->clean = 0;
          if (w->step < 200) w->step *= 2;
          w->next_at = t + w->step;
          /* A wait that does not end explains itself: after `report` ms, then twice as long more, … */
          if (w->report_due > 0 && t >= w->report_due) {
            buf_t desc = {0};
            describe_scan(&s, &desc);
            send_frame("still", c->id, desc.data ? desc.data : "", desc.len);
            buf_free(&desc);
            w->report_every *= 2;
            w->report_due = t + w->report_every;
          }
        }
        scan_free(&s);
      }
      DUE(w->next_at);
      if (w->report_due > 0) DUE(w->report_due);
      wp = &w->next;
    }
  }
#undef DUE
  return next;
}

/* ---- the loop ---- */

int serve_main(int argc, char **argv) {
  if (argc < 1) die("usage: serve <shell> [secret rule (glob, !NAME)...]");
  self = getpid();
  shell = xstrdup(argv[0]);
  secret_rules_init(argc - 1, argv + 1);
  stall_mode = getenv("DSH_BASH_AGENT_TEST_STALL_WAITS");
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD), sigaddset(&mask, SIGTERM), sigaddset(&mask, SIGHUP), sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd < 0) die("signalfd: %s", strerror(errno));
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  /* `off`: the scans and the SIGSTOP sweep only, even where a cgroup could be had (tests). */
  const char *cg = getenv("DSH_BASH_AGENT_CGROUP");
  if (!cg || strcmp(cg, "off") != 0) cgroup_setup();
  buf_t hello = {0};
  buf_printf(&hello, "%s %d %s%s", AGENT_PROCESS_NAME, PROTOCOL_VERSION, SOURCE_SHA256, cgroup_base ? " cgroup" : "");
  send_frame("hello", "0", hello.data, hello.len);
  buf_free(&hello);
  struct pollfd *fds = NULL;
  cmd_t **owners = NULL;
  size_t cap = 0;
  for (;;) {
    double next = run_timers();
    size_t n = 0, count = 3;
    for (cmd_t *c = cmds; c; c = c->next) count += 3;
    if (count > cap) {
      cap = count * 2;
      fds = xrealloc(fds, cap * sizeof *fds);
      owners = xrealloc(owners, cap * sizeof *owners);
    }
    fds[n] = (struct pollfd){stdin_open ? 0 : -1, POLLIN, 0}, owners[n++] = NULL;
    fds[n] = (struct pollfd){outq.len ? 1 : -1, POLLOUT, 0}, owners[n++] = NULL;
    fds[n] = (struct pollfd){sigfd, POLLIN, 0}, owners[n++] = NULL;
    int reading = outq.len < OUT_HIGH_WATER;
    for (cmd_t *c = cmds; c; c = c->next) {
      if (reading && c->out_fd >= 0) fds[n] = (struct pollfd){c->out_fd, POLLIN, 0}, owners[n++] = c;
      if (reading && c->err_fd >= 0) fds[n] = (struct pollfd){c->err_fd, POLLIN, 0}, owners[n++] = c;
      if (c->in_fd >= 0 && c->inbuf.len > 0) fds[n] = (struct pollfd){c->in_fd, POLLOUT, 0}, owners[n++] = c;
    }
    int timeout = next < 0 ? -1 : (int)(next - now_ms() + 0.999);
    if (next >= 0 && timeout < 0) timeout = 0;
    if (poll(fds, n, timeout) < 0 && errno != EINTR) die("poll: %s", strerror(errno));
    if (fds[2].revents) {
      struct signalfd_siginfo info;
      int stop = 0;
      while (read(sigfd, &info, sizeof info) == sizeof info)
        if (info.ssi_signo != SIGCHLD) stop = 1;
      if (stop) shutdown_all(0);
      reap();
    }
    if (fds[1].revents) flush_out();
    if (fds[0].revents) {
      char chunk[65536];
      ssize_t got = read(0, chunk, sizeof chunk);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) shutdown_all(0);
      if (got > 0) {
        buf_append(&inq, chunk, (size_t)got);
        parse_input();
      }
    }
    /* Commands may have gone in control(): only descriptors still owned by a live command count. */
    for (size_t i = 3; i < n; i++) {
      if (!fds[i].revents) continue;
      cmd_t *c = cmds;
      while (c && c != owners[i]) c = c->next;
      if (!c) continue;
      if (fds[i].fd == c->out_fd && fds[i].events == POLLIN) read_stream(c, 0);
      else if (fds[i].fd == c->err_fd && fds[i].events == POLLIN) read_stream(c, 1);
      else if (fds[i].fd == c->in_fd) {
        if (fds[i].revents & (POLLERR | POLLHUP)) {
          buf_consume(&c->inbuf, c->inbuf.len);
          close_fd(&c->in_fd);
        } else flush_stdin(c);
      }
    }
  }
}
