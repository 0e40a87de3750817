/*
 * dsh-netbridge: the bridge between a sandboxed command's private network namespace and the
 * executor's egress proxy (@deepseek-ai/dsh-bash-sandbox, proxy mode; see the README, "Egress by
 * domain").
 *
 *   dsh-netbridge --port PORT --proxy SOCKET --seccomp FD -- COMMAND [ARG]...
 *
 * bwrap executes it as the sandbox's first process, before the command exists. It
 *  1. reads the command's seccomp program from FD (bwrap gets no --seccomp in proxy mode) and
 *     listens on 127.0.0.1:PORT, in the sandbox's own network namespace (loopback only);
 *  2. forks: the child applies that program (no new privileges, then the filter) and executes
 *     COMMAND: the command is filtered exactly as bwrap would filter it, AF_UNIX refused;
 *  3. stays as the forwarder: each connection to 127.0.0.1:PORT becomes a connection to SOCKET (the
 *     proxy's Unix socket, bound into the sandbox) and the bytes are relayed both ways, unread.
 *     It is the one process inside that may create Unix sockets, so it makes itself hard to take
 *     over: not dumpable (no ptrace, no /proc/PID/mem, fd or environ for the command, which has no
 *     capability), SIGTERM and the terminal's signals ignored (the command's stop goes to the
 *     command), its descriptors 0-2 on /dev/null, and its own seccomp filter: no execve, no ptrace,
 *     no process_vm_*, no open, and no socket of any family but AF_UNIX.
 *  4. exits when the command's main process does, with its status (128+N for signal N, as bwrap
 *     itself reports it): bwrap's monitor then reports the command's exit, as without the bridge.
 *     Processes the command left running lose the proxy with it.
 *
 * Build: packages/bash-sandbox/scripts/build-native.sh (static; the source's SHA-256 is built in and
 * checked by test/netbridge.test.ts).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SOURCE_SHA256
#define SOURCE_SHA256 "unknown"
#endif
__attribute__((used)) static const char source_id[] = "dsh-netbridge-source-sha256:" SOURCE_SHA256;

#define MAX_CONNS 256
#define BUF_SIZE 32768
#define MAX_PROGRAM 65536

/* One relayed connection: the command's TCP side (tcp) and the proxy's Unix side (unix). */
struct conn {
  int tcp, unix_fd;
  /* to_proxy: bytes read from tcp, not yet written to unix; to_command: the other way. */
  char *to_proxy, *to_command;
  size_t tp_len, tp_off, tc_len, tc_off;
  int tcp_eof, unix_eof, tp_shut, tc_shut;
};

static struct conn *conns[MAX_CONNS];
static int wake[2] = {-1, -1};

static void die(const char *what) {
  dprintf(2, "dsh-netbridge: %s: %s\n", what, strerror(errno));
  exit(125);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  if (write(wake[1], "c", 1) < 0) {
    /* The pipe is full: a wake-up is pending already. */
  }
  errno = saved;
}

static void set_nonblock(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

/* Reads the whole seccomp program (struct sock_filter[]) from fd; closes it. */
static struct sock_fprog read_program(int fd) {
  static unsigned char bytes[MAX_PROGRAM];
  size_t got = 0;
  for (;;) {
    ssize_t n = read(fd, bytes + got, sizeof bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) die("cannot read the seccomp program");
    if (n == 0) break;
    got += (size_t)n;
    if (got == sizeof bytes) {
      errno = EFBIG;
      die("cannot read the seccomp program");
    }
  }
  close(fd);
  if (got == 0 || got % sizeof(struct sock_filter) != 0) {
    errno = EINVAL;
    die("the seccomp program is malformed");
  }
  struct sock_fprog prog = {.len = (unsigned short)(got / sizeof(struct sock_filter)), .filter = (struct sock_filter *)bytes};
  return prog;
}

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#else
#error "dsh-netbridge: unsupported architecture"
#endif

/* The forwarder's own filter: everything its relay loop needs, nothing that would make a taken-over
   forwarder more than a Unix socket client. Denied calls fail with EPERM; another ABI kills it. */
static void confine_forwarder(void) {
#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
  struct sock_filter filter[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    DENY(__NR_open),
#endif
    DENY(__NR_execve),
    DENY(__NR_execveat),
    DENY(__NR_ptrace),
    DENY(__NR_process_vm_readv),
    DENY(__NR_process_vm_writev),
    DENY(__NR_openat),
#ifdef __NR_openat2
    DENY(__NR_openat2),
#endif
    DENY(__NR_socketpair),
    DENY(__NR_io_uring_setup),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
#undef DENY
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) die("cannot confine the forwarder");
}

static void close_conn(int i) {
  struct conn *c = conns[i];
  close(c->tcp);
  close(c->unix_fd);
  free(c->to_proxy);
  free(c->to_command);
  free(c);
  conns[i] = NULL;
}

/* A new connection of the command: its twin to the proxy, or nothing (the command sees a reset). */
static void accept_one(int listener, const struct sockaddr_un *proxy) {
  int tcp = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (tcp < 0) return;
  int slot = -1;
  for (int i = 0; i < MAX_CONNS; i++)
    if (!conns[i]) {
      slot = i;
      break;
    }
  int unix_fd = slot < 0 ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (unix_fd < 0 || connect(unix_fd, (const struct sockaddr *)proxy, sizeof *proxy) != 0) {
    if (unix_fd >= 0) close(unix_fd);
    close(tcp);
    return;
  }
  set_nonblock(unix_fd);
  struct conn *c = calloc(1, sizeof *c);
  char *a = malloc(BUF_SIZE), *b = malloc(BUF_SIZE);
  if (!c || !a || !b) {
    free(c), free(a), free(b);
    close(unix_fd);
    close(tcp);
    return;
  }
  c->tcp = tcp;
  c->unix_fd = unix_fd;
  c->to_proxy = a;
  c->to_command = b;
  conns[slot] = c;
}

/* Moves what can be moved from one side to the other. Returns 0 when the connection is over. */
static int pump(int from, int to, char *buf, size_t *len, size_t *off, int *eof, int *shut) {
  if (*off == *len && !*eof) {
    ssize_t n = read(from, buf, BUF_SIZE);
    if (n > 0) {
      *len = (size_t)n;
      *off = 0;
    } else if (n == 0) {
      *eof = 1;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return 0;
    }
  }
  while (*off < *len) {
    ssize_t n = write(to, buf + *off, *len - *off);
    if (n > 0) {
      *off += (size_t)n;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      break;
    } else {
      return 0;
    }
  }
  if (*off == *len) *off = *len = 0;
  if (*eof && *len == 0 && !*shut) {
    shutdown(to, SHUT_WR);
    *shut = 1;
  }
  return 1;
}

int main(int argc, char **argv) {
  long port = -1;
  const char *proxy_path = NULL;
  int program_fd = -1;
  int i = 1;
  for (; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      i++;
      break;
    }
    if (i + 1 >= argc) {
      dprintf(2, "dsh-netbridge: %s needs a value\n", argv[i]);
      return 125;
    }
    if (strcmp(argv[i], "--port") == 0) port = strtol(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--proxy") == 0) proxy_path = argv[++i];
    else if (strcmp(argv[i], "--seccomp") == 0) program_fd = (int)strtol(argv[++i], NULL, 10);
    else {
      dprintf(2, "dsh-netbridge: unknown option %s\n", argv[i]);
      return 125;
    }
  }
  if (port < 1 || port > 65535 || !proxy_path || program_fd < 3 || i >= argc) {
    dprintf(2, "usage: dsh-netbridge --port PORT --proxy SOCKET --seccomp FD -- COMMAND [ARG]...\n");
    return 125;
  }
  struct sockaddr_un proxy = {.sun_family = AF_UNIX};
  if (strlen(proxy_path) >= sizeof proxy.sun_path) {
    errno = ENAMETOOLONG;
    die("the proxy socket's path");
  }
  strcpy(proxy.sun_path, proxy_path);
  struct sock_fprog program = read_program(program_fd);

  int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0) die("cannot create the proxy's listening socket");
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (bind(listener, (struct sockaddr *)&at, sizeof at) != 0) die("cannot listen on 127.0.0.1 (bind)");
  if (listen(listener, 128) != 0) die("cannot listen on 127.0.0.1");
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) die("pipe");

  /* Not dumpable from before the fork on: the command never sees a moment it could attach. Its own
     execve makes the command dumpable again, as any program. */
  if (prctl(PR_SET_DUMPABLE, 0) != 0) die("prctl(PR_SET_DUMPABLE)");
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, &old);
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(listener);
    close(wake[0]);
    close(wake[1]);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("prctl(PR_SET_NO_NEW_PRIVS)");
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) die("cannot load the seccomp program");
    execvp(argv[i], argv + i);
    dprintf(2, "dsh-netbridge: cannot execute %s: %s\n", argv[i], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }

  struct sigaction sa = {.sa_handler = on_child, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGCHLD, &sa, NULL);
  /* The command's stop (SIGTERM to its processes) and the terminal's signals are the command's. */
  const int ignored[] = {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM};
  for (size_t k = 0; k < sizeof ignored / sizeof ignored[0]; k++) signal(ignored[k], SIG_IGN);
  sigprocmask(SIG_SETMASK, &old, NULL);
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, 0), dup2(null_fd, 1), dup2(null_fd, 2);
    if (null_fd > 2) close(null_fd);
  }
  confine_forwarder();

  static struct pollfd fds[2 + 2 * MAX_CONNS];
  static int owner[2 + 2 * MAX_CONNS];
  for (;;) {
    int status;
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
      _exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
    }
    int n = 0;
    fds[n++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = listener, .events = POLLIN};
    for (int k = 0; k < MAX_CONNS; k++) {
      struct conn *c = conns[k];
      if (!c) continue;
      short tcp_events = 0, unix_events = 0;
      if (c->tp_len == 0 && !c->tcp_eof) tcp_events |= POLLIN;
      if (c->tc_len > c->tc_off) tcp_events |= POLLOUT;
      if (c->tc_len == 0 && !c->unix_eof) unix_events |= POLLIN;
      if (c->tp_len > c->tp_off) unix_events |= POLLOUT;
      /* A side with nothing to wait for is left out (fd -1): a peer that hung up would otherwise
         wake poll again and again. Both sides idle means both are shut: closed below already. */
      owner[n] = k;
      fds[n++] = (struct pollfd){.fd = tcp_events ? c->tcp : -1, .events = tcp_events};
      owner[n] = k;
      fds[n++] = (struct pollfd){.fd = unix_events ? c->unix_fd : -1, .events = unix_events};
    }
    if (poll(fds, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[0].revents) {
      char drain[64];
      while (read(wake[0], drain, sizeof drain) > 0) {
      }
    }
    for (int k = 2; k < n; k += 2) {
      int slot = owner[k];
      struct conn *c = conns[slot];
      if (!c || !(fds[k].revents | fds[k + 1].revents)) continue;
      int alive = pump(c->tcp, c->unix_fd, c->to_proxy, &c->tp_len, &c->tp_off, &c->tcp_eof, &c->tp_shut) &&
                  pump(c->unix_fd, c->tcp, c->to_command, &c->tc_len, &c->tc_off, &c->unix_eof, &c->tc_shut);
      int hung_up = ((fds[k].revents | fds[k + 1].revents) & (POLLERR | POLLNVAL)) != 0;
      if (!alive || hung_up || (c->tp_shut && c->tc_shut)) close_conn(slot);
    }
    if (fds[1].revents & POLLIN) accept_one(listener, &proxy);
  }
}
