/**
 * @deepseek-ai/dsh-bash-container — `ContainerExecutor`: a container per session, commands through the far-side agent.
 *
 * Flow at a glance: `launch(spec)` of `AgentSessionExecutor` (session-executor.ts, backend-neutral:
 * one agent session per owner) asks `ContainerExecutor` (executor.ts) for the owner's session →
 * `ContainerSession` (session.ts) creates the container over the Engine API (engine.ts: node:http
 * over unix, tcp or TLS) from the configured image with the agent added as an image layer
 * (agent-image.ts) and the workspace mounted or copied in (workspace-archive.ts), then one exec runs
 * the agent → bash-agent's `launchThroughAgent`. Containers of dead servers are removed by
 * sweep.ts. Config: config.ts; coded errors: errors.ts.
 */
export { ContainerExecutor } from './executor.js'
export { containerConfigSchema, parseContainerConfig, DEFAULT_MOUNT_PATH, type ContainerExecutorConfig, type ContainerExecutorConfigInput } from './config.js'
export { EngineClient, EngineError, parseEngineUrl, engineUrlFromEnv, engineTlsFromEnv, loadEngineTls, DEFAULT_ENGINE_URL, type EngineAddress, type EngineStream, type EngineTls } from './engine.js'
export { sweepDeadServers, serverIdentity, isDeadServer, LABEL_EXECUTOR, LABEL_SERVER } from './sweep.js'
export { agentImage, AGENT_IMAGE_REPOSITORY, LABEL_AGENT, type AgentImage } from './agent-image.js'
// The per-owner session executor of the agent's transports that make a place per session (Kubernetes too).
export { AgentSessionExecutor, type AgentSessionOptions } from './session-executor.js'
export { CONTAINER_ERROR, containerErrors, lostMessage } from './errors.js'
export { workspaceArchive, type WorkspaceArchive, type WorkspaceArchiveOptions } from './workspace-archive.js'
