import { createInterface } from 'node:readline'
import { answerQuestion, type DeskConnection, type DeskQuestion, httpDesk, listQuestions, localDesks } from '@deepseek-ai/dsh-mcp/reply'
import { visibleText } from '@deepseek-ai/dsh-tools'
import type { ReplyOptions } from './args.js'
import { StartupError, UsageError } from './errors.js'
import { LineReader } from './lines.js'
import { MutableOutput, readHiddenLine, secretQuestion } from './secret.js'
import { configuredToken } from './token.js'

/** What `dsh-bash reply` prints when a reply went to the task (exact text: the CLI README). */
export const sentText = (taskId: string) => `sent to task ${taskId}; its program has it now (the model reads only what that program prints)`
/** … when the person declined. */
export const declinedText = (taskId: string) => `declined: nothing was sent to task ${taskId}`
/** … when nothing waits. */
export const NOTHING_WAITS = 'no question waits for a reply'
/** … when stdin cannot read a reply without echo. */
export const NOT_A_TERMINAL = 'dsh-bash reply reads the reply from a terminal, without echo: its input is not a terminal'

interface Io {
  input: NodeJS.ReadStream
  output: NodeJS.WriteStream
  err: NodeJS.WritableStream
}

/**
 * `dsh-bash reply`: lists the questions this user's servers (or one HTTP server) wait for, reads
 * the reply from this terminal without echo and sends it. Resolves with the exit code: 0 sent,
 * declined or listed; 1 nothing sent. Never prints a reply.
 */
export async function runReply(options: ReplyOptions, io: Io = { input: process.stdin, output: process.stdout, err: process.stderr }): Promise<number> {
  const say = (text: string) => void io.output.write(`${text}\n`)
  const warn = (text: string) => void io.err.write(`dsh-bash: ${text}\n`)
  let desks: DeskConnection[]
  if (options.url !== undefined) {
    const token = configuredToken(options.tokenFile)
    if (!token) throw new StartupError(`--url: the server's bearer token is needed: --token-file PATH or $DSH_BASH_TOKEN`)
    desks = [httpDesk(options.url, token.token)]
  } else {
    const skipped: string[] = []
    try {
      desks = localDesks(undefined, skipped)
    } catch (error) {
      throw new StartupError((error as Error).message)
    }
    for (const reason of skipped) warn(reason)
  }
  const questions: DeskQuestion[] = []
  const failures: string[] = []
  for (const desk of desks) {
    try {
      questions.push(...(await listQuestions(desk)))
    } catch (error) {
      failures.push((error as Error).message)
    }
  }
  // A desk that refuses says why (a command of a server asking, another user): that is the answer.
  for (const failure of failures) warn(failure)
  if (failures.length > 0 && failures.length === desks.length) return 1

  if (options.list) {
    say(questions.length === 0 ? NOTHING_WAITS : questions.map(describe).join('\n'))
    return 0
  }
  let question: DeskQuestion | undefined
  if (options.question !== undefined) {
    question = questions.find((q) => q.id === options.question)
    if (!question) {
      warn(`no question ${JSON.stringify(options.question)} waits for a reply${questions.length > 0 ? `; waiting: ${questions.map((q) => q.id).join(', ')}` : ''}`)
      return 1
    }
  } else if (questions.length === 1) {
    question = questions[0]
  } else if (questions.length === 0) {
    warn(NOTHING_WAITS)
    return 1
  } else {
    say(questions.map(describe).join('\n'))
    throw new UsageError(`${questions.length} questions wait: name one, e.g. dsh-bash reply ${questions[0].id}`, 'reply')
  }

  if (options.decline) return decline(question, say, warn)
  if (!io.input.isTTY) throw new StartupError(NOT_A_TERMINAL)
  say(`question ${question.id} (${question.desk.label}):`)
  io.output.write(secretQuestion(question))
  const reply = await readReply(io)
  io.output.write('\n')
  if (reply === null) {
    warn(`cancelled: nothing was sent; question ${question.id} still waits`)
    return 1
  }
  if (reply === '') return decline(question, say, warn)
  try {
    const answer = await answerQuestion(question.desk, question.id, { action: 'send', reply })
    say(sentText(answer.taskId))
    return 0
  } catch (error) {
    warn(`not sent: ${(error as Error).message}`)
    return 1
  }
}

async function decline(question: DeskQuestion, say: (text: string) => void, warn: (text: string) => void): Promise<number> {
  try {
    const answer = await answerQuestion(question.desk, question.id, { action: 'decline' })
    say(declinedText(answer.taskId))
    return 0
  } catch (error) {
    warn((error as Error).message)
    return 1
  }
}

/** One line per question and what it is for; model text through `visibleText`. */
function describe(question: DeskQuestion): string {
  return [
    `${question.id}  task ${question.taskId} (${question.desk.label}), waiting ${seconds(question.waitedMs)}, withdrawn in ${seconds(question.leftMs)}`,
    `  asks: ${visibleText(question.prompt)}`,
    `  goes to this program, which the model started: ${visibleText(question.command)}`,
  ].join('\n')
}

const seconds = (ms: number) => `${Math.round(ms / 1000)}s`

/** One line read without echo (the REPL's hidden line); null when the input ended or Ctrl-C. */
async function readReply(io: Io): Promise<string | null> {
  const output = new MutableOutput(io.output)
  const rl = createInterface({ input: io.input, output, terminal: true })
  const reader = new LineReader(rl)
  rl.on('SIGINT', () => rl.close())
  try {
    return await readHiddenLine(reader, rl, output)
  } finally {
    rl.close()
  }
}
