import { codedError } from '@deepseek-ai/dsh-tools/errors'

/**
 * Every error the MCP package raises on purpose: a stable `code` and the message, which stays as
 * the README gives it. Nothing classifies these errors by their text.
 */
export const MCP_ERROR = {
  /** Options given to the host, the HTTP server or the stdio front that fail validation. */
  invalidOptions: 'DSH_MCP_INVALID_OPTIONS',
  /** A host, session or front used in a state that does not allow it (closed, already bound, already consumed). */
  badState: 'DSH_MCP_BAD_STATE',
  /** A needed service (the agents) is gone: the server is shutting down. */
  unavailable: 'DSH_MCP_UNAVAILABLE',
  /** The client asked for a session sandbox mode this server does not offer. */
  sandboxModeRefused: 'DSH_MCP_SANDBOX_MODE_REFUSED',
  /** The audit log cannot be opened or written (see audit-log.ts). */
  auditLog: 'DSH_MCP_AUDIT_LOG',
  /** The client's session egress rules are malformed, or this server has no sandbox to apply them. */
  networkRefused: 'DSH_MCP_NETWORK_REFUSED',
} as const

export const mcpErrors = {
  invalidOptions: (message: string) => codedError(MCP_ERROR.invalidOptions, message),
  badState: (message: string) => codedError(MCP_ERROR.badState, message),
  auditLog: (message: string) => codedError(MCP_ERROR.auditLog, message),
  /** `required`: a call refused before it runs, while no line can be written (docs/harness.md). */
  auditRefused: (reason: string) => codedError(MCP_ERROR.auditLog, `not run: the audit log cannot be written (${reason}), and this server runs nothing it cannot record`),
  /** `required`: the result of the call whose own line failed, instead of its result (docs/harness.md). */
  auditUnrecorded: (reason: string, ran: boolean) =>
    codedError(
      MCP_ERROR.auditLog,
      `the audit log could not record this call (${reason}): ${ran ? 'it ran, but its result is withheld' : 'it did not run'}; this server runs nothing more until the audit log can be written`,
    ),
  agentsUnavailable: () => codedError(MCP_ERROR.unavailable, 'the agents service is not available (the server is shutting down)'),
  noSandbox: (mode: unknown) =>
    codedError(MCP_ERROR.sandboxModeRefused, `the client asked for sandbox mode ${JSON.stringify(mode)}, but this server's executor does not use a sandbox`),
  badNetwork: (network: unknown) =>
    codedError(MCP_ERROR.networkRefused, `the client asked for session egress rules ${JSON.stringify(network)}; expected { allow?: [host patterns], deny?: [host patterns] }`),
  noSandboxNetwork: () => codedError(MCP_ERROR.networkRefused, "the client asked for session egress rules, but this server's executor does not use a sandbox"),
  modeNotAllowed: (mode: unknown, choices: string) =>
    codedError(MCP_ERROR.sandboxModeRefused, `the client asked for sandbox mode ${JSON.stringify(mode)} for its session; this server ${choices}`),
}
