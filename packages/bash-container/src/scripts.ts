import { readScript } from '@deepseek-ai/dsh-bash-kit'

/**
 * The programs run inside a container. All are Perl source kept in `scripts/*.pl` (checked by
 * `perl -c` in a test) and passed as `perl -e <text>`: they rely only on what a minimal
 * Debian-based image has (perl-base: POSIX, IO::Select, Fcntl; bash for the commands), so nothing
 * is compiled or copied in. Whole-line comments are dropped when read (argv bytes).
 */
const script = (name: string) => readScript(new URL(`../scripts/${name}`, import.meta.url))

/**
 * The container's main process (PID 1): it holds the container open while its stdin, attached by
 * the server, stays open. When the server goes (a clean stop, a crash, SIGKILL) the attach
 * connection closes, the engine closes this stdin (`StdinOnce`), PID 1 exits, the kernel kills
 * every other process of the container's PID namespace, and `AutoRemove` deletes the container.
 * As the namespace's init it also reaps orphans: `SIGCHLD` ignored makes the kernel reap them.
 */
export const LIFELINE_SCRIPT = script('lifeline.pl')

/**
 * The agent's process name: it sets `$0`, so its `/proc/<pid>/cmdline` is this followed only by
 * NULs (Perl blanks the rest of the original argument area). Never the name of anything else the
 * executor starts.
 */
export const AGENT_PROCESS_NAME = 'dsh-bash-agent'

/**
 * The in-container agent: one per container, started once through an attached exec; it runs every
 * command of the session locally, so a call costs a fork instead of a `runc exec` (~115 ms).
 *
 * Protocol (both directions): frames `<op> <id> <len>\n` followed by `len` payload bytes.
 * Host → agent:
 *   run <id>    payload: workdir \0 marker \0 mode \0 n \0 NAME=VALUE \0 … (n times) command
 *               mode: `none` (stdin /dev/null), `pipe` (stdin from `in` frames), or `pty,<cols>,<rows>`:
 *               a pseudo-terminal is the command's stdin, stdout, stderr and controlling terminal;
 *               `out` frames carry the raw terminal stream, no `err`/`eof2` frame ever comes
 *   in <id>     stdin bytes for the command (with a pty: typed into the terminal);   eof <id>: its
 *               stdin ends (ignored with a pty: Ctrl-D is a byte)
 *   size <id>   payload `<cols> <rows>`: a pty's new size (its foreground group gets SIGWINCH)
 *   count <id>  live processes of the command other than its main process → `count <id>` payload N
 *   term <id>   payload grace ms: TERM to every process, KILL after the grace → `termed <id>`
 *   wait <id>   → `empty <id>` once no process of the command is left
 *   modes <id>  → `modes <id>` payload a pty's echo and line-mode flags in stty's words (`-echo icanon`),
 *               empty when the command has no pty (or it is gone) or they cannot be read
 *   forget <id> the host is done with the command: close what is left of its pipes
 * Agent → host:
 *   hello 0     ready;   ok <id> payload `<pid> <start>` (the leader's start time, /proc/<pid>/stat field 22);   fail <id> payload nowd|notdir|noaccess|spawn:<msg>
 *   out <id>, err <id>  output bytes;   eof1 <id>, eof2 <id>  stdout/stderr closed
 *   exit <id>   payload `c <code> <leftovers>` or `s <signal number> <leftovers>` (leftovers: live
 *               processes of the command other than the main one, counted when it was reaped)
 *
 * A command's processes are its process group (it runs `setsid`, so its pid is its group) plus
 * every process whose environment holds `DSH_BASH_TASK=<marker>`: descendants that left the group
 * (setsid, nohup, double fork) are found through /proc. Zombies never count. The group number is
 * matched only while it is provably the command's: until the agent reaps the leader (which holds
 * the number, alive or a zombie), then only while every look still sees a member and no process has
 * the leader's pid; after that never again (a freed number taken by a stranger's new session, after
 * a pid wrap in a busy container, is neither counted nor signalled). Arguments: the shell, then
 * name fragments of secret-looking variables to drop from the environment.
 */
export const AGENT_SCRIPT = script('agent.pl')

/**
 * A kill that does not go through the agent (the second channel, for an agent that does not answer,
 * e.g. one stuck writing to a transport nobody reads): KILL to the command's process group and to
 * every process whose environment holds `DSH_BASH_TASK=<marker>`, repeated until none is left (at
 * most ~5 s). The group only while its leader is still there (the process with the pid has the start
 * time the agent reported): once it is gone this run cannot tell the group from a stranger's that
 * took the number, so only the marker is used. Arguments: the marker, the command's pid (its group
 * id; 0: unknown), the leader's start time (0: unknown, no group). Run through a separate exec.
 * perl-base only; prints the number of processes it signalled.
 */
export const KILL_SCRIPT = script('kill.pl')
