import { fillScript, readScript } from './script-file.js'

/**
 * Bash code shared by the executors' preludes (local BASH_ENV, the wrapper launcher, the SSH wrapper):
 * scripts/close-inherited-fds.sh.
 */
const CLOSE_INHERITED_FDS = readScript(new URL('../scripts/close-inherited-fds.sh', import.meta.url))

/**
 * Closes every descriptor but 0, 1, 2 and `3 … 2+keep` (see scripts/close-inherited-fds.sh: why,
 * and the limit without /proc).
 */
export function closeInheritedFds(keep = 0): string {
  const kept = ['0', '1', '2', ...Array.from({ length: keep }, (_, i) => String(3 + i))].join('|')
  return fillScript(CLOSE_INHERITED_FDS, { KEPT: kept })
}
