import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'

/**
 * Every error the container executor raises on purpose: a stable `code` (the seam's BASH_ERROR
 * where one fits, else `DSH_CONTAINER_…`) and the message, which stays byte for byte as the
 * README gives it. Nothing classifies these errors by their text.
 */
export const CONTAINER_ERROR = {
  /** The engine URL (config or DOCKER_HOST) is malformed or not supported, or its TLS files cannot be read. */
  engineUrl: 'DSH_CONTAINER_ENGINE_URL',
  /** The engine cannot be reached (socket missing, connection refused). */
  engineUnreachable: 'DSH_CONTAINER_ENGINE_UNREACHABLE',
  /** The engine did not answer a call in time. */
  engineTimeout: 'DSH_CONTAINER_ENGINE_TIMEOUT',
  /** The engine answered a call with an error status (EngineError carries the status). */
  engineStatus: 'DSH_CONTAINER_ENGINE_STATUS',
  /** The image is not on the engine (the executor never pulls). */
  noImage: 'DSH_CONTAINER_NO_IMAGE',
  /** The session container could not be created, started or made ready. */
  createFailed: 'DSH_CONTAINER_CREATE_FAILED',
  /** The agent inside the session container did not start. */
  agentFailed: 'DSH_CONTAINER_AGENT_FAILED',
  /** The session container stopped while a command ran. */
  lost: BASH_ERROR.connectionLost,
  /** A NUL byte in the command, workdir or env. */
  invalidRequest: BASH_ERROR.invalidRequest,
  /** The workdir is missing, not a directory, not accessible; or the agent could not spawn the shell. */
  startFailed: BASH_ERROR.startFailed,
  /** The executor's config failed validation. */
  invalidConfig: BASH_ERROR.invalidConfig,
  /** The executor is disposed. */
  disposed: BASH_ERROR.disposed,
  /** Input for an interactive command whose terminal is closed (its program and every holder of the pty are gone). */
  terminalClosed: 'DSH_CONTAINER_TERMINAL_CLOSED',
  /**
   * Copying the workspace into a session container failed (`workspaceMode: "copy"`): larger than
   * `workspaceCopyMaxBytes`, `find`/`tar` failed on the host, or the engine refused the archive
   * (e.g. `mountPath` lies under a file of the image).
   */
  workspaceCopy: 'DSH_CONTAINER_WORKSPACE_COPY',
} as const

/** The reason a command or session gives when its container stopped under it. */
export function lostMessage(container: string): string {
  return `the session container ${container} stopped while the command ran`
}

export const engineErrors = {
  badUrl: (url: string) =>
    codedError(CONTAINER_ERROR.engineUrl, `invalid engine URL ${JSON.stringify(url)}: expected unix:///path/to/socket, tcp://host:port, https://host:port or ssh://[user@]host[:port]`),
  unsupportedUrl: (url: string) =>
    codedError(
      CONTAINER_ERROR.engineUrl,
      `engine URL ${JSON.stringify(url)} is not supported: use unix:///path/to/socket, tcp://host:port (TLS by DOCKER_TLS_VERIFY/DOCKER_CERT_PATH or the tls setting), https://host:port or ssh://[user@]host[:port]`,
    ),
  ssh: (code: number | null, why: string) => codedError(CONTAINER_ERROR.engineUnreachable, `ssh to the engine exited with ${code ?? 'a signal'}${why ? `: ${why}` : ''}`),
  tlsFile: (path: string, why: string) => codedError(CONTAINER_ERROR.engineUrl, `cannot read the engine TLS file ${path}: ${why}`),
  unreachable: (url: string, why: string) => codedError(CONTAINER_ERROR.engineUnreachable, `cannot reach the container engine at ${url}: ${why}`),
  timeout: (url: string, call: string) => codedError(CONTAINER_ERROR.engineTimeout, `the container engine at ${url} did not answer ${call} in time`),
}

export const containerErrors = {
  noImage: (image: string) =>
    codedError(CONTAINER_ERROR.noImage, `image ${JSON.stringify(image)} is not on the engine (the container executor never pulls: load or build it first)`),
  createFailed: (why: string) => codedError(CONTAINER_ERROR.createFailed, `cannot create the session container: ${why}`),
  agentFailed: (why: string) => codedError(CONTAINER_ERROR.agentFailed, `the agent inside the session container did not start: ${why}`),
  /** A command that could not start because its container is gone; `reason` is already worded. */
  lost: (reason: string) => codedError(CONTAINER_ERROR.lost, reason),
  nulInCommand: () => codedError(CONTAINER_ERROR.invalidRequest, 'invalid command: contains a NUL byte'),
  nulInWorkdir: () => codedError(CONTAINER_ERROR.invalidRequest, 'invalid workdir: contains a NUL byte'),
  nulInEnv: (name: string) => codedError(CONTAINER_ERROR.invalidRequest, `invalid env: ${name} contains a NUL byte`),
  workdirMissing: (path: string) => codedError(CONTAINER_ERROR.startFailed, `workdir does not exist: ${path}`),
  workdirNotDir: (path: string) => codedError(CONTAINER_ERROR.startFailed, `workdir is not a directory: ${path}`),
  workdirNoAccess: (path: string) => codedError(CONTAINER_ERROR.startFailed, `workdir is not accessible: ${path}`),
  spawn: (why: string) => codedError(CONTAINER_ERROR.startFailed, `cannot start the command in the container: ${why}`),
  invalidConfig: (detail: string) => codedError(CONTAINER_ERROR.invalidConfig, `invalid container executor config: ${detail}`),
  disposed: () => codedError(CONTAINER_ERROR.disposed, 'the bash executor is disposed'),
  terminalClosed: () => codedError(CONTAINER_ERROR.terminalClosed, 'the terminal of this command is closed'),
  workspaceCopy: (why: string) => codedError(CONTAINER_ERROR.workspaceCopy, `cannot copy the workspace into the session container: ${why}`),
}
