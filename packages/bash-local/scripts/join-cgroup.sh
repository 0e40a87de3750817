# Joins the command's cgroup when the executor set one (@CGROUP_VARIABLE@), before anything runs, so
# nothing the command starts escapes the kill; a cgroup that cannot be joined ends the launch (125).
if [ -n "${@CGROUP_VARIABLE@-}" ]; then
  if ! echo 0 2>/dev/null >"$@CGROUP_VARIABLE@/cgroup.procs"; then echo "dsh-bash: cannot join cgroup $@CGROUP_VARIABLE@" >&2; exit 125; fi
fi
unset @CGROUP_VARIABLE@
