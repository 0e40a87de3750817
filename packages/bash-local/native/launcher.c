/*
 * dsh-launcher: the native launcher helper of @deepseek-ai/dsh-bash-local (issue 16, third round).
 *
 * Same job and replies as dist/launcher-helper.js (the Node helper), but in a small static process:
 * a fork of it copies almost nothing (a fork of a Node process costs ~2x a fork+exec from here; see
 * bench/README.md, "Launcher, third round"). Starts never wait for each other: each child reports
 * its exec through a close-on-exec pipe that the main loop polls, so the helper forks the next
 * command while earlier ones are still on their way to exec. (It used vfork first, which suspends
 * the helper until the child has exec'd: under a burst of 50 the starts queued behind each other,
 * ~13 ms each on a loaded machine; bench/README.md, "Line-heavy output and bursts".)
 *
 * Requests (stdin): a decimal byte count, '\n', then that many bytes of NUL-terminated fields:
 *   start:  "S" id file cwd stdout stderr nextra (path accessmode)... nargs argv... (argv[0]
 *           included) nenv name=value...; the extra descriptors (a sandbox's status file, seccomp
 *           program, protected directories: the server's own as /proc/<pid>/fd/<n>) become fd 3, 4, …
 *   mkfifo: "F" id npaths path...
 * Replies (stdout), one JSON object a line: {"id":N,"pid":P} once the command has exec'd (always
 * before that command's exit reply),
 * {"id":N,"error":"..."} when it could not start, {"id":N,"exitCode":C,"signalNumber":S} once it
 * exited (one of the two is null), {"id":N,"made":true} or {"id":N,"error":"..."} for a mkfifo.
 * It exits when stdin ends (once the commands still starting have exec'd or failed); the commands
 * are the server's to kill, never this helper's.
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

/*
 * Replies are gathered and written once per turn of the main loop (`flush`, before it waits): the
 * replies of a burst wake the server once, not once each (on a busy machine every wake-up of the
 * server can cost it its CPU; see the server's side in helper-launch.ts).
 */
static char *out_buffer;
static size_t out_length, out_cap;

/* Writes the gathered replies; a server that stopped reading ends this helper. */
static void flush(void) {
  const char *at = out_buffer;
  while (out_length > 0) {
    ssize_t n = write(1, at, out_length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(0);
    at += n;
    out_length -= (size_t)n;
  }
}

/* One reply line, written by the next `flush`. */
static void reply(const char *line, size_t length) {
  if (out_length + length > out_cap) {
    while (out_length + length > out_cap) out_cap = out_cap ? out_cap * 2 : 4096;
    if (!(out_buffer = realloc(out_buffer, out_cap))) _exit(70);
  }
  memcpy(out_buffer + out_length, line, length);
  out_length += length;
}

static void reply_error(long id, const char *what, int error) {
  char line[512];
  /* strerror's text is plain ASCII without quotes or backslashes. */
  int n = snprintf(line, sizeof line, "{\"id\":%ld,\"error\":\"%s: %s\"}\n", id, what, strerror(error));
  reply(line, (size_t)n);
}

/* Why a child could not exec, sent on its status pipe: the step (an index into STEPS) and errno. */
struct failure {
  int step, error;
};
enum { STEP_SETSID, STEP_PIPES, STEP_DUP2, STEP_DEVNULL, STEP_EXTRA, STEP_CHDIR, STEP_EXEC };
static const char *const STEPS[] = { "setsid", "cannot open the output pipes", "dup2", "/dev/null", "cannot open the descriptors for the command", "chdir", "spawn" };

/* A command forked but not yet known to have exec'd: its status pipe is polled. */
struct starting {
  pid_t pid;
  long id;
  int fd;
  /* Reaped before its pipe said how the exec went; `status` is its wait status. */
  int reaped, status;
  /* For the error text (the request's buffer is reused meanwhile). */
  char *file, *cwd;
};
static struct starting *starting;
static size_t starting_count, starting_cap;

static void reply_exit(long id, int status) {
  char line[128];
  int n = WIFSIGNALED(status)
    ? snprintf(line, sizeof line, "{\"id\":%ld,\"exitCode\":null,\"signalNumber\":%d}\n", id, WTERMSIG(status))
    : snprintf(line, sizeof line, "{\"id\":%ld,\"exitCode\":%d,\"signalNumber\":null}\n", id, WEXITSTATUS(status));
  reply(line, (size_t)n);
}

/* The child, between fork and exec: only system calls (and writing its failure to `report`). */
__attribute__((noreturn)) static void child(int report, const char *file, const char *cwd, const char *out, const char *err, char **extra, size_t nextra, int *opened, char **argv, char **envp) {
  struct failure failure = { 0, 0 };
  int fd;
  sigset_t none;
  sigemptyset(&none);
  signal(SIGPIPE, SIG_DFL);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (setsid() < 0) { failure.step = STEP_SETSID; goto fail; }
  /* Blocking opens: the server holds the read ends open, so they return at once. */
  if ((fd = open(out, O_WRONLY | O_CLOEXEC)) < 0) { failure.step = STEP_PIPES; goto fail; }
  if (dup2(fd, 1) < 0) { failure.step = STEP_DUP2; goto fail; }
  if ((fd = open(err, O_WRONLY | O_CLOEXEC)) < 0) { failure.step = STEP_PIPES; goto fail; }
  if (dup2(fd, 2) < 0) { failure.step = STEP_DUP2; goto fail; }
  if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 || dup2(fd, 0) < 0) { failure.step = STEP_DEVNULL; goto fail; }
  /* The extra descriptors: each reopened (close-on-exec) above every target number and above the
     status pipe, then moved to 3, 4, … (dup2 clears close-on-exec; a target never equals a source,
     which dup2 would keep). The status pipe is moved above them too, so that no dup2 lands on it. */
  int floor = (int)(3 + nextra);
  if (report < floor) {
    int moved = fcntl(report, F_DUPFD_CLOEXEC, floor);
    if (moved < 0) { failure.step = STEP_EXTRA; goto fail; }
    report = moved;
  }
  for (size_t i = 0; i < nextra; i++) {
    int mode = (int)strtol(extra[2 * i + 1], NULL, 10) & O_ACCMODE;
    if ((fd = open(extra[2 * i], mode | O_CLOEXEC)) < 0) { failure.step = STEP_EXTRA; goto fail; }
    if ((opened[i] = fcntl(fd, F_DUPFD_CLOEXEC, floor)) < 0) { failure.step = STEP_EXTRA; goto fail; }
    close(fd);
  }
  for (size_t i = 0; i < nextra; i++)
    if (dup2(opened[i], (int)(3 + i)) < 0) { failure.step = STEP_EXTRA; goto fail; }
  if (chdir(cwd) < 0) { failure.step = STEP_CHDIR; goto fail; }
  execve(file, argv, envp);
  failure.step = STEP_EXEC;
fail:
  failure.error = errno;
  while (write(report, &failure, sizeof failure) < 0 && errno == EINTR) {}
  _exit(127);
}

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
  int status_pipe[2];
  if (pipe2(status_pipe, O_CLOEXEC) < 0) {
    int error = errno;
    free(argv), free(envp), free(opened);
    return reply_error(id, "pipe", error);
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(status_pipe[0]);
    child(status_pipe[1], file, cwd, out, err, extra, nextra, opened, argv, envp);
  }
  int error = errno;
  close(status_pipe[1]);
  free(argv), free(envp), free(opened);
  if (pid < 0) {
    close(status_pipe[0]);
    return reply_error(id, "fork", error);
  }
  if (starting_count == starting_cap) {
    starting_cap = starting_cap ? starting_cap * 2 : 64;
    if (!(starting = realloc(starting, starting_cap * sizeof *starting))) _exit(70);
  }
  char *file_copy = strdup(file), *cwd_copy = strdup(cwd);
  if (!file_copy || !cwd_copy) _exit(70);
  starting[starting_count++] = (struct starting){ .pid = pid, .id = id, .fd = status_pipe[0], .file = file_copy, .cwd = cwd_copy };
}

/* The status pipe of starting[i] is readable: end of file (it exec'd) or its failure. */
static void started(size_t i) {
  struct starting entry = starting[i];
  struct failure failure;
  ssize_t n;
  while ((n = read(entry.fd, &failure, sizeof failure)) < 0 && errno == EINTR) {}
  if (n < 0 && errno == EAGAIN) return;
  close(entry.fd);
  starting[i] = starting[--starting_count];
  if (n == (ssize_t)sizeof failure) {
    /* Exited without exec: reaped here (unless it was already), it was never a command. */
    int status;
    if (!entry.reaped) while (waitpid(entry.pid, &status, 0) < 0 && errno == EINTR) {}
    char what[1024];
    if (failure.step == STEP_EXEC) snprintf(what, sizeof what, "spawn %s", entry.file);
    else if (failure.step == STEP_CHDIR) snprintf(what, sizeof what, "cannot enter the workdir %s", entry.cwd);
    else snprintf(what, sizeof what, "%s", STEPS[failure.step >= 0 && failure.step <= STEP_EXEC ? failure.step : STEP_EXEC]);
    reply_error(entry.id, what, failure.error);
  } else {
    /* End of file (the pipe closed on exec) or a read error: the command runs. */
    char line[128];
    int len = snprintf(line, sizeof line, "{\"id\":%ld,\"pid\":%d}\n", entry.id, (int)entry.pid);
    reply(line, (size_t)len);
    if (entry.reaped) reply_exit(entry.id, entry.status);
    else table_put(entry.pid, entry.id);
  }
  free(entry.file);
  free(entry.cwd);
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
    if (id >= 0) {
      reply_exit(id, status);
      continue;
    }
    /* Still starting: its status pipe says how the exec went, then its exit is reported. */
    for (size_t i = 0; i < starting_count; i++)
      if (starting[i].pid == pid) {
        starting[i].reaped = 1;
        starting[i].status = status;
        break;
      }
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
  struct pollfd *fds = NULL;
  size_t fds_cap = 0;
  /* Once stdin ends, the helper only waits for the commands still starting (their pid replies). */
  int input_open = 1;
  for (;;) {
    if (!input_open && starting_count == 0) {
      flush();
      return 0;
    }
    /* stdin, the signalfd, then the status pipe of every command still starting. */
    if (fds_cap < 2 + starting_count) {
      fds_cap = 2 + starting_count + 64;
      if (!(fds = realloc(fds, fds_cap * sizeof *fds))) return 70;
    }
    fds[0] = (struct pollfd){ .fd = input_open ? 0 : -1, .events = POLLIN };
    fds[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
    size_t polled = starting_count;
    for (size_t i = 0; i < polled; i++) fds[2 + i] = (struct pollfd){ .fd = starting[i].fd, .events = POLLIN };
    flush();
    if (poll(fds, 2 + polled, -1) < 0) {
      if (errno == EINTR) continue;
      return 72;
    }
    if (fds[1].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {}
      reap();
    }
    /* From the last: `started` moves the last entry into the slot it frees. */
    for (size_t i = polled; i-- > 0;)
      if (fds[2 + i].revents) {
        for (size_t j = 0; j < starting_count; j++)
          if (starting[j].fd == fds[2 + i].fd) {
            started(j);
            break;
          }
      }
    if (!fds[0].revents) continue;
    if (have == cap && !(buffer = realloc(buffer, cap *= 2))) return 70;
    ssize_t n = read(0, buffer + have, cap - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { /* The server is gone or disposed the executor. */
      input_open = 0;
      continue;
    }
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
