export { McpHost, type McpHostOptions } from './host.js'
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
export { serveReplyDesk, handleReplyRequest, refusePeer, replyRefusals, REPLY_PATH, type ReplyEndpoint } from './reply-endpoint.js'
export { replyDirectory, checkPrivateDirectory, readDesks, RUNTIME_DIR_VARIABLE, type DeskAddress } from './reply-dir.js'
export { findPeer, commandOfServer, type Peer } from './reply-peer.js'
export { UNASKED_MS } from './secret-elicit.js'
