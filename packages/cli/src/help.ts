/** Help texts: kept apart so that `--help` and usage errors load nothing heavy. */
import { DEFAULT_SECRET_PATTERNS } from '@deepseek-ai/dsh-bash/secret-env'
import { executorFlagHelp, executorKindsHelp } from './executors.js'

/** The secret-name list, wrapped to the help's width after `indent`. */
function secretList(indent: string): string {
  const lines: string[] = []
  let line = ''
  for (const pattern of DEFAULT_SECRET_PATTERNS) {
    const next = line === '' ? pattern : `${line}, ${pattern}`
    if (indent.length + next.length > 96) {
      lines.push(`${line},`)
      line = pattern
    } else {
      line = next
    }
  }
  lines.push(line)
  return lines.map((text) => `${indent}${text}`).join('\n')
}

/**
 * The flags of every command that builds the tools (workspace, executor, policy, help), one line
 * or more each; a command may word a line its own way.
 */
function toolFlags(
  lines: { workdir?: string; executorConfig?: string; ssh?: string; policy?: string } = {},
): string {
  return [
    lines.workdir ?? "  --workdir DIR           the session's workspace (default: the current directory)",
    `  --executor KIND         ${executorKindsHelp()}`,
    lines.executorConfig ?? '  --executor-config JSON  executor settings as a JSON object, or @FILE',
    // Every executor's own flags come from the table of executors.ts.
    ...executorFlagHelp(lines.ssh ? { ssh: [lines.ssh] } : {}),
    lines.policy ?? '  --policy FILE           a command policy file (needs @deepseek-ai/dsh-bash-policy)',
    '  --keep-env NAME         pass variable NAME to commands although its name looks secret',
    '                          (repeatable). Commands never see variables whose whole name matches',
    '                          (case-insensitive; MONKEY and TOKENIZERS_PARALLELISM stay):',
    secretList('                            '),
    '  -h, --help              show this help',
    '  -v, --version           print the version',
  ].join('\n')
}

export const MAIN_HELP = `Usage: dsh-bash <command> [flags]

The bash tools (bash, bash_output, bash_kill, bash_input) for models and people.

Commands:
  mcp     serve the tools to MCP clients (stdio, or Streamable HTTP with --http HOST:PORT)
  repl    play the model: run commands through the tools and read exactly what a model reads
  agent   let a model do it: one request through an OpenAI-compatible chat-completions endpoint
  help    show help for a command (dsh-bash help mcp)

Flags:
  -h, --help      show this help
  -v, --version   print the version

Run "dsh-bash <command> --help" for the flags of a command.
Exit codes: 0 ok, 1 runtime failure, 2 usage error.`

export const MCP_HELP = `Usage: dsh-bash mcp [flags]

Serves the bash tools (bash, bash_output, bash_kill, bash_input) to MCP clients.
Without --http it speaks MCP over stdio (one session); stdout carries the protocol.

Flags:
  --http HOST:PORT        serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio
                          (PORT 0 picks a free port; the URL is printed on stderr)
  --token-file PATH       a file holding the bearer token HTTP clients must send (yours, mode
                          600; default: $DSH_BASH_TOKEN, else a random token printed on stderr).
                          There is no --token: a command line is readable by every local user
  --allow-origin ORIGIN   also accept browser requests from ORIGIN (repeatable; HTTP only)
  --idle-timeout SECONDS  close an HTTP session after this long without a request; its tasks
                          are killed (default 1800; 0 = never; an open call or stream keeps it)
  --nice N                the server's autogroup nice, -20..19 (below 0 needs root): a busy
                          machine's commands then delay it less; they keep nice 0 (Linux
                          autogroups only; start the server with setsid, the group is the session's)
  --yield-after SECONDS   a foreground command still running after this long returns its output
                          so far and continues as a background task (default 50, under the 60 s
                          request timeout of many clients; 0 = off, calls wait for the command)
  --max-result-bytes N    the most bytes of one tool result (default 10000: under the smallest
                          inline limit of common clients, Codex's ~12,000 characters); longer
                          output keeps its newest part, its full-output marker first
  --max-result-lines N    the most lines of one tool result (default 1900: under OpenCode's 2,000)
${toolFlags({
  workdir: `  --workdir DIR           the workspace of every session (default: the client's first root,
                          else the current directory)`,
  executorConfig: `  --executor-config JSON  executor settings as a JSON object, or @FILE (e.g. '{"timeoutMs":60000}');
                          maxOutputBytes defaults to --max-result-bytes here, and the spill
                          threshold (spillAboveBytes/Lines) to the budget minus 1024 bytes and 16
                          lines, so every cut result names a file holding all of it`,
})}

Stopping the server (stdin closed, SIGINT, SIGTERM) kills every task it started.
Exit codes: 0 ok, 1 runtime failure, 2 usage error.`

export const REPL_HELP = `Usage: dsh-bash repl [flags]

Play the model: type a command and see exactly the text the model would get.

Flags:
${toolFlags()}

Exit codes: 0 ok, 1 runtime failure, 2 usage error.`

export const AGENT_HELP = `Usage: dsh-bash agent [flags] PROMPT

Runs one request through the agent loop with a model behind an OpenAI-compatible chat-completions
endpoint (OpenAI, DeepSeek, vLLM, Ollama, llama.cpp server, …) and the bash tools. PROMPT is the
words after the flags, joined by spaces, or - to read it from stdin.
stdout gets the model's final answer; stderr shows each tool call ("$ <command>") and an excerpt
of its result.

Model (flags win over the environment):
  --base-url URL          the API root, e.g. http://127.0.0.1:8000/v1 (required;
                          default: $DSH_MODEL_BASE_URL, else $OPENAI_BASE_URL)
  --model NAME            the model name (required; default: $DSH_MODEL, else $OPENAI_MODEL)
  --api-key-env VAR       the NAME of the environment variable holding the API key
                          (default: $DSH_MODEL_API_KEY, else $OPENAI_API_KEY, else no key);
                          a key is never taken as a flag value
  --max-steps N           the most model requests for this prompt (default 32)
  --system TEXT           a system prompt (default: none)

Tools:
${toolFlags({
  ssh: '  --ssh USER@HOST[:PORT]  ssh: a host to run commands on (repeatable)',
  policy: `  --policy FILE           a command policy file; its asks are a y/N prompt when stdin is a
                          terminal, else denied`,
})}

SIGINT, SIGTERM or SIGHUP aborts the turn; every task is killed before the command exits, also
after an answer.
Exit codes: 0 answered, 1 model, HTTP or runtime failure, 2 usage error, 128+N after signal N.`

export const REPL_COMMANDS = `Input:
  COMMAND            run COMMAND in the foreground (bash {command})
  &COMMAND           start COMMAND in the background (bash {command, run_in_background: true})
  :output ID         read new output of a background task (bash_output {task_id})
  :kill ID           stop a background task (bash_kill {task_id})
  :type ID           type one line for an interactive task without echo (a password): it goes to
                     the task's terminal with Enter and is never shown; Ctrl-C cancels
  :call TOOL {json}  call any tool with JSON arguments, e.g.
                     :call bash {"command":"make","description":"Build","timeoutMs":600000}
  :tasks             list the background tasks
  :json              toggle showing whole results as JSON ({content, isError})
  :help              this list
  :quit              leave (running tasks are killed); so does end of input (Ctrl-D)
Ctrl-C stops a running call, clears a half-typed line, and on an empty line says which tasks
leaving would kill; a second Ctrl-C there leaves.
Notices of finished background tasks are printed as "[notice] <text>" when they are injected.`
