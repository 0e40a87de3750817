// Its own file so that both the executor and the launch transforms (transform.ts) can name it
// without importing each other.

/** What to execute for one command. */
export interface CommandLine {
  file: string
  args: string[]
  /**
   * True when `file` is bash itself, which joins its cgroup and closes inherited descriptors through
   * the BASH_ENV prelude before it runs anything. False for wrappers (bwrap, …): they are started
   * through a bash launcher that does the same (keeping `extraFds`) and then execs them.
   */
  joinsThroughBashEnv: boolean
  /**
   * True when `file` is a monitor that ends by itself when the command's main process does and
   * forwards no signal (bwrap). Termination then sends SIGTERM to the other processes only, so
   * that the command can handle it (the monitor then reports its exit), and SIGKILL to everything
   * after the grace period. Default false: SIGTERM goes to every process, `file` included.
   */
  monitor?: boolean
  /**
   * Open file descriptors given to `file` as fd 3, 4, … (a wrapper's status file). The executor
   * closes its own copies once the process is spawned, or failed to spawn.
   */
  extraFds?: number[]
}
