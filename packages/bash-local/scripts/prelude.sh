# dsh-bash: runs in the command's shell before the command (see @deepseek-ai/dsh-bash-local prelude.ts).
@JOIN_CGROUP@
@CLOSE_INHERITED_FDS@
if [ -n "${@BASH_ENV_NEXT@+set}" ]; then export BASH_ENV="$@BASH_ENV_NEXT@"; unset @BASH_ENV_NEXT@; . "$BASH_ENV"; else unset BASH_ENV; fi

