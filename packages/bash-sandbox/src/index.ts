/**
 * @deepseek-ai/dsh-bash-sandbox — `SandboxExecutor`: the local executor with every command in bubblewrap.
 *
 * Flow at a glance: `SandboxExecutor` (executor.ts) is a `LocalExecutor` with a launch transform:
 * per launch, `BwrapSandbox` (sandbox.ts) takes the bash command line and the resolved sandbox mode
 * (config.ts: the modes and their order) and returns the bwrap line (bwrap.ts) with its seccomp
 * filter (seccomp.ts, handed over as a descriptor by seccomp-fd.ts), the executor's private
 * directories hidden (privacy.ts) and `.git` metadata protected (git.ts). The launched command is
 * wrapped (command.ts) to read bwrap's status file and report `SandboxFacts`, a denied write
 * recognised in stderr (denial.ts).
 */
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
export { type ReadMask } from './read-masks.js'
