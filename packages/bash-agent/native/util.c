/* Buffers, pid sets, clocks and small I/O helpers of the agent. */
#include "agent.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("dsh-bash-agent: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  _exit(2);
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) die("out of memory");
  return p;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

void buf_append(buf_t *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
  }
  if (n) memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void buf_appends(buf_t *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_printf(buf_t *b, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    buf_append(b, small, (size_t)n);
    return;
  }
  char *big = xmalloc((size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf_append(b, big, (size_t)n);
  free(big);
}

void buf_consume(buf_t *b, size_t n) {
  if (n >= b->len) {
    b->len = 0;
  } else {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
  }
  if (b->data) b->data[b->len] = '\0';
  /* A flood left a big buffer behind: give the memory back once it is drained. */
  if (b->len == 0 && b->cap > (1u << 20)) {
    free(b->data);
    b->data = NULL;
    b->cap = 0;
  }
}

void buf_free(buf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

void sleep_ms(double ms) {
  if (ms <= 0) return;
  struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

int read_file(const char *path, buf_t *b) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  b->len = 0;
  for (;;) {
    if (b->cap - b->len < 4096 + 1) {
      size_t cap = b->cap ? b->cap * 2 : 4096 * 2;
      b->data = xrealloc(b->data, cap);
      b->cap = cap;
    }
    ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    if (n == 0) break;
    b->len += (size_t)n;
  }
  b->data[b->len] = '\0';
  close(fd);
  return 0;
}

void pidset_add(pidset_t *s, pid_t pid) {
  if (pidset_has(s, pid)) return;
  if (s->n == s->cap) {
    s->cap = s->cap ? s->cap * 2 : 16;
    s->v = xrealloc(s->v, s->cap * sizeof *s->v);
  }
  s->v[s->n++] = pid;
}

int pidset_has(const pidset_t *s, pid_t pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == pid) return 1;
  return 0;
}

void pidset_remove(pidset_t *s, pid_t pid) {
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i] == pid) {
      s->v[i] = s->v[--s->n];
      return;
    }
}

void pidset_clear(pidset_t *s) { s->n = 0; }

void pidset_free(pidset_t *s) {
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}
