import { BASH_ERROR, codedError, hasCode } from '@deepseek-ai/dsh-bash'

/**
 * Every error the SSH executor raises on purpose: a stable `code` (the seam's BASH_ERROR where one
 * fits, else `DSH_SSH_…`) and the message, which stays byte for byte as the README gives it.
 * Nothing classifies these errors by their text.
 */
export const SSH_ERROR = {
  /** The connection a command or call needed went away (`connection to u@h:p lost`). */
  connectionLost: BASH_ERROR.connectionLost,
  /** The command could not start: workdir missing, shell missing, the agent could not start it. */
  startFailed: BASH_ERROR.startFailed,
  /** The executor's config (or a host's key) failed validation. */
  invalidConfig: BASH_ERROR.invalidConfig,
  /** The server's host key is unknown, changed, or not the pinned one. Never retried. */
  hostKeyRejected: 'DSH_SSH_HOST_KEY_REJECTED',
  /** The server refused our key. Never retried. */
  authFailed: 'DSH_SSH_AUTH_FAILED',
  /** No connection could be made after the retries (or the client refused the settings). */
  connectFailed: 'DSH_SSH_CONNECT_FAILED',
  /** A connection we closed ourselves before its handshake ended (disposal). */
  connectionClosed: 'DSH_SSH_CONNECTION_CLOSED',
  /** The host's connection pool is closed (the executor is being disposed). */
  poolClosed: 'DSH_SSH_POOL_CLOSED',
  /** A known_hosts file that cannot be read. */
  knownHostsUnreadable: 'DSH_SSH_KNOWN_HOSTS_UNREADABLE',
  /** `parseSshTarget` got text that is not `user@host[:port]`. */
  invalidTarget: 'DSH_SSH_INVALID_TARGET',
  /** Input for an interactive command whose terminal is closed (its program and every holder of the pty are gone). */
  terminalClosed: 'DSH_SSH_TERMINAL_CLOSED',
} as const

/** The message of a lost connection; the kit reports it on the task and rejects runs with it. */
export function lostMessage(label: string): string {
  return `connection to ${label} lost`
}

export const sshErrors = {
  connectionLost: (label: string) => codedError(SSH_ERROR.connectionLost, lostMessage(label)),
  /** A loss whose reason is already worded (a control request's failure). */
  lostWith: (reason: string) => codedError(SSH_ERROR.connectionLost, reason),
  startFailed: (message: string) => codedError(SSH_ERROR.startFailed, message),
  invalidConfig: (detail: string) => codedError(SSH_ERROR.invalidConfig, `invalid ssh executor config: ${detail}`),
  hostKeyRejected: (label: string, refusal: string) => codedError(SSH_ERROR.hostKeyRejected, `host key verification failed for ${label}: ${refusal}`),
  authFailed: (label: string, why: string) => codedError(SSH_ERROR.authFailed, `authentication failed for ${label}: ${why}`),
  connectFailed: (label: string, why: string) => codedError(SSH_ERROR.connectFailed, `cannot connect to ${label}: ${why}`),
  connectionClosed: (label: string) => codedError(SSH_ERROR.connectionClosed, `connection to ${label} closed`),
  handshakeClosed: () => codedError(SSH_ERROR.connectionLost, 'connection closed during the handshake'),
  poolClosed: (label: string) => codedError(SSH_ERROR.poolClosed, `the connection pool for ${label} is closed`),
  knownHostsUnreadable: (path: string, why: string) => codedError(SSH_ERROR.knownHostsUnreadable, `cannot read known_hosts file ${path}: ${why}`),
  invalidTarget: (text: string, why: string) => codedError(SSH_ERROR.invalidTarget, `invalid ssh target ${JSON.stringify(text)}: ${why}`),
  terminalClosed: (label: string) => codedError(SSH_ERROR.terminalClosed, `the terminal of this command on ${label} is closed`),
}

/** True for a connection error that no retry can fix (host key refused, authentication failed, bad settings). */
export function isFatalConnectError(error: unknown): boolean {
  return hasCode(error, SSH_ERROR.hostKeyRejected) || hasCode(error, SSH_ERROR.authFailed) || hasCode(error, SSH_ERROR.connectFailed)
}

/** True for an error of the connection itself (not of the agent or a command): what the start check names the flags for. */
export function isConnectionError(error: unknown): boolean {
  return isFatalConnectError(error) || hasCode(error, SSH_ERROR.connectionLost) || hasCode(error, SSH_ERROR.connectionClosed)
}
