/**
 * Bash code shared by the executors' preludes (local BASH_ENV, the wrapper launcher, the SSH wrapper).
 */

/**
 * Closes every descriptor but 0, 1, 2 and `3 … 2+keep`. Node marks what it opens close-on-exec and
 * closes only that; whatever the server inherited without the flag (`exec 200>>log; exec dsh-bash …`)
 * would otherwise reach every command. The list is read first (the glob opens the directory on a
 * descriptor of its own, closed again before the loop), and closing a descriptor that is not open
 * is no error in bash, so no redirection is needed (one would save stderr on a descriptor the loop
 * could then close). Without /proc nothing is closed (documented limit).
 */
export function closeInheritedFds(keep = 0): string {
  const kept = ['0', '1', '2', ...Array.from({ length: keep }, (_, i) => String(3 + i))].join('|')
  return [
    '__dsh_fds=(/proc/self/fd/*)',
    `for __dsh_fd in "\${__dsh_fds[@]##*/}"; do case $__dsh_fd in ${kept}|''|*[!0-9]*) ;; *) exec {__dsh_fd}>&- ;; esac; done`,
    'unset __dsh_fd __dsh_fds',
  ].join('\n')
}

