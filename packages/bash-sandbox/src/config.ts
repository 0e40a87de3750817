import { z } from 'zod'
import { BASH_ERROR, codedError, isSandboxMode, SANDBOX_MODES, type SandboxModeName, widerModes as widerAmong } from '@deepseek-ai/dsh-bash'
import { parseConfig } from '@deepseek-ai/dsh-bash-kit'
import { localConfigSchema } from '@deepseek-ai/dsh-bash-local'

// The modes are defined once, in the seam (dsh-bash's sandbox-modes.ts).
export { isSandboxMode, SANDBOX_MODES, type SandboxModeName } from '@deepseek-ai/dsh-bash'

const modeList = SANDBOX_MODES.join(', ')

/** The modes strictly wider than `mode`, narrowest first. */
export function widerModes(mode: SandboxModeName): SandboxModeName[] {
  return widerAmong(mode, SANDBOX_MODES)
}

/**
 * The sandbox executor's settings: the local executor's (`cwd`, `timeoutMs`, `shell`, …) plus the
 * confinement. `containment` leaves out `pgroup`: bwrap starts the command in a new session, where
 * a process group cannot follow it.
 */
export const sandboxConfigSchema = z
  .object({
    ...localConfigSchema.shape,
    containment: z
      .enum(['auto', 'cgroup', 'marker'], { error: 'containment must be one of auto, cgroup, marker' })
      .default('auto'),
    /** The default mode of every command; a request may ask for another one (see `resolve`). */
    mode: z.enum(SANDBOX_MODES, { error: `mode must be one of ${modeList}` }).default('workspace-write'),
    /** The directory `workspace-write` makes writable. Default: the executor's `cwd` (else the process's). */
    workspaceRoot: z.string().min(1, 'workspaceRoot must not be empty').optional(),
    /** Whether confined commands may use the network. Off: a private network namespace (loopback only). */
    network: z.boolean().default(false),
    /** The bwrap binary: an absolute path, or a name looked up in PATH. Default `bwrap` from PATH. */
    bwrapPath: z.string().min(1, 'bwrapPath must not be empty').optional(),
  })
  .strict()

export type SandboxExecutorConfig = z.output<typeof sandboxConfigSchema>
export type SandboxExecutorConfigInput = z.input<typeof sandboxConfigSchema>

/** The keys the sandbox adds to the local executor's config. */
export const SANDBOX_KEYS = ['mode', 'workspaceRoot', 'network', 'bwrapPath'] as const

/** Validates the config; a bad value is an Error naming the key (`invalid sandbox executor config: …`). */
export function parseSandboxConfig(input: unknown): SandboxExecutorConfig {
  return parseConfig(sandboxConfigSchema, input, 'sandbox executor')
}

/** The validated request mode, or an Error naming the accepted modes. */
export function checkRequestedMode(value: unknown): SandboxModeName {
  if (isSandboxMode(value)) return value
  throw codedError(BASH_ERROR.invalidRequest, `invalid sandboxMode: expected one of ${modeList}, got ${JSON.stringify(value ?? null)}`)
}
