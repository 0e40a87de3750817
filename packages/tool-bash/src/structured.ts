import { type BashExecSpec, type BashRunResult, type BashTask, fullOutputUri, type OutputStream, runEndStatus, taskEndStatus } from '@deepseek-ai/dsh-bash'
import type { ToolAnnotations, ToolResult } from '@deepseek-ai/dsh-tools'
import { z } from 'zod'
import type { Rendered } from './render.js'

/**
 * The facts of every result of the four tools as data (MCP `structuredContent`): what the text's
 * markers say, for programs, which must not parse the text (output can imitate it; lookalike.ts).
 * Built from the executor's facts, never read back from the text.
 */

export const BASH_STATUSES = ['completed', 'failed', 'timed_out', 'killed', 'running', 'yielded', 'error'] as const
export type BashStatus = (typeof BASH_STATUSES)[number]

const uri = z.string().nullable()

/** One schema for `bash`, `bash_output`, `bash_kill` and `bash_input`. */
export const bashOutputSchema = z.object({
  status: z
    .enum(BASH_STATUSES)
    .describe(
      'completed: exited 0; failed: exited non-zero; timed_out: its timeout fired; killed: a signal ended it; running: a background task still runs; yielded: a foreground command went on as background task taskId; error: the tool refused or failed (see code)',
    ),
  exitCode: z.number().int().nullable().describe('the exit code once known, else null'),
  signal: z.string().nullable().describe('the signal that ended it (SIGTERM, …), else null'),
  taskId: z.string().nullable().describe('the background task the result is about, else null'),
  truncated: z.boolean().describe('the text holds only part of the output'),
  fullOutput: uri.describe('a URI (dsh-bash://output/<id>/<stream>) of the complete output of a cut stream, while it is kept; else null'),
  fullOutputs: z.object({ stdout: uri, stderr: uri }).describe('the URIs of each stream whose complete output is kept, else null'),
  durationMs: z.number().optional().describe('how long the command ran (so far), when known'),
  workdir: z.string().optional().describe('the directory the command runs in (a bash call, a task), on the machine that runs it'),
  sandboxMode: z.string().nullable().optional().describe('the sandbox mode a bash call runs under; null when the executor does not confine'),
  outputBytes: z
    .object({ stdout: z.number().int(), stderr: z.number().int() })
    .optional()
    .describe('bytes the command printed per stream: all of a foreground run (however much the text shows)'),
  code: z.string().nullable().optional().describe('status error: the stable error code (DSH_…) when there is one'),
  cpuMs: z.number().optional().describe('CPU time (user + system) of all the command\'s processes together, in ms, once it ended, where the executor measures it'),
  peakMemoryBytes: z.number().optional().describe('the highest memory use of the command\'s processes together, in bytes, once it ended, where the executor measures it'),
  limitReached: z
    .object({
      memoryBytes: z.number().optional().describe('the memory limit its processes were killed at'),
      processes: z.number().optional().describe('the process limit at which forks were refused'),
    })
    .optional()
    .describe('the limits the command reached (the [killed: memory limit …] and [process limit … reached] markers); absent when none'),
  range: z
    .object({ offset: z.number().int(), length: z.number().int(), size: z.number().int(), complete: z.boolean() })
    .optional()
    .describe('a range read: the bytes returned and the size of the complete output (final when complete)'),
})

export type BashStructured = z.output<typeof bashOutputSchema>

/** The tools' annotations, set truthfully (they are hints to clients about what to ask the user). */
export const BASH_ANNOTATIONS: Readonly<Record<'bash' | 'bash_output' | 'bash_kill' | 'bash_input', ToolAnnotations>> = Object.freeze({
  bash: { title: 'Run a bash command', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  // Reading consumes what was read (the next read starts after it) but changes nothing else.
  bash_output: { title: "Read a background task's output", readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  bash_kill: { title: 'Stop a background task', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  // Keys typed into a shell or a REPL can do whatever a command can.
  bash_input: { title: 'Type into an interactive task', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
})

const noOutputs = () => ({ stdout: null, stderr: null })

/** The facts of a result the tools did not build: an error (a refusal, a failure); `code` from `meta.code`. */
export function errorStructure(result: ToolResult): BashStructured {
  const code = result.meta?.code
  return {
    status: 'error',
    exitCode: null,
    signal: null,
    taskId: null,
    truncated: false,
    fullOutput: null,
    fullOutputs: noOutputs(),
    code: typeof code === 'string' ? code : null,
  }
}

/** URIs of the streams that have a kept complete copy, and the first cut one. */
function outputs(id: string | undefined, kept: { stdout?: string; stderr?: string }, cut: Rendered['cut']) {
  const of = (stream: OutputStream) => (id !== undefined && kept[stream] !== undefined ? fullOutputUri(id, stream) : null)
  const fullOutputs = { stdout: of('stdout'), stderr: of('stderr') }
  const fullOutput = (cut.stdout ? fullOutputs.stdout : null) ?? (cut.stderr ? fullOutputs.stderr : null)
  return { truncated: cut.stdout || cut.stderr, fullOutput, fullOutputs }
}

/** Where and how a bash call's command runs: from the resolved spec (never the text). */
export function launchFacts(spec: Pick<BashExecSpec, 'workdir' | 'sandboxMode'>): Pick<BashStructured, 'workdir' | 'sandboxMode'> {
  return { workdir: spec.workdir, sandboxMode: spec.sandboxMode ?? null }
}

/** What the command used and the limits it reached, each only where the executor has it (see ResourceFacts). */
function usage(facts: Pick<BashRunResult, 'cpuMs' | 'peakMemoryBytes' | 'limitReached'>): Pick<BashStructured, 'cpuMs' | 'peakMemoryBytes' | 'limitReached'> {
  return {
    ...(facts.cpuMs !== undefined ? { cpuMs: facts.cpuMs } : {}),
    ...(facts.peakMemoryBytes !== undefined ? { peakMemoryBytes: facts.peakMemoryBytes } : {}),
    ...(facts.limitReached !== undefined ? { limitReached: { ...facts.limitReached } } : {}),
  }
}

/** A foreground run's facts. */
export function runStructure(result: BashRunResult, rendered: Rendered): BashStructured {
  const streams = outputs(result.id, { stdout: result.stdout.spillPath, stderr: result.stderr.spillPath }, rendered.cut)
  const outputBytes = { stdout: result.stdout.totalBytes, stderr: result.stderr.totalBytes }
  const facts = { exitCode: result.exitCode, signal: result.signal, durationMs: result.durationMs, outputBytes, ...streams, ...usage(result) }
  if (result.yieldedTo !== undefined) return { ...facts, status: 'yielded', taskId: result.yieldedTo }
  return { ...facts, status: runEndStatus(result), taskId: null }
}

/** A task's status in the schema's terms (the seam's `taskEndStatus`): a task the executor ended for its timeout (a yielded run) timed out. */
export function taskStatus(task: Pick<BashTask, 'status' | 'exitCode' | 'reason'>): BashStatus {
  return taskEndStatus(task)
}

function taskDuration(task: Pick<BashTask, 'startedAt' | 'endedAt'>): number {
  return Math.max(0, (task.endedAt ?? Date.now()) - task.startedAt)
}

/** A task's facts (after a read, a start, a kill). */
export function taskStructure(task: BashTask, kept: { stdout?: string; stderr?: string } = {}, cut: Rendered['cut'] = { stdout: false, stderr: false }): BashStructured {
  return {
    status: taskStatus(task),
    exitCode: task.exitCode,
    signal: task.signal,
    taskId: task.id,
    durationMs: taskDuration(task),
    workdir: task.workdir,
    ...outputs(task.id, kept, cut),
    ...usage(task),
  }
}
