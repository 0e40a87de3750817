# The `bash -c` script that starts a wrapper ("$@", e.g. bwrap): join the cgroup, close inherited
# descriptors except the wrapper's own (fd 3, 4, …), give back a trusted caller's BASH_ENV (moved
# aside so that this launcher, which runs outside any sandbox, does not source it), exec.
@JOIN_CGROUP@
@CLOSE_INHERITED_FDS@
if [ -n "${@BASH_ENV_NEXT@+set}" ]; then export BASH_ENV="$@BASH_ENV_NEXT@"; unset @BASH_ENV_NEXT@; fi
exec "$@"
