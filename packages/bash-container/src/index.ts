export { ContainerExecutor } from './executor.js'
export { containerConfigSchema, parseContainerConfig, DEFAULT_MOUNT_PATH, type ContainerExecutorConfig, type ContainerExecutorConfigInput } from './config.js'
export { EngineClient, EngineError, parseEngineUrl, engineUrlFromEnv, engineTlsFromEnv, loadEngineTls, DEFAULT_ENGINE_URL, type EngineAddress, type EngineStream, type EngineTls } from './engine.js'
export { sweepDeadServers, serverIdentity, isDeadServer, LABEL_EXECUTOR, LABEL_SERVER } from './sweep.js'
export { agentImage, AGENT_IMAGE_REPOSITORY, LABEL_AGENT, type AgentImage } from './agent-image.js'
// The per-owner session executor of the agent's transports that make a place per session (Kubernetes too).
export { AgentSessionExecutor, type AgentSessionOptions } from './session-executor.js'
export { CONTAINER_ERROR, containerErrors, lostMessage } from './errors.js'
export { workspaceArchive, type WorkspaceArchive, type WorkspaceArchiveOptions } from './workspace-archive.js'
