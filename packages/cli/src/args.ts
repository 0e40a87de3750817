import { readFileSync } from 'node:fs'
import type { ToolBashConfig } from '@deepseek-ai/dsh-tool-bash'
import { spillThreshold } from '@deepseek-ai/dsh-tool-bash/budget'
import { resolve } from 'node:path'
import { DEFAULT_SECRET_PATTERNS } from '@deepseek-ai/dsh-bash/secret-env'
import { isDirectory } from '@deepseek-ai/dsh-bash/util'

import { UsageError } from './errors.js'
import { didYouMean, fileFlag, type FlagSpec, parseCommandLine } from './flags.js'
import { applyExecutorFlags, executorFlagSpec, executorKind, EXECUTORS, type ExecutorKind } from './executors.js'
import { refuseTokenFlag } from './token.js'
import { applyLimitDefaults } from './limit-defaults.js'

export { UsageError }

export { EXECUTORS, type ExecutorKind }

/** What every command that builds the tools accepts. */
export interface CommonOptions {
  executor: ExecutorKind
  /** Extra config for the executor plugin (its own keys; `cwd` is set from `workdir`). */
  executorConfig: Record<string, unknown>
  /** Absolute workspace directory, if given. */
  workdir?: string
  /** A policy file, if given. */
  policy?: string
  /** Settings of the bash tools (yield time, result budget); the library defaults when absent. */
  toolBash?: ToolBashConfig
}

export interface McpOptions extends CommonOptions {
  http?: { host: string; port: number }
  /** `--token-file`: the bearer token's file, absolute (token.ts reads and checks it at start). */
  tokenFile?: string
  allowedOrigins: string[]
  /** Foreground calls yield to the background after this many ms; 0: never. */
  yieldAfterMs: number
  /** The per-result budget of `bash` and `bash_output` texts. */
  resultBudget: { bytes: number; lines: number }
  /** HTTP sessions without a request for this long are closed (ms); 0: never. */
  idleTimeoutMs: number
  /** `--nice`: the nice value for the server's autogroup (priority.ts); undefined: left as it is. */
  nice?: number
  /** `--audit-log FILE` (absolute) and `--audit-required`: the audit log (dsh-mcp's `AuditOptions`). */
  auditLog?: { file: string; required: boolean }
}

/**
 * The MCP server's own defaults, tuned for MCP clients (README: "Results and MCP clients"):
 * - yield after 50 s: under the 60 s request timeout of the SDK's client, the shortest common one;
 * - 10,000 bytes per result: under Codex's ~12,000-character middle cut, the smallest inline limit
 *   (Claude Code and Qwen Code keep ~40 KB inline, Gemini CLI 40,000 characters);
 * - 1,900 lines: under OpenCode's first 2,000 lines, with room for notices;
 * - HTTP sessions idle for 30 minutes expire.
 */
export const MCP_DEFAULTS = {
  yieldAfterSeconds: 50,
  maxResultBytes: 10_000,
  maxResultLines: 1_900,
  idleTimeoutSeconds: 1800,
} as const

export type ReplOptions = CommonOptions

/** `dsh-bash agent`: the composed app plus an OpenAI-compatible model. */
export interface AgentCommandOptions extends CommonOptions {
  /** The API root, e.g. `http://127.0.0.1:8000/v1` (`/chat/completions` is appended). */
  baseUrl: string
  model: string
  /** The API key, read from the environment variable `apiKeyEnv`; never from a flag. */
  apiKey?: string
  /** The variable the key came from, if any. */
  apiKeyEnv?: string
  /** The most model requests of the turn. */
  maxSteps: number
  /** The system prompt, if any. */
  system?: string
  /** The request: the positional words joined by spaces, or `{ stdin: true }` for `-`. */
  prompt: string | { stdin: true }
}

/** The default of `--max-steps`. */
export const DEFAULT_AGENT_MAX_STEPS = 32

/** Where `dsh-bash agent` looks when a flag is absent (first non-empty variable wins). */
export const AGENT_ENV = {
  baseUrl: ['DSH_MODEL_BASE_URL', 'OPENAI_BASE_URL'],
  model: ['DSH_MODEL', 'OPENAI_MODEL'],
  apiKey: ['DSH_MODEL_API_KEY', 'OPENAI_API_KEY'],
} as const

const common = {
  workdir: { type: 'string' },
  executor: { type: 'string' },
  'executor-config': { type: 'string' },
  policy: { type: 'string' },
  'keep-env': { type: 'string', multiple: true },
  ...executorFlagSpec,
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies FlagSpec

/** What a command's flags asked for instead of running: its help, or the version. */
export type Instead = 'help' | 'version'

function instead(values: { help?: boolean; version?: boolean }): Instead | undefined {
  return values.help ? 'help' : values.version ? 'version' : undefined
}

function parseFlags<S extends NonNullable<FlagSpec>>(command: string, args: string[], options: S) {
  return parseCommandLine(command, args, options, false).values
}


/** `--http HOST:PORT` → host and port (0 picks a free port). IPv6 hosts in brackets: `[::1]:8080`. */
export function parseHostPort(value: string): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(value)
  const port = match ? Number(match[2]) : NaN
  if (!match || port > 65535) throw new UsageError(`--http: expected HOST:PORT, got ${JSON.stringify(value)}`)
  const host = match[1].startsWith('[') ? match[1].slice(1, -1) : match[1]
  return { host, port }
}

function parseCommon(values: Record<string, unknown>): CommonOptions {
  const executor = (values.executor as string | undefined) ?? 'local'
  if (!(EXECUTORS as readonly string[]).includes(executor)) {
    throw new UsageError(`--executor: expected one of ${EXECUTORS.join(', ')}, got ${JSON.stringify(executor)}${didYouMean(executor, EXECUTORS)}`)
  }
  const options: CommonOptions = {
    executor: executor as ExecutorKind,
    executorConfig: parseExecutorConfig(values['executor-config'] as string | undefined),
  }
  const workdir = values.workdir as string | undefined
  if (workdir === '') throw new UsageError('--workdir: expected a directory, got ""')
  if (executorKind(executor as ExecutorKind).workdir === 'remote') {
    // A remote workspace is a path over there: it cannot be checked here, and local paths (this
    // directory, a client's roots) mean nothing on the remote host.
    const remote = workdir ?? options.executorConfig.cwd
    if (typeof remote !== 'string' || !remote.startsWith('/')) {
      throw new UsageError(
        workdir === undefined
          ? `--workdir: required with --executor ${executor} (an absolute directory on the remote host)`
          : `--workdir: expected an absolute directory on the remote host, got ${JSON.stringify(workdir)}`,
      )
    }
    options.workdir = remote
  } else if (workdir !== undefined) {
    options.workdir = resolve(workdir)
    if (!isDirectory(options.workdir)) throw new UsageError(`--workdir: no such directory ${JSON.stringify(workdir)}`)
  }
  const policy = values.policy as string | undefined
  if (policy !== undefined) options.policy = fileFlag('--policy', policy)
  applyExecutorFlags(executor as ExecutorKind, values, options.executorConfig, options.workdir)
  const keep = (values['keep-env'] as string[] | undefined) ?? []
  if (keep.length > 0) {
    for (const name of keep) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--keep-env: expected the name of an environment variable, got ${JSON.stringify(name)}`)
    }
    // Kept by name on top of the executor's list (`!NAME`: bash-kit env.ts), wherever it applies it.
    const patterns = (options.executorConfig.secretEnvPatterns as string[] | undefined) ?? DEFAULT_SECRET_PATTERNS
    options.executorConfig.secretEnvPatterns = [...patterns, ...keep.map((name) => `!${name}`)]
  }
  return options
}

/** `--executor-config` is a JSON object, or `@FILE` naming a JSON file. */
function parseExecutorConfig(value: string | undefined): Record<string, unknown> {
  if (value === undefined) return {}
  let text = value
  if (value.startsWith('@')) {
    const path = fileFlag('--executor-config', value.slice(1))
    try {
      text = readFileSync(path, 'utf8')
    } catch (error) {
      throw new UsageError(`--executor-config: cannot read ${JSON.stringify(value.slice(1))}: ${(error as Error).message}`)
    }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new UsageError(`--executor-config: expected a JSON object or @FILE, got ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}`)
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UsageError('--executor-config: expected a JSON object')
  }
  return parsed as Record<string, unknown>
}

export function parseMcpArgs(args: string[]): McpOptions | Instead {
  const values = parseFlags('mcp', args, {
    ...common,
    http: { type: 'string' },
    // Accepted by the parser only to be refused with the alternatives (token.ts).
    token: { type: 'string' },
    'token-file': { type: 'string' },
    'allow-origin': { type: 'string', multiple: true },
    'yield-after': { type: 'string' },
    'max-result-bytes': { type: 'string' },
    'max-result-lines': { type: 'string' },
    'idle-timeout': { type: 'string' },
    nice: { type: 'string' },
    'audit-log': { type: 'string' },
    'audit-required': { type: 'boolean' },
  })
  const other = instead(values)
  if (other) return other
  const yieldAfterMs = seconds('--yield-after', values['yield-after'], MCP_DEFAULTS.yieldAfterSeconds) * 1000
  const resultBudget = {
    bytes: count('--max-result-bytes', values['max-result-bytes'], MCP_DEFAULTS.maxResultBytes, 200),
    lines: count('--max-result-lines', values['max-result-lines'], MCP_DEFAULTS.maxResultLines, 10),
  }
  const base = parseCommon(values)
  applyLimitDefaults(base.executor, values, base.executorConfig)
  // The invariant (README, "Results and MCP clients"): a result the budget cuts names a file
  // holding the complete stream(s). Whatever the executor keeps beyond the budget would be cut
  // again, so memory keeps no more; and output that would not fit with its markers (bytes or lines,
  // both streams together) spills although memory could hold it (tool-bash's spillThreshold).
  const executorConfig = base.executorConfig
  const threshold = spillThreshold(resultBudget)
  if (executorConfig.maxOutputBytes === undefined) executorConfig.maxOutputBytes = resultBudget.bytes
  if (executorConfig.spillAboveBytes === undefined) executorConfig.spillAboveBytes = threshold.bytes
  if (executorConfig.spillAboveLines === undefined) executorConfig.spillAboveLines = threshold.lines
  const options: McpOptions = {
    ...base,
    allowedOrigins: [],
    yieldAfterMs,
    resultBudget,
    idleTimeoutMs: seconds('--idle-timeout', values['idle-timeout'], MCP_DEFAULTS.idleTimeoutSeconds) * 1000,
    toolBash: { resultBudget, ...(yieldAfterMs > 0 ? { yieldAfterMs } : {}) },
  }
  if (values['idle-timeout'] !== undefined && values.http === undefined) throw new UsageError('--idle-timeout: only used with --http')
  if (values.nice !== undefined) {
    const nice = /^[-+]?\d{1,2}$/.test(values.nice) ? Number(values.nice) : NaN
    if (!(nice >= -20 && nice <= 19)) throw new UsageError(`--nice: expected a whole number from -20 to 19, got ${JSON.stringify(values.nice)}`)
    options.nice = nice
  }
  if (values['audit-log'] !== undefined) {
    if (values['audit-log'] === '') throw new UsageError('--audit-log: expected a file')
    options.auditLog = { file: fileFlag('--audit-log', values['audit-log'], 'file', { mayBeMissing: true }), required: values['audit-required'] === true }
  } else if (values['audit-required']) {
    throw new UsageError('--audit-required: only used with --audit-log FILE')
  }
  if (values.http !== undefined) options.http = parseHostPort(values.http)
  if (values.token !== undefined) refuseTokenFlag()
  if (values['token-file'] !== undefined) {
    if (!options.http) throw new UsageError('--token-file: only used with --http')
    if (values['token-file'] === '') throw new UsageError('--token-file: expected a path')
    options.tokenFile = fileFlag('--token-file', values['token-file'], 'file', { mayBeMissing: true })
    // The server's own secret: no sandboxed command reads it (README, "Secrets").
    if (options.executor === 'sandbox') {
      const config = options.executorConfig
      config.denyRead = [...((config.denyRead as string[] | undefined) ?? []), options.tokenFile]
    }
  }
  for (const origin of values['allow-origin'] ?? []) {
    if (!options.http) throw new UsageError('--allow-origin: only used with --http')
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {
      // Reported below.
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin) {
      throw new UsageError(`--allow-origin: expected an origin like http://localhost:6274, got ${JSON.stringify(origin)}`)
    }
    options.allowedOrigins.push(origin)
  }
  return options
}

/** A number of seconds (0 allowed: off), or the default. */
function seconds(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (/^-\d/.test(value)) throw new UsageError(`${flag}: must not be negative, got ${value} (0 = off)`)
  const parsed = /^\d{1,7}(\.\d{1,3})?$/.test(value) ? Number(value) : NaN
  if (!Number.isFinite(parsed)) throw new UsageError(`${flag}: expected a number of seconds (0 = off), got ${JSON.stringify(value)}`)
  return parsed
}

/** A whole number of at least `min`, or the default. */
function count(flag: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback
  if (/^-\d/.test(value)) throw new UsageError(`${flag}: must not be negative, got ${value} (at least ${min})`)
  const parsed = /^\d{1,9}$/.test(value) ? Number(value) : NaN
  if (!(parsed >= min)) throw new UsageError(`${flag}: expected a whole number of at least ${min}, got ${JSON.stringify(value)}`)
  return parsed
}

export function parseReplArgs(args: string[]): ReplOptions | Instead {
  const values = parseFlags('repl', args, common)
  const other = instead(values)
  if (other) return other
  return parseCommon(values)
}

type Env = Record<string, string | undefined>

/** `dsh-bash reply`: answer a question a server's task waits for (reply-command.ts). */
export interface ReplyOptions {
  /** The question's id; required with `--decline` and when several wait. */
  question?: string
  /** Only list the waiting questions. */
  list: boolean
  /** Decline `question`: nothing is sent. */
  decline: boolean
  /** An MCP HTTP server's URL (`http://HOST:PORT/mcp`), instead of this machine's desks. */
  url?: string
  /** `--token-file` (with `--url`), absolute; else `$DSH_BASH_TOKEN`. */
  tokenFile?: string
}

export function parseReplyArgs(args: string[]): ReplyOptions | Instead {
  const { values, positionals } = parseCommandLine(
    'reply',
    args,
    {
      list: { type: 'boolean' },
      decline: { type: 'boolean' },
      url: { type: 'string' },
      // Accepted by the parser only to be refused with the alternatives (token.ts).
      token: { type: 'string' },
      'token-file': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
    true,
  )
  const other = instead(values)
  if (other) return other
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])} (one question at a time)`, 'reply')
  const options: ReplyOptions = { list: values.list === true, decline: values.decline === true }
  if (positionals[0] !== undefined) options.question = positionals[0]
  if (options.list && (options.decline || options.question !== undefined)) throw new UsageError('--list: lists every waiting question; it takes no question and no --decline', 'reply')
  if (options.decline && options.question === undefined) throw new UsageError('--decline: name the question to decline, e.g. dsh-bash reply --decline QUESTION', 'reply')
  if (values.token !== undefined) refuseTokenFlag()
  if (values.url !== undefined) {
    if (!isHttpUrl(values.url)) throw new UsageError(`--url: expected the server's http(s) URL, e.g. http://127.0.0.1:8765/mcp, got ${JSON.stringify(values.url)}`, 'reply')
    options.url = values.url
  }
  if (values['token-file'] !== undefined) {
    if (options.url === undefined) throw new UsageError('--token-file: only used with --url', 'reply')
    options.tokenFile = fileFlag('--token-file', values['token-file'], 'file', { mayBeMissing: true })
  }
  return options
}

/**
 * `dsh-bash agent [flags] PROMPT`. Flags win over the environment (`AGENT_ENV`). The key is only
 * ever read from a variable (`--api-key-env NAME`), so it never lands in shell history or `ps`.
 */
export function parseAgentArgs(args: string[], env: Env = process.env): AgentCommandOptions | Instead {
  const end = args.indexOf('--')
  const keyFlag = (end < 0 ? args : args.slice(0, end)).find((arg) => /^--api-key(=|$)/.test(arg))
  if (keyFlag !== undefined) {
    throw new UsageError('--api-key: not accepted (a key on the command line ends up in shell history and ps); put it in a variable and name it with --api-key-env', 'agent')
  }
  const { values, positionals } = parseCommandLine(
    'agent',
    args,
    {
      ...common,
      'base-url': { type: 'string' },
      model: { type: 'string' },
      'api-key-env': { type: 'string' },
      'max-steps': { type: 'string' },
      system: { type: 'string' },
    },
    true,
  )
  const other = instead(values)
  if (other) return other
  const options = parseCommon(values)
  applyLimitDefaults(options.executor, values, options.executorConfig)
  const pick = (names: readonly string[]) => {
    for (const name of names) {
      const value = env[name]?.trim()
      if (value) return { value, name }
    }
    return undefined
  }

  const base = values['base-url'] !== undefined ? { value: values['base-url'], name: '--base-url' } : pick(AGENT_ENV.baseUrl)
  if (!base) throw new UsageError(`--base-url: required (or set ${AGENT_ENV.baseUrl.join(' or ')}), e.g. http://127.0.0.1:8000/v1`)
  if (!isHttpUrl(base.value)) throw new UsageError(`${base.name}: expected an http(s) URL such as http://127.0.0.1:8000/v1, got ${JSON.stringify(base.value)}`)

  const model = values.model !== undefined ? values.model.trim() : pick(AGENT_ENV.model)?.value
  if (!model) throw new UsageError(values.model !== undefined ? '--model: expected a model name, got ""' : `--model: required (or set ${AGENT_ENV.model.join(' or ')})`)

  let key: { value: string; name: string } | undefined
  const keyEnv = values['api-key-env']
  if (keyEnv !== undefined) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv)) {
      throw new UsageError(`--api-key-env: expected the name of an environment variable holding the key, got ${JSON.stringify(keyEnv)}`)
    }
    key = pick([keyEnv])
    if (!key) throw new UsageError(`--api-key-env: the variable ${keyEnv} is not set (or empty)`)
  } else {
    key = pick(AGENT_ENV.apiKey)
  }

  let maxSteps = DEFAULT_AGENT_MAX_STEPS
  const steps = values['max-steps']
  if (steps !== undefined) {
    if (/^-\d/.test(steps)) throw new UsageError(`--max-steps: must not be negative, got ${steps}`)
    maxSteps = /^\d{1,6}$/.test(steps) ? Number(steps) : NaN
    if (!(maxSteps >= 1)) throw new UsageError(`--max-steps: expected a positive integer, got ${JSON.stringify(steps)}`)
  }

  const system = values.system
  if (system !== undefined && system.trim() === '') throw new UsageError('--system: expected the text of a system prompt, got ""')

  let prompt: AgentCommandOptions['prompt']
  if (positionals.length === 1 && positionals[0] === '-') prompt = { stdin: true }
  else {
    prompt = positionals.join(' ')
    if (prompt.trim() === '') throw new UsageError('missing PROMPT: the request as words, or - to read it from stdin')
  }

  return {
    ...options,
    baseUrl: base.value,
    model,
    ...(key ? { apiKey: key.value, apiKeyEnv: key.name } : {}),
    maxSteps,
    ...(system !== undefined ? { system } : {}),
    prompt,
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:'
  } catch {
    return false
  }
}
