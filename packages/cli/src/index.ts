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
