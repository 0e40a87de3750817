import { realpathSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { resolve as resolvePath } from 'node:path'
import type { Context } from 'cordis'
import { BASH_ERROR, type BashExecRequest, type BashExecSpec, codedError, type EgressRules, type ExecutorCapabilities, isDirectory, SANDBOX_MODES, type SandboxModeName } from '@deepseek-ai/dsh-bash'
import { checkPattern } from './egress-rules.js'
import { LocalExecutor, type LocalExecutorConfigInput } from '@deepseek-ai/dsh-bash-local'
import { lookupExecutable } from './bwrap.js'
import {
  checkRequestedMode,
  networkKind,
  parseSandboxConfig,
  SANDBOX_KEYS,
  type SandboxExecutorConfig,
  type SandboxExecutorConfigInput,
} from './config.js'
import { checkSpillPlacement, currentMounts } from './privacy.js'
import { BwrapSandbox, UNAVAILABLE_PREFIX } from './sandbox.js'

export { UNAVAILABLE_PREFIX }

/**
 * The sandbox executor: the local executor composed with the sandbox's transform of its command line
 * (`BwrapSandbox`), so every command is confined by bubblewrap.
 *
 * - `read-only`: the host's file system read-only, a private /tmp, /dev and /proc; writes succeed
 *   only in /dev/null (and the other harmless /dev nodes) and the private /tmp.
 * - `workspace-write`: the same, plus the workspace root writable, its git metadata read-only.
 * - `danger-full-access`: no confinement: exactly the local executor's command line.
 *
 * New PID, IPC, UTS and cgroup namespaces and session, a seccomp filter; the network namespace is
 * private unless `network` is on. bwrap is started like any wrapper by the local executor (through
 * its `/bin/sh` launcher that joins the per-command cgroup when there is one), so its containment
 * still covers every process of the command.
 */
export class SandboxExecutor extends LocalExecutor {
  static readonly inject: string[] = []
  /** The validated config, sandbox keys included. */
  readonly sandboxConfig: SandboxExecutorConfig
  /** Physical path of the workspace root. */
  readonly workspaceRoot: string
  /** The bwrap binary in use; undefined when none was found. */
  readonly bwrapPath: string | undefined
  private readonly sandbox: BwrapSandbox

  constructor(ctx: Context, config: SandboxExecutorConfigInput = {}) {
    const parsed = parseSandboxConfig(config)
    // Checked before the executor registers itself, so that a bad root leaves nothing behind.
    const workspaceRoot = physicalDirectory(parsed.workspaceRoot, parsed.cwd)
    // The executor's private directories are made under the spill directory (as the local
    // executor does): never where a workspace-write command could write.
    checkSpillPlacement(resolvePath(parsed.spillDir ?? tmpdir()), workspaceRoot, currentMounts())
    const local: Record<string, unknown> = { ...parsed }
    for (const key of SANDBOX_KEYS) delete local[key]
    const bwrapPath = lookupExecutable(parsed.bwrapPath ?? 'bwrap')
    // The sandbox is a transform of the local executor's command line, composed at construction.
    const sandbox = new BwrapSandbox({ config: parsed, workspaceRoot, bwrapPath, home: homedir() })
    // The base constructor publishes the service, and tool-bash may read `capabilities` and
    // `sandboxMode` at once: until super() returns they come from `constructingConfig`.
    SandboxExecutor.constructingConfig = parsed
    try {
      super(ctx, local as LocalExecutorConfigInput, sandbox.transform)
    } finally {
      SandboxExecutor.constructingConfig = undefined
    }
    this.sandbox = sandbox
    this.sandboxConfig = parsed
    this.workspaceRoot = workspaceRoot
    this.bwrapPath = bwrapPath
    // Probed once: every confined command is refused with this reason when bwrap cannot work here.
    sandbox.probe({ privateDir: this.spillDir, shellPath: this.shellPath, containment: this.containment, containmentNote: this.containmentNote })
  }

  protected async disposeBackend(): Promise<void> {
    await super.disposeBackend()
    this.sandbox.release()
  }

  /** Why confined commands are refused; undefined when the sandbox works. */
  get unavailableReason(): string | undefined {
    return this.sandbox.unavailableReason
  }

  /**
   * Every mode of `SANDBOX_MODES` (a request picks one; `danger-full-access` runs unconfined), the
   * local executor's terminals, this machine's paths, and the network as configured.
   */
  get capabilities(): ExecutorCapabilities {
    const local = super.capabilities
    // A private /tmp exists here, so its size can be bounded too (limits.tmp).
    return { ...local, sandboxModes: SANDBOX_MODES, limits: [...local.limits, 'tmp'], networkModes: [networkKind(this.ownConfig().network)] }
  }

  /** The default mode of every command. */
  get sandboxMode(): SandboxModeName {
    return this.ownConfig().mode
  }

  /** The sandbox config, also while super() runs (see the constructor). */
  private ownConfig(): SandboxExecutorConfig {
    return this.sandboxConfig ?? SandboxExecutor.constructingConfig!
  }

  /** The config of the executor whose super() is running (constructors run one at a time). */
  private static constructingConfig?: SandboxExecutorConfig

  /**
   * Applies the local executor's defaults and resolves the mode, once: the request's when given
   * (validated), else the default. `run` and `start` use `spec.sandboxMode` as it is.
   */
  resolve(request: BashExecRequest): BashExecSpec {
    const spec = super.resolve(request)
    const network = request.network === undefined ? undefined : checkEgressRules(request.network)
    return { ...spec, sandboxMode: checkRequestedMode(request.sandboxMode ?? this.sandboxMode), ...(network ? { network } : {}) }
  }
}

/** The caller's egress rules, patterns normalized; a bad one is `invalid network: …` (an invalid request). */
function checkEgressRules(rules: EgressRules): EgressRules {
  if (rules === null || typeof rules !== 'object') throw codedError(BASH_ERROR.invalidRequest, 'invalid network: expected { allow?: [host patterns], deny?: [host patterns] }')
  const list = (key: 'allow' | 'deny') => {
    const value = rules[key]
    if (value === undefined) return undefined
    if (!Array.isArray(value)) throw codedError(BASH_ERROR.invalidRequest, `invalid network: ${key} must be a list of host patterns`)
    try {
      return value.map((pattern) => checkPattern(String(pattern), `invalid network: ${key}`))
    } catch (error) {
      throw codedError(BASH_ERROR.invalidRequest, (error as Error).message)
    }
  }
  const allow = list('allow')
  const deny = list('deny')
  return { ...(allow ? { allow } : {}), ...(deny ? { deny } : {}) }
}

/** Resolves the workspace root to a physical directory, or throws naming the key. */
function physicalDirectory(configured: string | undefined, cwd: string | undefined): string {
  const base = cwd ? resolvePath(cwd) : process.cwd()
  const path = configured === undefined ? base : resolvePath(base, configured)
  let cause: unknown
  if (isDirectory(path)) {
    try {
      return realpathSync(path)
    } catch (error) {
      cause = error
    }
  }
  throw codedError(BASH_ERROR.invalidConfig, `invalid sandbox executor config: workspaceRoot is not an existing directory: ${path}`, { cause })
}

