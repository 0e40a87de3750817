/**
 * @deepseek-ai/dsh-bash-agent — the one far-side agent and the client of its protocol.
 *
 * Flow at a glance: a transport (bash-container, bash-kubernetes, bash-ssh) gets the static binary
 * (native/, `agentBinary`) to the far side (install.ts), starts `agent serve` there, and hands its
 * stdin/stdout to an `AgentSession` subclass (session.ts); `launchThroughAgent` (command.ts) is the
 * kit's LaunchedCommand over that session: `run`, output frames, exit, `count`, `term`, `wait`
 * (EmptyWait, empty-wait.ts), `forget`, and for terminals `in`, `size`, `modes`. The protocol is
 * docs/agent-protocol.md; the agent's own rules (group claim, settled scans, freeze-then-kill,
 * lifeline) are in native/*.c.
 */
export { AGENT_ARCHES, AGENT_PROCESS_NAME, AGENT_PROTOCOL_VERSION, agentArchOf, agentBinary, findAgentBinary, type AgentArch, type AgentBinary } from './binary.js'
export { AGENT_ERROR, agentErrors, type AgentErrors } from './errors.js'
export { encodeFrame, FrameReader, HELLO_START } from './frames.js'
export { AgentSession, type AgentHello, type AgentStream, type CommandSink } from './session.js'
export { launchThroughAgent, type AgentLaunchedCommand, type AgentLaunchOptions, type AgentWaitOptions } from './command.js'
export { type AgentLimits } from './limits.js'
export { describeNote, EmptyWait, type EmptyWaitOptions, type EmptyWaitTarget } from './empty-wait.js'
export {
  CONTAINER_AGENT_DIR,
  containerAgentArchive,
  containerAgentPath,
  INSTALL_SCRIPT,
  installArgs,
  NEED_PREFIX,
  POD_AGENT_DIR,
  POD_BOOT_SCRIPT,
  runInstall,
  SSH_SERVE_SCRIPT,
  sshServeArgs,
  type InstallStream,
} from './install.js'
