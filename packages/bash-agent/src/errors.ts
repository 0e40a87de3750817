import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'

/**
 * How a transport words the failures of commands run through its agent (the container executor's
 * messages name the container, SSH's the host): the codes are the seam's; each message stays byte
 * for byte as that transport's README gives it.
 */
export interface AgentErrors {
  /** The agent did not come up (or said something that is not the protocol) before its hello. */
  agentFailed(why: string): Error
  /** A command could not start because the session is gone; `reason` is already worded. */
  lost(reason: string): Error
  workdirMissing(path: string): Error
  workdirNotDir(path: string): Error
  workdirNoAccess(path: string): Error
  /** The agent could not start the shell (`why`: its words, e.g. `cannot run bash: No such file or directory`). */
  spawn(why: string): Error
  /** Input for an interactive command whose terminal is closed. */
  terminalClosed(): Error
}

/** Codes of the errors this package raises itself. */
export const AGENT_ERROR = {
  /** The far side answered with something that is not the agent protocol, or another version of it. */
  protocol: 'DSH_AGENT_PROTOCOL',
  /** No agent binary ships for the far side's architecture. */
  noBinary: 'DSH_AGENT_NO_BINARY',
  /** Copying the agent to the far side failed (directory not private, hash mismatch, no space). */
  install: 'DSH_AGENT_INSTALL',
  /** A NUL byte in the command, workdir or env. */
  invalidRequest: BASH_ERROR.invalidRequest,
} as const

export const agentErrors = {
  nulInCommand: () => codedError(AGENT_ERROR.invalidRequest, 'invalid command: contains a NUL byte'),
  nulInWorkdir: () => codedError(AGENT_ERROR.invalidRequest, 'invalid workdir: contains a NUL byte'),
  nulInEnv: (name: string) => codedError(AGENT_ERROR.invalidRequest, `invalid env: ${name} contains a NUL byte`),
  noBinary: (arch: string) => codedError(AGENT_ERROR.noBinary, `no dsh-bash agent is built for ${arch} (packages/bash-agent/scripts/build-native.sh ${arch})`),
  protocol: (where: string, what: string) => codedError(AGENT_ERROR.protocol, `the dsh-bash agent in ${where} ${what}`),
  install: (where: string, why: string) => codedError(AGENT_ERROR.install, `cannot install the dsh-bash agent on ${where}: ${why}`),
}
