import { accessSync, constants } from 'node:fs'
import { delimiter, isAbsolute, join } from 'node:path'
import { z } from 'zod'
import { BASH_ERROR, codedError } from '@deepseek-ai/dsh-bash'
import { executorConfigShape, limitsSchema, parseConfig } from '@deepseek-ai/dsh-bash-kit'

export const localConfigSchema = z
  .object({
    ...executorConfigShape,
    /** The shell: an absolute path, or a name looked up in PATH. */
    shell: z.string().min(1, 'shell must not be empty').default('bash'),
    /** How processes are found and killed: the best available (`auto`) or a given strategy. */
    containment: z.enum(['auto', 'cgroup', 'marker', 'pgroup'], { error: 'containment must be one of auto, cgroup, marker, pgroup' }).default('auto'),
    /**
     * What the command's stdout and stderr are: real pipes (`fifo`: FIFOs made by `mkfifo`, so that
     * `/dev/stdout`, `/dev/stderr` and `/dev/fd/N` open), Node's socketpairs (`socket`: those fail
     * with ENXIO), or the first that works (`auto`).
     */
    outputPipes: z.enum(['auto', 'fifo', 'socket'], { error: 'outputPipes must be one of auto, fifo, socket' }).default('auto'),
    /**
     * Who forks the commands: this process's event loop (`spawn`, Node's synchronous fork), or a
     * small long-lived launcher helper process per executor (`helper`), so that a start never blocks
     * the server's loop and its cost does not grow with the server's memory. `helper` needs real
     * pipes (outputPipes `fifo`: with sockets every command is spawned here); a command with stdin and
     * an interactive command (a pty) are still spawned here, but the helper then still makes the
     * FIFOs; a wrapper's extra descriptors (bwrap's) go through the helper. Default `helper`. See
     * bench/README.md, "Launcher".
     * `helper` is the native helper (native/launcher.c, prebuilt for x86-64 Linux so far: it starts
     * commands with a fork of its own small process, about twice as cheap as a fork of any Node process) where the package ships
     * one this process may execute, else the Node helper (dist/launcher-helper.js); `helper-native`
     * and `helper-node` ask for one of them (`helper-native` is a config error where none ships).
     */
    launcher: z
      .enum(['spawn', 'helper', 'helper-native', 'helper-node'], { error: 'launcher must be one of spawn, helper, helper-native, helper-node' })
      .default('helper'),
    /**
     * Resource limits of every command (`memory`, `pids`, `cpu`; `tmp` only where a private /tmp
     * exists: the sandbox). None by default. Enforced by the command's cgroup where this machine
     * allows it, else by rlimits (see limits.ts and the README).
     */
    limits: limitsSchema.default({}),
  })
  .strict()

export type LocalExecutorConfig = z.output<typeof localConfigSchema>
export type LocalExecutorConfigInput = z.input<typeof localConfigSchema>

export function parseLocalConfig(input: unknown): LocalExecutorConfig {
  return parseConfig(localConfigSchema, input, 'local executor')
}

/** Resolves a command name through PATH to an executable file; throws naming the shell when absent. */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string {
  const candidates = isAbsolute(name) || name.includes('/') ? [name] : path.split(delimiter).filter(Boolean).map((dir) => join(dir, name))
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // Try the next one.
    }
  }
  throw codedError(BASH_ERROR.invalidConfig, `shell not found: ${name}`)
}
