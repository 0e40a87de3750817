import { isAbsolute, resolve as resolvePath } from 'node:path'
import { z } from 'zod'
import { BASH_ERROR, type BashExecRequest, type BashExecSpec, codedError, type SandboxMode } from '@deepseek-ai/dsh-bash'
import { DEFAULT_SECRET_PATTERNS, SECRET_PATTERN_SYNTAX } from './env.js'

/** A positive integer setting; every message names the key (`readyTimeoutMs must be positive`). */
export const positiveInt = (name: string) =>
  z.number({ error: `${name} must be a number` }).int(`${name} must be an integer`).positive(`${name} must be positive`)
/** A non-negative integer setting; every message names the key. */
export const nonNegativeInt = (name: string) =>
  z.number({ error: `${name} must be a number` }).int(`${name} must be an integer`).nonnegative(`${name} must not be negative`)

/** The longest delay a Node.js timer supports (about 24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1
const duration = <T extends z.ZodNumber>(name: string, schema: T) => schema.max(MAX_TIMER_MS, `${name} must be at most ${MAX_TIMER_MS} ms`)

/** The settings every executor built on this kit shares. Defaults are those of the spec. */
export const executorConfigShape = {
  /** Base directory for relative workdirs; default `process.cwd()` at resolve time. */
  cwd: z.string().optional(),
  /** Default foreground timeout (ms). */
  timeoutMs: duration('timeoutMs', positiveInt('timeoutMs')).default(120_000),
  /** Cap on any requested timeout (ms). */
  maxTimeoutMs: duration('maxTimeoutMs', positiveInt('maxTimeoutMs')).default(600_000),
  /** Bytes kept in memory per stream (the tail). */
  maxOutputBytes: positiveInt('maxOutputBytes').default(64_000),
  /** Time between SIGTERM and SIGKILL (ms). */
  graceMs: duration('graceMs', nonNegativeInt('graceMs')).default(3_000),
  /**
   * Spill threshold over both streams: a launch whose stdout and stderr together exceed this many
   * bytes (of the text the model reads) keeps a spill file of each stream, even while memory holds
   * them whole; an interactive task then spills its raw terminal stream from its first byte. Unset:
   * a stream spills only when it overflows `maxOutputBytes`. A front end that cuts results to a
   * budget sets it (and `spillAboveLines`) below the budget: then every cut names a complete file.
   */
  spillAboveBytes: nonNegativeInt('spillAboveBytes').optional(),
  /** Spill threshold in lines (stdout's plus stderr's), as `spillAboveBytes`. Unset: none. */
  spillAboveLines: nonNegativeInt('spillAboveLines').optional(),
  /** Longest stream kept as a spill file (bytes); 0 disables spill files. */
  maxSpillBytes: nonNegativeInt('maxSpillBytes').default(64 * 1024 * 1024),
  /** Parent directory of the executor's private spill directory; default the OS temp dir. */
  spillDir: z.string().optional(),
  /** Keep spill files on eviction and disposal. */
  keepSpillFiles: z.boolean().default(false),
  /** Finished background tasks (and foreground spill files) kept for reading. */
  maxFinishedTasks: positiveInt('maxFinishedTasks').default(256),
  /** Longest accepted command (bytes). */
  maxCommandBytes: positiveInt('maxCommandBytes').default(1024 * 1024),
  /** How long a foreground call waits for the pipes after the main process exited (ms). */
  drainMs: duration('drainMs', nonNegativeInt('drainMs')).default(1_500),
  /**
   * Variables removed from every command's environment: globs over the whole name (`*_TOKEN`,
   * case-insensitive), and `!NAME` entries keeping one variable (env.ts, DEFAULT_SECRET_PATTERNS).
   */
  secretEnvPatterns: z
    .array(z.string().regex(SECRET_PATTERN_SYNTAX, 'secretEnvPatterns entries are globs of letters, digits, _ and *, or !NAME'))
    .default([...DEFAULT_SECRET_PATTERNS]),
}

export const executorConfigSchema = z.object(executorConfigShape).strict()

export type ExecutorConfig = z.output<typeof executorConfigSchema>
export type ExecutorConfigInput = z.input<typeof executorConfigSchema>

/**
 * Validates a config object against a schema; a bad value is an Error naming the key, e.g.
 * `invalid bash executor config: timeoutMs must be positive`.
 */
export function parseConfig<S extends z.ZodType>(schema: S, input: unknown, label = 'bash executor'): z.output<S> {
  // zod calls a parse-level error map only for issues the schema gave no message of its own:
  // recording them here tells our own messages from zod's without reading any text.
  const generic = new Set<string>()
  const parsed = schema.safeParse(input ?? {}, {
    error: (issue) => {
      generic.add(issueKey(issue.code, issue.path ?? []))
      return undefined
    },
  })
  if (parsed.success) {
    // Every executor config built on the shared shape: a default above the cap would be a lie.
    const { timeoutMs, maxTimeoutMs } = parsed.data as { timeoutMs?: unknown; maxTimeoutMs?: unknown }
    if (typeof timeoutMs === 'number' && typeof maxTimeoutMs === 'number' && maxTimeoutMs < timeoutMs) {
      throw codedError(BASH_ERROR.invalidConfig, `invalid ${label} config: timeoutMs (${timeoutMs}) exceeds maxTimeoutMs (${maxTimeoutMs})`)
    }
    return parsed.data
  }
  const details = parsed.error.issues
    .map((issue) => {
      const key = issue.path.map(String).join('.')
      if (issue.code === 'unrecognized_keys') return `unknown key(s) ${issue.keys.map((k) => `"${k}"`).join(', ')}`
      if (!generic.has(issueKey(issue.code, issue.path))) {
        // Our own messages name their property (`timeoutMs must be an integer`, `port must be 1–65535`):
        // a top-level one stands as it is, a nested one gets the path to its parent's property.
        return issue.path.length > 1 ? `${key}: ${issue.message}` : issue.message
      }
      if (issue.code === 'invalid_type' && key) return `${key} must be ${describeType(issue.expected)}`
      return key ? `${key}: ${issue.message}` : issue.message
    })
    .join('; ')
  throw codedError(BASH_ERROR.invalidConfig, `invalid ${label} config: ${details}`)
}

function issueKey(code: string | undefined, path: readonly PropertyKey[]): string {
  return JSON.stringify([code, path.map(String)])
}

function describeType(expected: string): string {
  if (expected === 'array') return 'a list'
  if (expected === 'int') return 'an integer'
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`
}

/** Throws `invalid env: bad variable name "<name>"` unless `name` is a shell variable name. */
export function assertEnvName(name: string): void {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw codedError(BASH_ERROR.invalidRequest, `invalid env: bad variable name ${JSON.stringify(name)}`)
}

/**
 * The shared `resolve` logic: absolute workdir, effective timeout, owner and sandbox mode keys.
 * Throws for invalid requests with messages naming the field.
 */
export function resolveRequest(
  config: Pick<ExecutorConfig, 'cwd' | 'timeoutMs' | 'maxTimeoutMs'>,
  request: BashExecRequest,
  sandboxMode: SandboxMode | undefined,
): BashExecSpec {
  if (!request || typeof request !== 'object') throw codedError(BASH_ERROR.invalidRequest, 'invalid request: expected an object')
  if (typeof request.command !== 'string' || request.command.trim() === '') {
    throw codedError(BASH_ERROR.invalidRequest, 'invalid command: expected a non-empty string')
  }
  const requested = request.timeoutMs
  if (requested !== undefined && (typeof requested !== 'number' || !Number.isFinite(requested) || requested <= 0)) {
    throw codedError(BASH_ERROR.invalidRequest, `invalid timeoutMs: expected a positive number, got ${JSON.stringify(requested ?? null)}`)
  }
  const timeoutMs = Math.min(requested ?? config.timeoutMs, config.maxTimeoutMs)
  const base = config.cwd ? resolvePath(config.cwd) : process.cwd()
  if (request.workdir !== undefined && typeof request.workdir !== 'string') {
    throw codedError(BASH_ERROR.invalidRequest, 'invalid workdir: expected a string')
  }
  const workdir = request.workdir === undefined || request.workdir === '' ? base : isAbsolute(request.workdir) ? resolvePath(request.workdir) : resolvePath(base, request.workdir)
  const yieldAfterMs = request.yieldAfterMs
  if (yieldAfterMs !== undefined && (typeof yieldAfterMs !== 'number' || !Number.isFinite(yieldAfterMs) || yieldAfterMs <= 0)) {
    throw codedError(BASH_ERROR.invalidRequest, `invalid yieldAfterMs: expected a positive number, got ${JSON.stringify(yieldAfterMs ?? null)}`)
  }
  if (request.interactive !== undefined && typeof request.interactive !== 'boolean') {
    throw codedError(BASH_ERROR.invalidRequest, `invalid interactive: expected a boolean, got ${JSON.stringify(request.interactive)}`)
  }
  if (request.env !== undefined) {
    for (const [name, value] of Object.entries(request.env)) {
      assertEnvName(name)
      if (typeof value !== 'string') throw codedError(BASH_ERROR.invalidRequest, `invalid env: ${name} must be a string`)
    }
  }
  return {
    command: request.command,
    workdir,
    timeoutMs,
    signal: request.signal,
    owner: request.owner,
    stdin: request.stdin,
    env: request.env,
    sandboxMode,
    ...(typeof request.onOutput === 'function' ? { onOutput: request.onOutput } : {}),
    ...(yieldAfterMs !== undefined ? { yieldAfterMs } : {}),
    ...(request.interactive === true ? { interactive: true } : {}),
  }
}
