/**
 * @deepseek-ai/dsh-bash-kubernetes — `KubernetesExecutor`: a pod per session, commands through the far-side agent.
 *
 * Flow at a glance: `KubernetesExecutor` (executor.ts) is bash-container's `AgentSessionExecutor`
 * over pods: for an owner's first command it builds the pod (pod.ts, from an optional template) and
 * `PodSession` (session.ts) creates it, waits until it runs, installs the agent and runs it through
 * pods/exec (kills through a second exec) → bash-agent's `launchThroughAgent`. sweep.ts deletes the
 * pods of dead servers and keeps the namespace's deny-all network policy. Config: config.ts; coded
 * errors: errors.ts.
 */
export { KubernetesExecutor, readTemplate } from './executor.js'
export { kubernetesConfigSchema, parseKubernetesConfig, DEFAULT_POD_WORKDIR, type KubernetesExecutorConfig, type KubernetesExecutorConfigInput } from './config.js'
export { buildPod, podCommand, AGENT_VOLUME, LABEL_EXECUTOR, ANNOTATION_SERVER, WORKSPACE_VOLUME, type PodSettings } from './pod.js'
export { PodSession, type PodAccess, type PodSessionSpec } from './session.js'
export { sweepDeadPods, ensureDenyAllPolicy, NETWORK_POLICY_NAME } from './sweep.js'
export { KUBERNETES_ERROR, kubernetesErrors } from './errors.js'
