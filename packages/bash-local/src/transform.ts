import { Logger } from 'cordis'
import type { BashErrorCode, BashExecSpec } from '@deepseek-ai/dsh-bash'
import { DelegatingCommand, type LaunchedCommand } from '@deepseek-ai/dsh-bash-kit'
import type { CommandLine } from './command-line.js'

/**
 * A transform of the command line, composed with the local launcher (the sandbox is one): the
 * command's bash line in, the line to execute out, with what to undo afterwards and an adapter for
 * the launched command; or a typed refusal, in which case nothing is started. Called once per
 * launch, synchronously, before any process or cgroup exists. Modelled on Codex's
 * `SandboxManager::transform`.
 */
export type LaunchTransform = (input: TransformInput) => TransformResult

export interface TransformInput {
  /** The resolved spec (its `sandboxMode` was resolved once, by `resolve`). */
  spec: BashExecSpec
  /** The launch's label, unique per executor (`run-3`, `bash-2`): a name for per-launch files. */
  label: string
  /** The bash command line the local executor would run. */
  line: CommandLine
  /** The executor's private directory (0700): per-launch files go there. Never shown to a confined command. */
  privateDir: string
  /**
   * The spec owner's own directory inside it (0700): that owner's spill files and long scripts.
   * The only part of `privateDir` a confined command needs to see; other owners' directories stay hidden.
   */
  ownerDir: string
  /**
   * Every directory the executor keeps for itself: `privateDir` and, with FIFO pipes, the pipe
   * pool's. A confined command must see none of them, except `ownerDir`; never the workspace.
   */
  executorDirs: string[]
}

export type TransformResult = TransformedLaunch | TransformRefusal

export interface TransformedLaunch {
  kind: 'launch'
  /** What to execute instead (it may be `input.line` itself). Its `extraFds` are closed by the launcher. */
  line: CommandLine
  /**
   * Undo actions (files to delete, guards to release), run exactly once, in order: after the
   * launched command's `release`, or at once when the launch fails. A throw is logged and harms
   * no other action.
   */
  cleanup: Array<() => void>
  /** Wraps the launched command (exit status translation, sandbox facts). Default: unchanged. */
  adapt?: (launched: LaunchedCommand) => LaunchedCommand
}

export interface TransformRefusal {
  kind: 'refused'
  /** The error message the launch fails with (a run rejects, a start throws). */
  reason: string
  /** The stable code of that error (`DSH_SANDBOX_UNAVAILABLE`, …). Default `DSH_START_FAILED`. */
  code?: BashErrorCode
}

/** Runs undo actions once each, isolating failures; a failure is logged to `logger` (the executor's). */
export function runCleanup(actions: Array<() => void>, logger: Logger = FALLBACK_LOGGER): void {
  for (const action of actions.splice(0)) {
    try {
      action()
    } catch (error) {
      logger.error('a launch cleanup failed:', error)
    }
  }
}

/** For callers without a plugin context: the same `dsh-bash` name, no context attached. */
const FALLBACK_LOGGER = new Logger('dsh-bash')

/** A launched command whose `release` also runs the transform's cleanup; the rest passes through. */
export class CleanedUpCommand extends DelegatingCommand {
  constructor(
    inner: LaunchedCommand,
    private readonly cleanup: Array<() => void>,
    private readonly logger?: Logger,
  ) {
    super(inner)
  }

  async release(): Promise<void> {
    try {
      await this.inner.release()
    } finally {
      runCleanup(this.cleanup, this.logger)
    }
  }
}
