import { spawn as spawnChild } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { MAIN, waitFor } from './helpers.js'
import { startTtyRepl as startTty } from './tty.js'

const startTtyRepl = (dir: string) => startTty(dir, [SECRET])

const SECRET = 'secret'
const PASSWORD_TASK = JSON.stringify({
  command: "read -s -p 'Password: ' p; echo; echo ${#p}",
  description: 'Ask for a password',
  run_in_background: true,
  interactive: true,
})

let dir: string
beforeAll(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'dsh-e2e-typed-')))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('dsh-bash repl on a terminal: replies typed without echo', () => {
  let repl: ReturnType<typeof startTtyRepl> | undefined
  afterEach(async () => {
    if (repl) {
      repl.term.write(':quit\r')
      await Promise.race([repl.exited, new Promise((r) => setTimeout(r, 5000))])
      try {
        repl.term.kill('SIGKILL')
      } catch {
        // Already gone.
      }
    }
    repl = undefined
  })

  it(':type sends a line the terminal never shows; the task reads it (length 6) and nothing prints it', async () => {
    repl = startTtyRepl(dir)
    await waitFor('the prompt', () => repl!.all().includes('dsh-bash> '))
    // The control: what a person types at the prompt is echoed (so the check below can fail).
    await repl.type(':tasks\r', '(no background tasks)')
    expect(repl.all()).toContain(':tasks')
    await repl.type(`:call bash ${PASSWORD_TASK}\r`, /bash-1/)
    // As a person does: wait for the prompt (typed ahead, the reply would be echoed: read -s turns the echo off only when it starts).
    await waitFor('the password prompt', async () => (await repl!.type(':output bash-1\r', '[status:')).includes('Password:'))
    // Ctrl-C while typing cancels: nothing is sent, the echo is back, the next line is a command again.
    await repl.type(':type bash-1\r', 'reply for bash-1 (not shown): ')
    await repl.type('abc\x03', 'nothing was sent to bash-1')
    await repl.type(':tasks\r', /bash-1 +running/)
    expect(repl.all()).toMatch(/dsh-bash> (\x1b\[\d+G)?:tasks[\s\S]*bash-1 +running/)
    await repl.type(':type bash-1\r', 'reply for bash-1 (not shown): ')
    await repl.type(`${SECRET}\r`, 'sent your reply to bash-1')
    const read = await waitFor('the task to end', async () => {
      const text = await repl!.type(':output bash-1\r', '[status:')
      return text.includes('[status: completed') && text
    })
    expect(read).toMatch(/^6\r?$/m)
    // Arrow-up walks the history: the reply is not in it.
    await repl.type('\x1b[A', ':output bash-1')
    await repl.type('\x1b[A', ':type bash-1')
    await repl.type('\x15', '') // Ctrl-U clears the line
    expect(repl.all()).not.toContain(SECRET)
  })

  it('bash_input {ask_user}: the REPL asks the person, the model reads only that a reply was typed and the task\'s answer', async () => {
    repl = startTtyRepl(dir)
    await waitFor('the prompt', () => repl!.all().includes('dsh-bash> '))
    // A comment that would clear the line and reverse what follows, were it printed raw.
    const command = "read -s -p 'Password: ' p; echo; echo ${#p} # \u001b[2K\u202Etxet"
    const task = JSON.stringify({ command, description: 'Ask for a password', run_in_background: true, interactive: true })
    const started = await repl.type(`:call bash ${task}\r`, /bash-\d+/)
    const id = /bash-\d+/.exec(started)![0]
    // The model waits for the prompt first (an empty text just reads).
    await waitFor('the password prompt', async () =>
      (await repl!.type(`:call bash_input ${JSON.stringify({ task_id: id, text: '' })}\r`, '[status:')).includes('Password:'),
    )
    const question = await repl.type(`:call bash_input ${JSON.stringify({ task_id: id, ask_user: 'Password for the test' })}\r`, 'an empty line declines: ')
    expect(repl.all()).toContain(`task ${id} needs your reply: Password for the test`)
    // The person is told where the reply goes: the whole command line, escaped (no raw ESC or bidi override reaches the terminal).
    expect(question).toContain("it goes to this program, which the model started: read -s -p 'Password: ' p; echo; echo ${#p} # ␛[2K\\u{202E}txet")
    expect(question).toContain('that program receives what you type and can print it or pass it on; the model reads what it prints')
    expect(question).not.toContain('\u202E')
    const result = await repl.type(`${SECRET}\r`, '[the user typed a reply; it was sent to the terminal and is not shown]')
    const rest = result.includes('[status: completed') ? result : await waitFor('the task to end', async () => {
      const text = await repl!.type(`:output ${id}\r`, '[status:')
      return text.includes('[status: completed') && text
    })
    expect(result + rest).toMatch(/^6\r?$/m)
    expect(repl.all()).not.toContain(SECRET)
  })
})

describe('dsh-bash repl with piped stdin: :type reads a line plainly and never prints it', () => {
  it('the reply reaches the task and appears nowhere in the output', async () => {
    const proc = spawnChild(process.execPath, [MAIN, 'repl', '--workdir', dir], { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    proc.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
    try {
      proc.stdin.write(`:call bash ${PASSWORD_TASK}\n`)
      await waitFor('the task id', () => /bash-1/.test(out))
      await waitFor('the password prompt', async () => {
        const from = out.length
        proc.stdin.write(':output bash-1\n')
        await waitFor('a read', () => out.slice(from).includes('[status:'))
        return out.slice(from).includes('Password:')
      })
      proc.stdin.write(`:type bash-1\n${SECRET}\n`)
      await waitFor('the reply to be sent', () => out.includes('sent your reply to bash-1'))
      await waitFor('the task to end', async () => {
        const from = out.length
        proc.stdin.write(':output bash-1\n')
        await waitFor('a read', () => out.slice(from).includes('[status:'))
        return out.slice(from).includes('[status: completed')
      })
      expect(out, `the REPL printed:\n${out}`).toMatch(/^6$/m)
      proc.stdin.end()
      await exited
      expect(out).not.toContain(SECRET)
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL')
    }
  })
})
