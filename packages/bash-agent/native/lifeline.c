/*
 * PID 1 of a session container or pod: it reaps orphans (SIGCHLD ignored: the kernel reaps them),
 * exits at once on TERM, and is the session's lifeline. When it exits, the kernel kills every
 * other process of the PID namespace.
 *
 * `init` (containers): lives while its stdin, attached by the server before the start, stays open.
 * When the server goes in any way the engine closes that stdin, and the container ends.
 *
 * `pod-init <first> <gone> <name>` (pods, which have no attached stdin): lives while an agent runs.
 * Polled every 0.2 s through /proc:
 * - a process whose command line is exactly `name` (a serving agent) runs: alive;
 * - before any agent was seen, another process (the workspace copy, the agent's installation)
 *   runs: alive;
 * - nothing else runs and no agent was seen, but the namespace's last pid (/proc/loadavg) moved
 *   since the start: an exec came and went (an agent too short-lived to be polled): seen;
 * - it exits once no agent was seen for `first` seconds, or an agent was seen and has been gone
 *   for `gone` seconds (0: never exits).
 */
#include "agent.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

static void become_reaper(void) {
  signal(SIGCHLD, SIG_IGN);
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
}

int init_main(int argc, char **argv) {
  (void)argc, (void)argv;
  become_reaper();
  char chunk[65536];
  for (;;) {
    ssize_t n = read(0, chunk, sizeof chunk);
    if (n == 0 || (n < 0 && errno != EINTR)) return 0;
  }
}

static long last_pid(void) {
  buf_t b = {0};
  long pid = 0;
  if (read_file("/proc/loadavg", &b) == 0) {
    /* "0.00 0.01 0.05 1/123 4567": the fifth field. */
    char *p = strrchr(b.data, ' ');
    if (p) pid = strtol(p + 1, NULL, 10);
  }
  buf_free(&b);
  return pid;
}

/* True when the command line is exactly `name` followed only by NULs (at least one). */
static int is_agent(pid_t pid, const char *name) {
  char path[64];
  buf_t b = {0};
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  int found = 0;
  size_t n = strlen(name);
  if (read_file(path, &b) == 0 && b.len > n && memcmp(b.data, name, n) == 0) {
    found = 1;
    for (size_t i = n; i < b.len; i++)
      if (b.data[i] != '\0') found = 0;
  }
  buf_free(&b);
  return found;
}

int pod_init_main(int argc, char **argv) {
  if (argc < 3) die("usage: pod-init <first seconds> <gone seconds> <agent name>");
  double first = atof(argv[0]) * 1000, gone = atof(argv[1]) * 1000;
  const char *name = argv[2];
  become_reaper();
  if (gone <= 0)
    for (;;) pause();
  pid_t self = getpid();
  long pid0 = last_pid();
  int seen = 0;
  double last = now_ms();
  for (;;) {
    int agent = 0, other = 0;
    DIR *d = opendir("/proc");
    if (d) {
      struct dirent *e;
      while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
        if (pid == self) continue;
        other = 1;
        if (is_agent(pid, name)) {
          agent = 1;
          break;
        }
      }
      closedir(d);
    }
    if (agent) seen = 1, last = now_ms();
    else if (other && !seen) last = now_ms();
    else if (!seen && last_pid() != pid0) seen = 1;
    if (!agent && now_ms() - last >= (seen ? gone : first)) {
      fprintf(stderr, "dsh-bash: no agent for %g s: the pod ends\n", gone / 1000);
      return 0;
    }
    sleep_ms(200);
  }
}
