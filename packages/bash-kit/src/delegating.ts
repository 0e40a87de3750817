import type { Readable } from 'node:stream'
import { BASH_ERROR, codedError, type CollectedOutput, type ResourceFacts, type SandboxFacts, type TerminalModes } from '@deepseek-ai/dsh-bash'
import type { ExitFacts, LaunchedCommand } from './launched.js'

/**
 * A launched command that forwards every member of `LaunchedCommand` to `inner`, unchanged. A
 * wrapper (the local executor's cleanup, the sandbox's reading of bwrap) extends it and overrides
 * only what it changes, so a member added to `LaunchedCommand` is passed on by every wrapper at
 * once instead of being forgotten by one. Optional members of `inner` stay optional in effect:
 * `sandboxFacts`/`resourceFacts`/`lostReason`/`terminalModes` give undefined, `terminal` false, `resize` nothing and `write` a
 * rejection when `inner` has none.
 */
export class DelegatingCommand implements LaunchedCommand {
  constructor(protected readonly inner: LaunchedCommand) {}

  get stdout(): Readable {
    return this.inner.stdout
  }

  get stderr(): Readable {
    return this.inner.stderr
  }

  get exited(): Promise<ExitFacts> {
    return this.inner.exited
  }

  countLeftovers(): Promise<number> {
    return this.inner.countLeftovers()
  }

  terminate(graceMs: number): Promise<void> {
    return this.inner.terminate(graceMs)
  }

  whenEmpty(): Promise<void> {
    return this.inner.whenEmpty()
  }

  release(): void | Promise<void> {
    return this.inner.release()
  }

  sandboxFacts(exit: ExitFacts, stderr: CollectedOutput): SandboxFacts | undefined {
    return this.inner.sandboxFacts?.(exit, stderr)
  }

  resourceFacts(): ResourceFacts | undefined {
    return this.inner.resourceFacts?.()
  }

  lostReason(): string | undefined {
    return this.inner.lostReason?.()
  }

  /** An interactive launch's terminal, passed through. */
  get terminal(): boolean {
    return this.inner.terminal === true
  }

  write(data: Uint8Array): Promise<void> {
    if (!this.inner.write) return Promise.reject(codedError(BASH_ERROR.notInteractive, 'this command has no terminal'))
    return this.inner.write(data)
  }

  resize(cols: number, rows: number): void {
    this.inner.resize?.(cols, rows)
  }

  terminalModes(): Promise<TerminalModes | undefined> {
    return this.inner.terminalModes ? this.inner.terminalModes() : Promise.resolve(undefined)
  }
}
