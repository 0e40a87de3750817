# Closes every descriptor but the kept ones (@KEPT@: `0|1|2`, then 3, 4, … for a wrapper's own).
# Node marks what it opens close-on-exec and closes only that; whatever the server inherited
# without the flag (`exec 200>>log; exec dsh-bash …`) would otherwise reach every command. The list
# is read first (the glob opens the directory on a descriptor of its own, closed again before the
# loop), and closing a descriptor that is not open is no error in bash, so no redirection is needed
# (one would save stderr on a descriptor the loop could then close). Without /proc nothing is
# closed (documented limit). Bash only: `exec {var}>&-` names a descriptor above 9.
__dsh_fds=(/proc/self/fd/*)
for __dsh_fd in "${__dsh_fds[@]##*/}"; do case $__dsh_fd in @KEPT@|''|*[!0-9]*) ;; *) exec {__dsh_fd}>&- ;; esac; done
unset __dsh_fd __dsh_fds
