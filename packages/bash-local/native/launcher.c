/*
 * dsh-launcher: the native launcher helper of @deepseek-ai/dsh-bash-local (issue 16, third round).
 *
 * Same job and replies as dist/launcher-helper.js (the Node helper), but it starts each command with
 * vfork(): the child borrows this small process's memory and runs at once on this CPU until it execs,
 * so no page table is copied and nothing waits for the scheduler. Measured on this machine: a Node
 * process's spawn of `bash -c true` costs ~2x a vfork+exec from C (fork from Perl costs the same as
 * Node): see bench/README.md, "Launcher, third round".
 *
 * Requests (stdin): a decimal byte count, '\n', then that many bytes of NUL-terminated fields:
 *   start:  "S" id file cwd stdout stderr nextra (path accessmode)... nargs argv... (argv[0]
 *           included) nenv name=value...; the extra descriptors (a sandbox's status file, seccomp
 *           program, protected directories: the server's own as /proc/<pid>/fd/<n>) become fd 3, 4, …
 *   mkfifo: "F" id npaths path...
 * Replies (stdout), one JSON object a line: {"id":N,"pid":P} once the command has exec'd,
 * {"id":N,"error":"..."} when it could not start, {"id":N,"exitCode":C,"signalNumber":S} once it
 * exited (one of the two is null), {"id":N,"made":true} or {"id":N,"error":"..."} for a mkfifo.
 * It exits when stdin ends; the commands are the server's to kill, never this helper's.
 *
 * Build: packages/bash-local/scripts/build-native.sh (static, so that it runs on any Linux of the
 * architecture; it builds the source's SHA-256 in, checked by test/native-helper.test.ts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The source this binary was built from (scripts/build-native.sh passes its SHA-256): a test checks
   that the shipped binary is the build of this file. */
#ifndef SOURCE_SHA256
#define SOURCE_SHA256 "unknown"
#endif
__attribute__((used)) static const char source_id[] = "dsh-launcher-source-sha256:" SOURCE_SHA256;

/* Pid → request id of the running commands (open addressing; grows). */
static pid_t *table_pid;
static long *table_id;
static size_t table_size, table_used;

static void table_put(pid_t pid, long id);

static size_t slot_of(pid_t pid) {
  size_t mask = table_size - 1, i = ((size_t)pid * 2654435761u) & mask;
  while (table_pid[i] != 0 && table_pid[i] != pid) i = (i + 1) & mask;
  return i;
}

static void table_grow(void) {
  pid_t *old_pid = table_pid;
  long *old_id = table_id;
  size_t old_size = table_size;
  table_size = old_size ? old_size * 2 : 256;
  table_pid = calloc(table_size, sizeof *table_pid);
  table_id = calloc(table_size, sizeof *table_id);
  if (!table_pid || !table_id) _exit(70);
  table_used = 0;
  for (size_t i = 0; i < old_size; i++)
    if (old_pid[i] > 0) table_put(old_pid[i], old_id[i]);
  free(old_pid);
  free(old_id);
}

static void table_put(pid_t pid, long id) {
  if ((table_used + 1) * 2 > table_size) table_grow();
  size_t i = slot_of(pid);
  table_pid[i] = pid;
  table_id[i] = id;
  table_used++;
}

/* Removes a pid (backward-shift deletion keeps the probe chains whole); -1 when unknown. */
static long table_take(pid_t pid) {
  if (!table_size) return -1;
  size_t mask = table_size - 1, i = slot_of(pid);
  if (table_pid[i] != pid) return -1;
  long id = table_id[i];
  table_pid[i] = 0;
  table_used--;
  for (size_t j = (i + 1) & mask; table_pid[j] != 0; j = (j + 1) & mask) {
    pid_t p = table_pid[j];
    long v = table_id[j];
    table_pid[j] = 0;
    table_used--;
    table_put(p, v);
  }
  return id;
}

/* One reply line; a server that stopped reading ends this helper. */
static void reply(const char *line, size_t length) {
  while (length > 0) {
    ssize_t n = write(1, line, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
    line += n;
    length -= (size_t)n;
  }
}

static void reply_error(long id, const char *what, int error) {
  char line[512];
  /* strerror's text is plain ASCII without quotes or backslashes. */
  int n = snprintf(line, sizeof line, "{\"id\":%ld,\"error\":\"%s: %s\"}\n", id, what, strerror(error));
  reply(line, (size_t)n);
}

/* Shared with the vfork child (same memory until it execs): why it could not start. */
static volatile int child_errno;
static volatile const char *child_step;

static void start(long id, char **fields, size_t count) {
  /* fields: file cwd stdout stderr nextra (path mode)... nargs argv... nenv env... */
  if (count < 7) return reply_error(id, "malformed request", EINVAL);
  const char *file = fields[0], *cwd = fields[1], *out = fields[2], *err = fields[3];
  size_t nextra = strtoul(fields[4], NULL, 10), at = 5 + 2 * nextra;
  if (nextra > 1000 || at + 1 > count) return reply_error(id, "malformed request", EINVAL);
  char **extra = fields + 5;
  /* Each count is checked against the fields there are before any sum: a count near SIZE_MAX (strtoul
     of "-1") would wrap the sums and pass. */
  size_t nargs = strtoul(fields[at], NULL, 10);
  if (nargs >= count || at + 1 + nargs + 1 > count) return reply_error(id, "malformed request", EINVAL);
  size_t nenv = strtoul(fields[at + 1 + nargs], NULL, 10);
  if (nenv >= count || at + 2 + nargs + nenv > count) return reply_error(id, "malformed request", EINVAL);
  char **argv = malloc((nargs + 1) * sizeof *argv), **envp = malloc((nenv + 1) * sizeof *envp);
  int *opened = malloc((nextra + 1) * sizeof *opened);
  if (!argv || !envp || !opened) _exit(70);
  memcpy(argv, fields + at + 1, nargs * sizeof *argv);
  argv[nargs] = NULL;
  memcpy(envp, fields + at + 2 + nargs, nenv * sizeof *envp);
  envp[nenv] = NULL;
  child_errno = 0;
  child_step = "";
  pid_t pid = vfork();
  if (pid == 0) {
    /* The child: only system calls until exec (it runs on the parent's memory and stack). */
    int fd;
    sigset_t none;
    sigemptyset(&none);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0) { child_step = "setsid"; goto fail; }
    /* Blocking opens: the server holds the read ends open, so they return at once. */
    if ((fd = open(out, O_WRONLY | O_CLOEXEC)) < 0) { child_step = "cannot open the output pipes"; goto fail; }
    if (dup2(fd, 1) < 0) { child_step = "dup2"; goto fail; }
    if ((fd = open(err, O_WRONLY | O_CLOEXEC)) < 0) { child_step = "cannot open the output pipes"; goto fail; }
    if (dup2(fd, 2) < 0) { child_step = "dup2"; goto fail; }
    if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(fd, 0) < 0) { child_step = "/dev/null"; goto fail; }
    /* The extra descriptors: each reopened (close-on-exec) above every target number, then moved
       to 3, 4, … (dup2 clears close-on-exec; a target never equals a source, which dup2 would keep). */
    for (size_t i = 0; i < nextra; i++) {
      int mode = (int)strtol(extra[2 * i + 1], NULL, 10) & O_ACCMODE;
      if ((fd = open(extra[2 * i], mode | O_CLOEXEC)) < 0) { child_step = "cannot open the descriptors for the command"; goto fail; }
      if ((opened[i] = fcntl(fd, F_DUPFD_CLOEXEC, (int)(3 + nextra))) < 0) { child_step = "cannot open the descriptors for the command"; goto fail; }
      close(fd);
    }
    for (size_t i = 0; i < nextra; i++)
      if (dup2(opened[i], (int)(3 + i)) < 0) { child_step = "cannot open the descriptors for the command"; goto fail; }
    if (chdir(cwd) < 0) { child_step = "chdir"; goto fail; }
    execve(file, argv, envp);
    child_step = "spawn";
  fail:
    child_errno = errno;
    _exit(127);
  }
  int error = errno;
  free(argv);
  free(envp);
  free(opened);
  if (pid < 0) return reply_error(id, "vfork", error);
  if (child_errno != 0) {
    /* Exited without exec: reaped here, it was never a command. */
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    const char *step = (const char *)child_step;
    char what[1024];
    if (strcmp(step, "spawn") == 0) snprintf(what, sizeof what, "spawn %s", file);
    else if (strcmp(step, "chdir") == 0) snprintf(what, sizeof what, "cannot enter the workdir %s", cwd);
    else snprintf(what, sizeof what, "%s", step);
    return reply_error(id, what, child_errno);
  }
  table_put(pid, id);
  char line[128];
  int n = snprintf(line, sizeof line, "{\"id\":%ld,\"pid\":%d}\n", id, (int)pid);
  reply(line, (size_t)n);
}

static void make_fifos(long id, char **fields, size_t count) {
  size_t npaths = count > 0 ? strtoul(fields[0], NULL, 10) : 0;
  int failure = 0;
  if (npaths >= count || 1 + npaths > count) failure = EINVAL;
  /* Some may exist even when one failed: the server adopts whatever FIFO is there. */
  for (size_t i = 0; i < npaths && 1 + i < count; i++)
    if (mkfifo(fields[1 + i], 0600) < 0 && !failure) failure = errno;
  if (failure) return reply_error(id, "mkfifo", failure);
  char line[128];
  int n = snprintf(line, sizeof line, "{\"id\":%ld,\"made\":true}\n", id);
  reply(line, (size_t)n);
}

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    long id = table_take(pid);
    if (id < 0) continue;
    char line[128];
    int n = WIFSIGNALED(status)
      ? snprintf(line, sizeof line, "{\"id\":%ld,\"exitCode\":null,\"signalNumber\":%d}\n", id, WTERMSIG(status))
      : snprintf(line, sizeof line, "{\"id\":%ld,\"exitCode\":%d,\"signalNumber\":null}\n", id, WEXITSTATUS(status));
    reply(line, (size_t)n);
  }
}

/* Splits a request's payload into its NUL-terminated fields and runs it. */
static void handle(char *payload, size_t length) {
  size_t count = 0, cap = 64;
  char **fields = malloc(cap * sizeof *fields);
  if (!fields) _exit(70);
  for (size_t at = 0; at < length;) {
    char *end = memchr(payload + at, '\0', length - at);
    if (!end) break;
    if (count == cap && !(fields = realloc(fields, (cap *= 2) * sizeof *fields))) _exit(70);
    fields[count++] = payload + at;
    at = (size_t)(end - payload) + 1;
  }
  if (count >= 2) {
    long id = strtol(fields[1], NULL, 10);
    if (strcmp(fields[0], "S") == 0) start(id, fields + 2, count - 2);
    else if (strcmp(fields[0], "F") == 0) make_fifos(id, fields + 2, count - 2);
  }
  free(fields);
}

int main(void) {
  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) return 71;
  table_grow();
  size_t cap = 1 << 16, have = 0;
  char *buffer = malloc(cap);
  if (!buffer) return 70;
  struct pollfd fds[2] = { { .fd = 0, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 72;
    }
    if (fds[1].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {}
      reap();
    }
    if (!fds[0].revents) continue;
    if (have == cap && !(buffer = realloc(buffer, cap *= 2))) return 70;
    ssize_t n = read(0, buffer + have, cap - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0; /* The server is gone or disposed the executor. */
    have += (size_t)n;
    /* Every complete request in the buffer. */
    size_t at = 0;
    for (;;) {
      char *newline = memchr(buffer + at, '\n', have - at);
      if (!newline) break;
      size_t length = strtoul(buffer + at, NULL, 10), head = (size_t)(newline - buffer) + 1;
      if (have - head < length) {
        /* Incomplete: make room for the whole of it. */
        while (cap < head - at + length) if (!(buffer = realloc(buffer, cap *= 2))) return 70;
        break;
      }
      handle(buffer + head, length);
      at = head + length;
    }
    memmove(buffer, buffer + at, have - at);
    have -= at;
  }
}
