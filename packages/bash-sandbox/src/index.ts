export { SandboxExecutor, UNAVAILABLE_PREFIX } from './executor.js'
export {
  SANDBOX_MODES,
  isSandboxMode,
  widerModes,
  checkRequestedMode,
  parseSandboxConfig,
  sandboxConfigSchema,
  type SandboxModeName,
  type SandboxExecutorConfig,
  type SandboxExecutorConfigInput,
} from './config.js'
export { bwrapArgs, type BwrapPlan } from './bwrap.js'
export { findGitMetadata, gitMounts, type GitPlan, type GitProtection } from './git.js'
export { buildSeccompFilter, type FilterOptions } from './seccomp.js'
export { BwrapSandbox } from './sandbox.js'
export { showsDeniedWrite } from './denial.js'
export { DEFAULT_DENY_READ, type ReadMask } from './read-masks.js'
export { EgressProxy, ProxyLaunch, type EgressSettings } from './egress-proxy.js'
