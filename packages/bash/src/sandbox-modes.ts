/**
 * THE sandbox modes, narrowest first: a mode later in the list allows strictly more than every
 * mode before it. The one definition: the sandbox executor's config, its capabilities, the tool
 * schema's `sandbox_permissions`, the MCP session's choices and the CLI's `--sandbox-mode` all
 * read this list.
 *
 * - `read-only`: the command reads the machine as the sandbox shows it and writes nothing but its
 *   private temporary files.
 * - `workspace-write`: as `read-only`, and it writes under the workspace.
 * - `danger-full-access`: no confinement of files.
 */
export const SANDBOX_MODES = ['read-only', 'workspace-write', 'danger-full-access'] as const

/** One of `SANDBOX_MODES`. */
export type SandboxModeName = (typeof SANDBOX_MODES)[number]

/** True when `value` names a sandbox mode. */
export function isSandboxMode(value: unknown): value is SandboxModeName {
  return typeof value === 'string' && (SANDBOX_MODES as readonly string[]).includes(value)
}

/**
 * The modes of `among` (narrowest first, a subset of `SANDBOX_MODES` in its order) strictly wider
 * than `mode`; every mode of `among` for a mode that is not in it.
 */
export function widerModes<M extends string>(mode: string, among: readonly M[]): M[] {
  return among.slice(among.indexOf(mode as M) + 1)
}

/**
 * The modes of `among` no wider than `mode`, narrowest first, `mode` included; none when `mode` is
 * not in `among` (an executor that does not confine).
 */
export function modesUpTo<M extends string>(mode: string | undefined, among: readonly M[]): M[] {
  const rank = mode === undefined ? -1 : among.indexOf(mode as M)
  return rank < 0 ? [] : among.slice(0, rank + 1)
}
