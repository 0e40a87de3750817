/**
 * @deepseek-ai/dsh-mcp — serves `ctx.tools` to MCP clients, one agent session per client.
 *
 * Flow at a glance: on stdio, the front (front.ts) owns stdin from the first byte and answers
 * `initialize` before the SDK loads, checking every line (protocol.ts), then hands the session to
 * the SDK (front-transport.ts, stdio.ts); over HTTP, http.ts serves streamable HTTP with a bearer
 * token. Either way `McpHost` (host.ts) creates an `McpSession` (session.ts: SDK server + agent +
 * session options) per client → `tools/call` becomes `ctx.tools.execute` as that agent; approvals
 * become elicitations (elicit.ts), `ask_user` replies a one-time page (secret-elicit.ts,
 * secret-page.ts), full outputs resources (resources.ts); loop-turns.ts keeps work fair under load.
 */
export { McpHost, type McpHostOptions } from './host.js'
export { narrowingModes } from './host.js'
export { McpSession, SESSION_CAPABILITY, type SessionOptions } from './session.js'
export { serveStdio, DEFAULT_MAX_LINE_BYTES, type StdioHandle, type StdioOptions } from './stdio.js'
export { serveHttp, generateToken, isLoopback, MCP_PATH, DEFAULT_IDLE_TIMEOUT_MS, type HttpOptions, type HttpHandle } from './http.js'
export { checkMessage, type Refusal, type Verdict } from './protocol.js'
export { approvalMessage, approvalSchema, decisionOf } from './elicit.js'
export {
  StdioFront,
  initializeResult,
  PROTOCOL_VERSIONS,
  SERVER_CAPABILITIES,
  DEFAULT_SERVER_INFO,
  type EarlyInitialize,
  type StdioFrontOptions,
} from './front.js'
export { MCP_ERROR, mcpErrors } from './errors.js'
export { openSecretPage, SECRET_PAGE_WARNING, type SecretPage, type SecretPageOptions } from './secret-page.js'
export { secretElicitationMessage, DEFAULT_SECRET_INPUT, MAX_MESSAGE_COMMAND, type SecretInputOptions } from './secret-elicit.js'
export { ReplyDesk, waitingAnnouncement, type WaitingReply, type DeskAnswer } from './reply-desk.js'
export { commandOfServer } from './reply-peer.js'
