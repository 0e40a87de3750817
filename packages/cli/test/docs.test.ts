/**
 * docs/tools.md and docs/harness.md are the project's contract: every text in one of their
 * "| exact text | when |" tables is produced here by the code that makes it, and must match.
 *
 * Adding a text: add a row to the document's table and an entry to TEXTS below — the template as
 * the document writes it (`<id>`, `<n>`, … stand for values), the values that fill it in order, and
 * how the code produces that same text. A row without an entry, or an entry without a row, fails.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { noFullOutputError, notInteractiveError, unknownTaskError, type BashRunResult, type BashTask, type BashTaskRead } from '@deepseek-ai/dsh-bash'
import { formatIssues } from '@deepseek-ai/dsh-tools'
import {
  alreadyFinishedText,
  bashParameters,
  checkBashArgs,
  checkOutputArgs,
  checkTaskArgs,
  checkUntil,
  foreignTaskMessage,
  killedText,
  renderNotice,
  renderRange,
  renderRead,
  renderStreams,
  runMarkers,
  sandboxMarkers,
  secretInputErrors,
  startedText,
  statusLine,
  toolBashErrors,
  TYPED_TEXT,
  UntilMatcher,
} from '@deepseek-ai/dsh-tool-bash'
import { TerminalView } from '@deepseek-ai/dsh-bash-kit'
import { parseMcpArgs } from '../src/args.js'
import { MCP_ON_TERMINAL_HINT } from '../src/mcp-command.js'
import { leaveWarning, leavingText } from '../src/repl.js'
import { ROOT } from './helpers.js'

/** The refusals of `ask_user`, as docs/tools.md writes them (their order: echo on, raw mode, unknown, cancelled). */
const SECRET_REFUSALS = [
  'Error: task <id> is not waiting for a secret: its terminal shows what is typed (echo is on); ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent',
  'Error: task <id> is not waiting for a secret: its program reads each key itself (the terminal is in raw mode) and may show it; ask_user works only at a prompt that turned echo off (read -s, sudo, ssh, passwd); nothing was sent',
  "Error: cannot tell whether task <id> would show what is typed: this executor cannot read its terminal's echo setting; ask_user needs a prompt with echo off; nothing was sent",
  "Error: the user's reply for task <id> was cancelled; nothing was sent",
]

interface ExactText {
  /** The text as the document writes it. */
  text: string
  /** The values of its `<placeholders>`, in order. */
  values: (string | number)[]
  /** The same text from the code. */
  produce: () => string | Promise<string>
}

const output = (text: string, extra: object = {}) => ({ text, truncated: false, droppedBytes: 0, ...extra })
const result = (facts: Partial<BashRunResult>): BashRunResult =>
  ({ exitCode: 0, signal: null, timedOut: false, aborted: false, timeoutMs: 120_000, stdout: output(''), stderr: output(''), durationMs: 5, leftoverProcesses: 0, ...facts }) as BashRunResult
const task = (facts: Partial<BashTask>) => ({ id: 'bash-1', status: 'running', exitCode: null, signal: null, ...facts }) as BashTask
const read = (delta: string, facts: Partial<BashTaskRead> = {}) => ({ task: task({}), delta, streams: { stdout: delta, stderr: '' }, screen: false, lossy: false, spillPaths: {}, ...facts }) as BashTaskRead

/** The closing line of a range read of `size` bytes, `complete` or not, from `offset`, at most `bytes`. */
const rangeLine = (size: number, complete: boolean, offset: number, bytes: number) => {
  const data = Buffer.from('x'.repeat(size)).subarray(offset, offset + bytes)
  const read = { id: 'bash-1', stream: 'stdout', size, complete, data, task: task({ status: complete ? 'completed' : 'running', exitCode: complete ? 0 : null }) }
  return lines(renderRange(read as never, offset, { bytes, lines: 1000 }).text).at(-1)!
}
const RANGE_LINES: ExactText[] = [
  { text: '[bytes <from>-<to> of <size>, <stream> of <id>; next offset: <next>]', values: [0, 9, 30, 'stdout', 'bash-1', 10], produce: () => rangeLine(30, true, 0, 10) },
  { text: '[bytes <from>-<to> of <size>, <stream> of <id>; end of output]', values: [20, 29, 30, 'stdout', 'bash-1'], produce: () => rangeLine(30, true, 20, 10) },
  { text: '[bytes <from>-<to> of <size> so far, <stream> of <id>; the task still runs]', values: [20, 29, 30, 'stdout', 'bash-1'], produce: () => rangeLine(30, false, 20, 10) },
  { text: '[bytes from <from>: none of <size>, <stream> of <id>]', values: [40, 30, 'stdout', 'bash-1'], produce: () => rangeLine(30, true, 40, 10) },
]
const lines = (text: string) => text.split('\n')
const error = (fn: () => unknown) => {
  try {
    fn()
  } catch (e) {
    return `Error: ${(e as Error).message}`
  }
  throw new Error('expected a throw')
}
const usage = (fn: () => unknown) => error(fn).replace(/^Error: /, 'dsh-bash: ')

const TOOLS: ExactText[] = [
  { text: '[stopped <n> leftover process(es); use run_in_background for servers and watchers]', values: [2], produce: () => runMarkers(result({ leftoverProcesses: 2 }))[0] },
  { text: '[sandbox: file access denied under <mode> mode]', values: ['read-only'], produce: () => sandboxMarkers({ accessDenied: true, mode: 'read-only' } as never)[0] },
  {
    text: '[sandbox: to retry with wider access, call bash again with sandbox_permissions: "<mode>" and a justification]',
    values: ['workspace-write'],
    produce: () => sandboxMarkers({ accessDenied: true, mode: 'read-only', escalations: ['workspace-write'] } as never, { escalationHint: true })[1],
  },
  { text: '[timed out after <ms>ms]', values: [300], produce: () => runMarkers(result({ timedOut: true, timeoutMs: 300, signal: 'SIGTERM' }))[0] },
  { text: '[killed by signal: <SIGNAME>]', values: ['SIGKILL'], produce: () => runMarkers(result({ signal: 'SIGKILL', exitCode: null }))[0] },
  { text: '[exit code: <n>]', values: [3], produce: () => runMarkers(result({ exitCode: 3 }))[0] },
  {
    text: '[still running after <N>s; continues as background task <id>: read it with bash_output, stop it with bash_kill]',
    values: [50, 'bash-4'],
    produce: () => runMarkers(result({ yieldedTo: 'bash-4', durationMs: 50_400 }))[0],
  },
  { text: '[output truncated; full output: <path>]', values: ['/tmp/x/out.log'], produce: () => lines(renderStreams(result({ stdout: output('tail\n', { truncated: true, spillPath: '/tmp/x/out.log' }) }))).at(-1)! },
  { text: '[output truncated; full output: (unavailable)]', values: [], produce: () => lines(renderStreams(result({ stdout: output('tail\n', { truncated: true }) }))).at(-1)! },
  { text: 'started background task <id>', values: ['bash-1'], produce: () => startedText('bash-1') },
  { text: '(no new output)', values: [], produce: () => lines(renderRead(read('')))[0] },
  { text: '[some output was dropped from memory; full output: <path>]', values: ['/tmp/x/out.log'], produce: () => lines(renderRead(read('x\n', { lossy: true, spillPaths: { stdout: '/tmp/x/out.log' } })))[1] },
  { text: '[status: running]', values: [], produce: () => statusLine(task({})) },
  { text: '[status: completed, exit code: <n>]', values: [0], produce: () => statusLine(task({ status: 'completed', exitCode: 0 })) },
  { text: '[status: killed by <SIGNAME>]', values: ['SIGTERM'], produce: () => statusLine(task({ status: 'killed', signal: 'SIGTERM' })) },
  { text: '[status: killed]', values: [], produce: () => statusLine(task({ status: 'killed' })) },
  { text: '[screen <cols>x<rows>]', values: [120, 40], produce: async () => {
    const view = new TerminalView()
    try {
      view.write('\x1b[?1049h\x1b[Hfull screen')
      return lines(view.screen())[0]
    } finally {
      view.dispose()
    }
  } },
  { text: 'killed background task <id>', values: ['bash-1'], produce: () => killedText('bash-1') },
  { text: 'task <id> had already finished', values: ['bash-1'], produce: () => alreadyFinishedText('bash-1') },
  { text: '[the user typed a reply; it was sent to the terminal and is not shown]', values: [], produce: () => TYPED_TEXT },
  {
    text: 'background bash task <id> finished <status>. Read its output with bash_output.',
    values: ['bash-2', '[status: completed, exit code: 0]'],
    produce: () => renderNotice(task({ id: 'bash-2', status: 'completed', exitCode: 0 })),
  },
  { text: 'Error: invalid command: expected a non-empty string', values: [], produce: () => error(() => checkBashArgs({ command: ' ', description: 'x' } as never)) },
  { text: 'Error: invalid description: expected a non-empty string', values: [], produce: () => error(() => checkBashArgs({ command: 'x', description: ' ' } as never)) },
  { text: 'Error: invalid timeoutMs: expected a positive number, got <value>', values: [-5], produce: () => error(() => checkBashArgs({ command: 'x', description: 'x', timeoutMs: -5 } as never)) },
  { text: 'Error: invalid task_id: expected a non-empty string', values: [], produce: () => error(() => checkTaskArgs({ task_id: '' })) },
  {
    text: 'Error: invalid interactive: interactive: true needs run_in_background: true (an interactive command runs as a background task; type into it with bash_input)',
    values: [],
    produce: () => error(() => checkBashArgs({ command: 'x', description: 'x', interactive: true } as never)),
  },
  { text: 'Error: unknown bash task "<id>"', values: ['bash-99'], produce: () => `Error: ${unknownTaskError('bash-99').message}` },
  { text: 'Error: task <id> belongs to another session', values: ['bash-1'], produce: () => `Error: ${foreignTaskMessage('bash-1')}` },
  { text: 'Error: task <id> does not take input; start it with interactive: true', values: ['bash-1'], produce: () => `Error: ${notInteractiveError('bash-1').message}` },
  { text: 'Error: the user declined to type a reply for task <id>; nothing was sent', values: ['bash-1'], produce: () => `Error: ${secretInputErrors.declined('bash-1').message}` },
  {
    text: 'Error: no one can type a reply for task <id>: this front end cannot ask the user for input; nothing was sent',
    values: ['bash-1'],
    produce: () => `Error: ${secretInputErrors.unavailable('bash-1').message}`,
  },
  ...(['echoOn', 'rawMode', 'echoUnknown', 'cancelled'] as const).map((kind, i) => ({
    text: SECRET_REFUSALS[i],
    values: ['bash-1'],
    produce: () => `Error: ${secretInputErrors[kind]('bash-1').message}`,
  })),
  { text: 'Error: the wait for task <id> was cancelled; what it read comes with the next bash_output of that task', values: ['bash-1'], produce: () => `Error: ${toolBashErrors.waitCancelled('bash-1').message}` },
  { text: 'Error: invalid wait_ms: expected a number of ms from 0 to 30000, got <value>', values: [40000], produce: () => error(() => checkOutputArgs({ task_id: 'bash-1', wait_ms: 40000 })) },
  { text: 'Error: invalid until: it needs wait_ms, how long to wait for a matching line (up to 30000)', values: [], produce: () => error(() => checkOutputArgs({ task_id: 'bash-1', until: 'x' })) },
  { text: 'Error: invalid until: expected a non-empty regular expression', values: [], produce: () => error(() => checkUntil('')) },
  { text: 'Error: invalid until: not an ECMAScript regular expression (<reason>)', values: ['Invalid regular expression: /(/: Unterminated group'], produce: () => error(() => checkUntil('(')) },
  {
    text: "Error: invalid until: matching it took longer than 1000 ms on the task's output; use a simpler expression",
    values: [],
    produce: async () => {
      const matcher = new UntilMatcher()
      try {
        await matcher.firstMatch('^(a+)+$', [`${'a'.repeat(40)}!`])
        return 'matched'
      } catch (e) {
        return `Error: ${(e as Error).message}`
      } finally {
        matcher.dispose()
      }
    },
  },
  { text: 'Error: invalid offset: expected a whole number of bytes from 0, got <value>', values: [-1], produce: () => error(() => checkOutputArgs({ task_id: 'bash-1', offset: -1 })) },
  { text: 'Error: invalid offset: a range read does not wait; leave out wait_ms and until', values: [], produce: () => error(() => checkOutputArgs({ task_id: 'bash-1', offset: 0, wait_ms: 10 })) },
  { text: 'Error: no complete output of <what> is kept for this session', values: ['"bash-9" (stdout)'], produce: () => `Error: ${noFullOutputError('"bash-9" (stdout)').message}` },
  ...RANGE_LINES,
]

const HARNESS: ExactText[] = [
  { text: 'Error: unknown tool "<name>"', values: ['bsh'], produce: () => pipeline('bsh') },
  {
    text: 'Error: invalid arguments: missing required property "<name>"',
    values: ['command'],
    produce: () => `Error: invalid arguments: ${formatIssues(bashParameters.safeParse({ description: 'x' }).error!.issues, { description: 'x' })}`,
  },
  {
    text: 'Error: invalid arguments: "<name>" must be a string',
    values: ['command'],
    produce: () => `Error: invalid arguments: ${formatIssues(bashParameters.safeParse({ command: 1, description: 'x' }).error!.issues, { command: 1, description: 'x' })}`,
  },
  { text: 'Error: denied: approval required but no approval service is available', values: [], produce: () => pipeline('probe') },
  { text: 'Error: denied: the call is too long to show for approval (<n> characters, at most 8000): split it into shorter calls', values: [8107], produce: () => tooLongToShow() },
  {
    text: 'dsh-bash: serving MCP on stdin/stdout for an MCP client (JSON-RPC, not typed commands); to try the tools by hand run "dsh-bash repl"; Ctrl-C stops',
    values: [],
    produce: () => `dsh-bash: ${MCP_ON_TERMINAL_HINT}`,
  },
  {
    text: 'dsh-bash: --<flag>: given twice (it takes one value; the command line must say which)',
    values: ['executor'],
    produce: () => usage(() => parseMcpArgs(['--executor', 'local', '--executor', 'sandbox'])),
  },
  { text: 'dsh-bash: unknown flag --<flag> (did you mean --<flag>?)', values: ['workdri', 'workdir'], produce: () => usage(() => parseMcpArgs(['--workdri', '/tmp'])) },
  { text: 'dsh-bash: --<flag>: "<path>" is a directory, expected a file', values: ['policy', '/'], produce: () => usage(() => parseMcpArgs(['--policy', '/'])) },
  {
    text: 'dsh-bash: --<flag>: must not be negative, got <value> (0 = off)',
    values: ['yield-after', -1],
    produce: () => usage(() => parseMcpArgs(['--yield-after', '-1'])),
  },
  {
    text: '(Ctrl-C again or Ctrl-D to leave; it kills <tasks>)',
    values: ['1 running background task(s): bash-1 (sleep 100)'],
    produce: () => leaveWarning([{ id: 'bash-1', command: 'sleep 100' }]),
  },
  { text: 'dsh-bash: killing <tasks>', values: ['1 running background task(s): bash-1 (sleep 100)'], produce: () => leavingText([{ id: 'bash-1', command: 'sleep 100' }]) },
]

/** The text the real pipeline answers for a call of `name`: a tool `probe` exists, and every call is asked about (no approval service). */
async function pipeline(name: string): Promise<string> {
  const { Context } = await import('cordis')
  const { ToolRegistry } = await import('@deepseek-ai/dsh-tools')
  const { z } = await import('zod')
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  await ctx.lifecycle.flush()
  try {
    ctx.tools.register({ name: 'probe', description: 'probe', parameters: z.object({}), execute: () => 'ran' })
    ctx.tools.onPreExecute(() => ({ kind: 'ask' }))
    const answer = await ctx.tools.execute({ callId: '1', name, arguments: {} })
    return (answer.content[0] as { text: string }).text
  } finally {
    await ctx.stop()
  }
}

/** The text the pipeline answers when a person could approve but the call's page is longer than 8,000 characters. */
async function tooLongToShow(): Promise<string> {
  const { Context } = await import('cordis')
  const { ToolRegistry } = await import('@deepseek-ai/dsh-tools')
  const { z } = await import('zod')
  const ctx = new Context()
  ctx.plugin(ToolRegistry)
  await ctx.lifecycle.flush()
  try {
    let asked = false
    ctx.set('approval', { request: async () => ((asked = true), 'allowed-once' as const) })
    ctx.tools.register({ name: 'probe', description: 'probe', parameters: z.object({ command: z.string() }), execute: () => 'ran' })
    ctx.tools.onPreExecute(() => ({ kind: 'ask' }))
    const answer = await ctx.tools.execute({ callId: '1', name: 'probe', arguments: { command: 'x'.repeat(8100) } })
    return asked ? 'a person was asked' : (answer.content[0] as { text: string }).text
  } finally {
    await ctx.stop()
  }
}

/** The template with its placeholders replaced by `values`, in order. */
function fill(template: string, values: (string | number)[]): string {
  const queue = [...values]
  const filled = template.replace(/<[A-Za-z][A-Za-z ]*>/g, (placeholder) => {
    if (queue.length === 0) throw new Error(`no value for ${placeholder} in ${template}`)
    return String(queue.shift())
  })
  if (queue.length > 0) throw new Error(`${queue.length} value(s) left over for ${template}`)
  return filled
}

/** The first code span of the first cell of each row of every "| exact text | when |" table. */
function exactTexts(doc: string): string[] {
  const texts: string[] = []
  let inTable = false
  for (const line of doc.split('\n')) {
    if (/^\|\s*exact text\s*\|\s*when\s*\|\s*$/.test(line)) {
      inTable = true
      continue
    }
    if (!line.startsWith('|')) {
      inTable = false
      continue
    }
    if (!inTable || /^\|[-\s|]+\|$/.test(line)) continue
    const span = /^\|\s*`([^`]+)`/.exec(line)
    if (!span) throw new Error(`an exact text row without a code span: ${line}`)
    texts.push(span[1])
  }
  return texts
}

const docs = { 'docs/tools.md': TOOLS, 'docs/harness.md': HARNESS }

describe.each(Object.entries(docs))('%s: every exact text matches the code', (file, entries) => {
  const doc = readFileSync(join(ROOT, file), 'utf8')
  const rows = exactTexts(doc)

  it('every row of its exact-text tables has a check here, and every check a row', () => {
    expect(rows.length).toBeGreaterThan(5)
    expect([...rows].sort()).toEqual(entries.map((entry) => entry.text).sort())
  })

  it.each(entries.map((entry) => [entry.text, entry] as const))('%s', async (_text, entry) => {
    expect(await entry.produce()).toBe(fill(entry.text, entry.values))
  })
})

describe('documents stay inside the repository', () => {
  const markdown = (dir: string): string[] =>
    readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) return []
      const path = join(dir, entry.name)
      if (entry.isDirectory()) return markdown(path)
      return entry.name.endsWith('.md') ? [path] : []
    })
  const files = ['README.md', ...markdown('docs'), ...markdown('packages'), ...markdown('bench')]

  it.each(files)('%s: no link or path leaves the repository, no bare "issue N" reference', (file) => {
    const text = readFileSync(join(ROOT, file), 'utf8')
    expect(text).not.toMatch(/\.\.\/shared\/|shared\/spec\//)
    // A relative link must land inside the repository.
    for (const [, target] of text.matchAll(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g)) {
      const resolved = join(ROOT, file, '..', target.split('#')[0])
      expect(resolved.startsWith(ROOT), `${file} links to ${target}`).toBe(true)
    }
    expect(text.match(/\bissues? #?\d+/gi) ?? [], 'an "issue N" reference: link the document section instead, or drop it').toEqual([])
  })
})
