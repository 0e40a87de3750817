/*
 * A delegated cgroup v2 subtree, when the agent has one (a root SSH login, a user slice with
 * delegation, a container given a writable cgroupfs): one child cgroup per command, so that the
 * freezer stops the whole tree at once and cgroup.kill reaches every process inside, even one that
 * cleared its environment and left the group. Probed at start like bash-local's CgroupManager: a
 * process must really be able to join a child, and cgroup.kill must exist (Linux >= 5.14). Without
 * it the scans and the SIGSTOP sweep do the whole job.
 */
#include "agent.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

char *cgroup_base;

static void unescape(char *s) {
  char *w = s;
  for (char *r = s; *r;) {
    if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
      *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
      r += 4;
    } else {
      *w++ = *r++;
    }
  }
  *w = '\0';
}

/* This process's cgroup v2 directory: the cgroup2 mount joined with the `0::` path. */
static char *own_cgroup(void) {
  buf_t membership = {0}, mounts = {0};
  char *result = NULL;
  if (read_file("/proc/self/cgroup", &membership) < 0 || read_file("/proc/self/mountinfo", &mounts) < 0) goto done;
  char *path = strstr(membership.data, "0::");
  if (!path || (path != membership.data && path[-1] != '\n')) goto done;
  path += 3;
  char *end = strchr(path, '\n');
  if (end) *end = '\0';
  for (char *line = strtok(mounts.data, "\n"); line; line = strtok(NULL, "\n")) {
    char *sep = strstr(line, " - ");
    if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0) continue;
    *sep = '\0';
    char *field[5];
    int n = 0;
    for (char *f = strtok_r(line, " ", &sep); f && n < 5; f = strtok_r(NULL, " ", &sep)) field[n++] = f;
    if (n < 5) continue;
    unescape(field[3]);
    unescape(field[4]);
    size_t rootlen = strlen(field[3]);
    if (strcmp(field[3], "/") == 0) rootlen = 0;
    if (strncmp(path, field[3], rootlen) != 0) continue;
    buf_t b = {0};
    buf_printf(&b, "%s%s", field[4], path + rootlen);
    result = b.data;
    break;
  }
done:
  buf_free(&membership);
  buf_free(&mounts);
  return result;
}

static int write_text(const char *dir, const char *file, const char *text) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

int cgroup_join(const char *dir) { return write_text(dir, "cgroup.procs", "0"); }

/* Removes cgroups left by agents that died without cleaning up (their pid is gone). */
static void remove_stale(const char *own) {
  DIR *d = opendir(own);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    int pid;
    if (sscanf(e->d_name, "dsh-bash-agent-%d", &pid) != 1 || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", own, e->d_name);
    DIR *c = opendir(path);
    if (c) {
      struct dirent *ce;
      while ((ce = readdir(c))) {
        if (ce->d_name[0] == '.' || ce->d_type != DT_DIR) continue;
        char child[4096 + 256];
        snprintf(child, sizeof child, "%s/%s", path, ce->d_name);
        rmdir(child);
      }
      closedir(c);
    }
    rmdir(path);
  }
  closedir(d);
}

void cgroup_setup(void) {
  char *own = own_cgroup();
  if (!own) return;
  remove_stale(own);
  buf_t base = {0}, probe = {0};
  buf_printf(&base, "%s/dsh-bash-agent-%d", own, (int)getpid());
  free(own);
  if (mkdir(base.data, 0755) < 0) {
    buf_free(&base);
    return;
  }
  buf_printf(&probe, "%s/probe", base.data);
  int ok = 0;
  if (mkdir(probe.data, 0755) == 0) {
    char kill_file[4200];
    snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", probe.data);
    if (access(kill_file, W_OK) == 0) {
      pid_t pid = fork();
      if (pid == 0) _exit(cgroup_join(probe.data) == 0 ? 0 : 1);
      int status = 0;
      if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0) ok = 1;
    }
    rmdir(probe.data);
  }
  buf_free(&probe);
  if (!ok) {
    rmdir(base.data);
    buf_free(&base);
    return;
  }
  cgroup_base = base.data;
}

char *cgroup_make(const char *name) {
  if (!cgroup_base) return NULL;
  buf_t b = {0};
  buf_printf(&b, "%s/%s", cgroup_base, name);
  if (mkdir(b.data, 0755) < 0) {
    buf_free(&b);
    return NULL;
  }
  return b.data;
}

void cgroup_pids(const char *dir, pidset_t *out) {
  char path[4096];
  buf_t b = {0};
  snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  if (read_file(path, &b) == 0) {
    for (char *p = b.data; p && *p;) {
      long pid = strtol(p, &p, 10);
      if (pid > 0) pidset_add(out, (pid_t)pid);
      while (*p == '\n') p++;
    }
  }
  buf_free(&b);
}

/* Freezing is asynchronous: wait (a little) until cgroup.events says so. */
int cgroup_freeze(const char *dir, int on) {
  if (write_text(dir, "cgroup.freeze", on ? "1" : "0") < 0) return -1;
  if (!on) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/cgroup.events", dir);
  buf_t b = {0};
  for (int i = 0; i < 200; i++) {
    if (read_file(path, &b) < 0 || strstr(b.data, "frozen 1")) break;
    sleep_ms(1);
  }
  buf_free(&b);
  return 0;
}

int cgroup_kill(const char *dir) { return write_text(dir, "cgroup.kill", "1"); }

void cgroup_remove(const char *dir) {
  for (int i = 0; i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++) sleep_ms(2);
}
