# Joins the command's cgroup when the executor set one (@CGROUP_VARIABLE@), before anything runs, so
# nothing the command starts escapes the kill; a cgroup that cannot be joined ends the launch (125).
if [ -n "${@CGROUP_VARIABLE@-}" ]; then
  if ! echo 0 2>/dev/null >"$@CGROUP_VARIABLE@/cgroup.procs"; then echo "dsh-bash: cannot join cgroup $@CGROUP_VARIABLE@" >&2; exit 125; fi
fi
# Then its limits (limits.ts): the v1 cgroups of a hybrid host, and the rlimits standing in where no
# cgroup holds a limit. A limit that cannot be set ends the launch too: never a command without it.
for __dsh_cg in "${@CGROUP_MEMORY@-}" "${@CGROUP_PIDS@-}" "${@CGROUP_CPU@-}"; do
  if [ -n "$__dsh_cg" ] && ! echo 0 2>/dev/null >"$__dsh_cg/cgroup.procs"; then echo "dsh-bash: cannot join cgroup $__dsh_cg" >&2; exit 125; fi
done
if [ -n "${@RLIMIT_AS@-}" ] && ! ulimit -H -S -v "$@RLIMIT_AS@" 2>/dev/null; then echo "dsh-bash: cannot set the memory limit (ulimit -v $@RLIMIT_AS@)" >&2; exit 125; fi
if [ -n "${@RLIMIT_NPROC@-}" ] && ! ulimit -H -S -u "$@RLIMIT_NPROC@" 2>/dev/null; then echo "dsh-bash: cannot set the process limit (ulimit -u $@RLIMIT_NPROC@)" >&2; exit 125; fi
unset __dsh_cg @CGROUP_VARIABLE@ @CGROUP_MEMORY@ @CGROUP_PIDS@ @CGROUP_CPU@ @RLIMIT_AS@ @RLIMIT_NPROC@
