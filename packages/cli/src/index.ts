/**
 * @deepseek-ai/dsh-bash-cli — the `dsh-bash` command: `mcp`, `repl` and `agent`.
 *
 * Flow at a glance: bin/ → main.ts → `main(argv)` (cli.ts) → the command's flags parsed and checked
 * (args.ts over flags.ts; executor kinds and their flags from the table in executors.ts and
 * executor-flags.ts) → `composeApp` (compose.ts) loads the registry, the chosen executor (on
 * demand), tool-bash, the policy and the agents → the command runs: mcp-command.ts (stdio or HTTP,
 * token.ts, priority.ts), repl.ts (a person plays the model; approval.ts, secret.ts, lines.ts), or
 * agent-command.ts (a model over OpenAI-compatible chat) → stop signals end it cleanly
 * (signals.ts). Texts: help.ts; coded errors: errors.ts. This entry is for tests; the published
 * package is the bundle (bundle.mjs).
 */
export { main } from './cli.js'
export { AGENT_HELP, MAIN_HELP, MCP_HELP, REPL_HELP, REPL_COMMANDS } from './help.js'
export {
  parseAgentArgs,
  parseMcpArgs,
  parseReplArgs,
  parseHostPort,
  AGENT_ENV,
  DEFAULT_AGENT_MAX_STEPS,
  EXECUTORS,
  type AgentCommandOptions,
  type ExecutorKind,
  type CommonOptions,
  type McpOptions,
  type ReplOptions,
} from './args.js'
export { UsageError, StartupError, CLI_ERROR } from './errors.js'
export { composeApp, loadExecutor, logToStderr, type App } from './compose.js'
export { runMcp } from './mcp-command.js'
export { runRepl } from './repl.js'
export { runAgent } from './agent-command.js'
export { askApproval } from './approval.js'
