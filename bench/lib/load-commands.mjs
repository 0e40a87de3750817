/** The three commands of one load-benchmark round, shared by the MCP load and its spawn-bound baseline. */
export const LOAD_COMMANDS = {
  /** Foreground: the cheapest command there is. */
  fast: 'true',
  /** Foreground: 2,000 numbered lines (10,893 bytes), every one checked on arrival. */
  lines: 'seq 1 2000',
  /** Background: 300 numbered lines in three bursts, polled with bash_output until it completes. */
  background: 'seq 1 100; sleep 0.05; seq 101 200; sleep 0.05; seq 201 300',
}
export const BACKGROUND_LINES = 300
