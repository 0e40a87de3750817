/** What the model reads about each tool. Brief, and complete about the markers it will see. */

export const BASH_DESCRIPTION = `Run a bash command and return its output.

- Every call starts a fresh, non-interactive shell (bash -c): no state (cd, variables, functions) carries over. To run somewhere else, pass "workdir" instead of using cd.
- There is no terminal and stdin is empty (unless "interactive", below): commands that prompt fail instead of waiting. Pass flags such as --yes or --no-pager.
- The result is stdout, then a "[stderr]" section if anything went to stderr, or "(no output)". Status markers follow on their own lines: "[exit code: N]" for a non-zero exit, "[killed by signal: SIG…]", "[timed out after Nms]" when the timeout fired (default 2 minutes; set "timeoutMs" for more, up to the maximum), and "[stopped N leftover process(es); …]" when the command left processes running (they are stopped).
- Long output keeps only its last part; "[output truncated; full output: PATH]" names a file with all of it: read it with head, tail or grep, or, where your commands cannot open it (they run on another machine), with bash_output {"task_id": "PATH", "offset": 0}.
- For servers, watchers or anything long-running, set "run_in_background": true. You get a task id at once; read it with bash_output (with "wait_ms" it waits for the task to print or end, instead of returning at once) and stop it with bash_kill. You are notified when it finishes, but only with your next request: wait with bash_output rather than idling.
- For a program that must talk to a person (a prompt you have to answer, a REPL such as python3 -i, sqlite3 or psql, a debugger such as gdb, a pager or full-screen program such as less or top), add "interactive": true to "run_in_background": true: it runs in a terminal, you type into it with bash_input and read it as plain text (a full-screen program as its current screen under "[screen 120x40]"). Do not use it for anything that can run without a person: prefer flags such as --yes, input from a file, a pipe or a here-document.
- "description" is a short active-voice summary (5-10 words) shown to the user; it does not affect the command.`

export const SANDBOX_ADDENDUM = `
- Commands run in a sandbox. "[sandbox: file access denied under MODE mode]" means a write was refused by the sandbox, not by file permissions. Only if the task really needs it, retry with "sandbox_permissions" (a wider mode) and a "justification"; the user must approve, and the approval covers that one call.`

export const BASH_OUTPUT_DESCRIPTION = `Read the new output of a background bash task started with run_in_background.

Returns only what the task printed since your previous bash_output call for it (stdout, then a "[stderr]" section), or "(no new output)", followed by its status: "[status: running]", "[status: completed, exit code: N]" or "[status: killed …]". If "[some output was dropped from memory; full output: PATH]" appears, read that file for what you missed. To wait instead of polling, pass "wait_ms" (up to 30000): the call returns as soon as the task ends, its new output has been quiet for a moment, or, with "until" (a regular expression such as "^READY$"), a line of new output matches.`

export const BASH_INPUT_DESCRIPTION = `Type into a background bash task started with "interactive": true, then return what bash_output would: the new output, then its status line.

"text" is sent as typed keys: "\\n" is Enter, "\\u0003" Ctrl-C, "\\u0004" Ctrl-D (end of input), "\\u001b[A" arrow up; empty text just waits and reads. Wait for a prompt before typing (some programs drop what was typed before they were ready). The call returns once the program printed more than the echo of what you typed and was then quiet for a moment, a line matched "until" (a regular expression), the task ended, or "wait_ms" passed (default 3000, at most 30000: raise it for slow answers). What you type with the terminal's echo off (a password prompt) is not shown back.`

export const BASH_KILL_DESCRIPTION = `Stop a background bash task started with run_in_background: every process it started is terminated (SIGTERM, then SIGKILL after a grace period). Returns "killed background task ID", or "task ID had already finished" when it had ended by itself. Use bash_output to read what it printed.`

/** The sentence the `bash` description gains when foreground calls yield (`yieldAfterMs`). */
export function yieldSentence(yieldAfterMs: number): string {
  return `\n- A foreground command still running after ${formatSeconds(yieldAfterMs)} returns what it printed so far and continues as a background task, ending its result with "[still running after Ns; continues as background task ID: …]": poll that task with bash_output and stop it with bash_kill like any other.`
}

/** The `bash` description for a configuration. */
export function bashDescription(options: { sandbox?: boolean; yieldAfterMs?: number } = {}): string {
  let text = BASH_DESCRIPTION
  if (options.yieldAfterMs) text += yieldSentence(options.yieldAfterMs)
  if (options.sandbox) text += SANDBOX_ADDENDUM
  return text
}

/**
 * The short text a host adds to its system prompt (or an MCP server to its `instructions`) when
 * these tools are loaded: what the markers mean and what to do with them, background tasks and
 * polling, interactive tasks. Two sentences.
 */
export function bashPromptSection(options: { yieldAfterMs?: number } = {}): string {
  const yielding = options.yieldAfterMs
    ? ` (a foreground command still running after ${formatSeconds(options.yieldAfterMs)} continues as one too, its result ending with "[still running after Ns; continues as background task ID: …]")`
    : ''
  return [
    'Each bash call runs in a fresh non-interactive shell (pass "workdir" instead of cd); its result ends with status markers in square brackets such as "[exit code: N]" or "[timed out after Nms]", and "[output truncated; full output: PATH]" names a file holding all of the output: read it with grep, head or tail rather than running the command again (or, when your commands run on another machine, with bash_output {"task_id": "PATH", "offset": 0}).',
    `Start servers, watchers and long builds with run_in_background${yielding}, then read the task with bash_output until its status is no longer running (pass "wait_ms", up to 30000, and optionally "until", a regular expression for the line you wait for, so that it waits instead of returning at once; a finished task is announced only with your next request) and stop it with bash_kill; a program that needs a person (a prompt, a REPL, a debugger, a pager) also runs with interactive: true, in a terminal you type into with bash_input ("\\n" is Enter, "\\u0003" Ctrl-C), but only when no flag, file or pipe can answer it instead.`,
  ].join(' ')
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} seconds`
}
