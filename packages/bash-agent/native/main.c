/*
 * The modes of the one binary (docs/agent-protocol.md):
 *   serve <shell> [secret rule…]            the protocol over stdin/stdout (rules: secret.c)
 *   init                                    PID 1 of a container (lifeline.c)
 *   pod-init <first s> <gone s> <name>      PID 1 of a pod (lifeline.c)
 *   kill <marker> <pid> <start>             the second-channel kill, without the serving agent
 *   version                                 `dsh-bash-agent <protocol version> <source sha256>`
 */
#include "agent.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* The sources this binary was built from (scripts/build-native.sh passes their SHA-256): a test
   checks that the shipped binary is the build of native/. */
__attribute__((used)) static const char source_id[] = "dsh-bash-agent-source-sha256:" SOURCE_SHA256;

/* Whatever the transport left open (sshd, an exec, the bootstrap's descriptor of this very file)
   is closed: the agent's commands get fds 0-2 only, and every descriptor the agent opens from now
   on is close-on-exec. */
static void close_inherited(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++) close((int)fd);
}

/* The command line becomes exactly AGENT_PROCESS_NAME and NULs (what a pod's PID 1 looks for). */
static void rename_process(int argc, char **argv) {
  char *end = argv[argc - 1] + strlen(argv[argc - 1]);
  size_t area = (size_t)(end - argv[0]);
  if (area < strlen(AGENT_PROCESS_NAME)) return;
  memset(argv[0], 0, area);
  memcpy(argv[0], AGENT_PROCESS_NAME, strlen(AGENT_PROCESS_NAME));
}

static int kill_main(int argc, char **argv) {
  if (argc < 3) die("usage: kill <marker> <pid> <start>");
  tracker_t t;
  tracker_init(&t, argv[0]);
  /* The group only while the process with the pid has that start time (the leader itself, alive
     or unreaped): once it is gone this run cannot tell the group from a stranger's. */
  claim_init_start(&t.claim, (pid_t)atol(argv[1]), strtoull(argv[2], NULL, 10), 0);
  size_t killed = 0;
  freeze_kill(&t, getpid(), KILL_LIMIT_MS, &killed);
  printf("%zu\n", killed);
  return 0;
}

int main(int argc, char **argv) {
  (void)source_id;
  const char *mode = argc > 1 ? argv[1] : "";
  close_inherited();
  if (strcmp(mode, "serve") == 0) {
    char **args = malloc((size_t)argc * sizeof *args);
    for (int i = 2; i < argc; i++) args[i - 2] = xstrdup(argv[i]);
    rename_process(argc, argv);
    return serve_main(argc - 2, args);
  }
  if (strcmp(mode, "init") == 0) return init_main(argc - 2, argv + 2);
  if (strcmp(mode, "pod-init") == 0) return pod_init_main(argc - 2, argv + 2);
  if (strcmp(mode, "kill") == 0) return kill_main(argc - 2, argv + 2);
  if (strcmp(mode, "version") == 0) {
    printf("%s %d %s\n", AGENT_PROCESS_NAME, PROTOCOL_VERSION, SOURCE_SHA256);
    return 0;
  }
  fprintf(stderr, "usage: %s serve|init|pod-init|kill|version …\n", argv[0]);
  return 2;
}
