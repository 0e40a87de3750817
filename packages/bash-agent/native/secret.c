/*
 * Which variables of the agent's own environment a command never gets: the kit's secret rules
 * (@deepseek-ai/dsh-bash secret-env.ts, `secretRules`), as the client passes them on the `serve`
 * command line. A rule is a glob over the whole name (`*` is any run of characters, every other
 * character itself, compared case-insensitively) or `!NAME`, which keeps that exact variable
 * (case-sensitive) whatever the globs say. So `*_TOKEN` drops `GITHUB_TOKEN` and `github_token`
 * but not `TOKENIZERS_PARALLELISM`, and `*_KEY` drops `OPENAI_API_KEY` but not `MONKEY`.
 */
#include "agent.h"
#include <string.h>

static char **globs, **kept;
static int nglobs, nkept;

void secret_rules_init(int n, char **rules) {
  globs = xmalloc(((size_t)n + 1) * sizeof *globs);
  kept = xmalloc(((size_t)n + 1) * sizeof *kept);
  nglobs = nkept = 0;
  for (int i = 0; i < n; i++) {
    if (rules[i][0] == '!') kept[nkept++] = rules[i] + 1;
    /* An empty rule matches nothing (the kit drops it too). */
    else if (rules[i][0]) globs[nglobs++] = rules[i];
  }
}

static char upper(char c) { return c >= 'a' && c <= 'z' ? (char)(c - 32) : c; }

/* The whole of name[0..len) against glob: the classic linear matcher (back up to the last `*`). */
static int glob_match(const char *glob, const char *name, size_t len) {
  const char *star = NULL;
  size_t i = 0, resume = 0;
  while (i < len) {
    if (*glob == '*') {
      star = glob++;
      resume = i;
    } else if (*glob && upper(*glob) == upper(name[i])) {
      glob++;
      i++;
    } else if (star) {
      glob = star + 1;
      i = ++resume;
    } else {
      return 0;
    }
  }
  while (*glob == '*') glob++;
  return *glob == '\0';
}

int is_secret(const char *name, size_t len) {
  for (int i = 0; i < nkept; i++)
    if (strlen(kept[i]) == len && strncmp(kept[i], name, len) == 0) return 0;
  for (int i = 0; i < nglobs; i++)
    if (glob_match(globs[i], name, len)) return 1;
  return 0;
}
