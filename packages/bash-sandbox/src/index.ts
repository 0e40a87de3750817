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
export { bwrapArgs, gitProtections, type BwrapPlan, type Protection } from './bwrap.js'
export { showsDeniedWrite } from './denial.js'
