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
export { MCP_ERROR } from './errors.js'
export { openSecretPage, SECRET_PAGE_WARNING, type SecretPage, type SecretPageOptions } from './secret-page.js'
export { secretElicitationMessage, DEFAULT_SECRET_INPUT, MAX_MESSAGE_COMMAND, type SecretInputOptions } from './secret-elicit.js'
