/**
 * Interactive tasks in the container executor: what is particular to its in-container pty (the
 * agent opens it itself: the image needs no pty helper). The behaviour every executor shares is in the interactive
 * conformance suite (conformance.test.ts).
 */
import { readdirSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'
import { ContainerExecutor } from '../src/index.js'
import { containerFixture, processesWith, splitTag, unavailableReason } from './docker.js'

const q = splitTag

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-container] skipping the interactive container tests: ${skip}`)

describe.skipIf(skip !== undefined)('container executor: interactive tasks', () => {
  const { create } = containerFixture('container-pty', { keepSpillFiles: true })

  /** Everything read from the task until `pattern` shows up (reads are deltas: they are accumulated). */
  async function readUntil(bash: ContainerExecutor, id: string, pattern: RegExp, seen = { text: '' }): Promise<string> {
    await vi.waitFor(
      () => {
        seen.text += bash.readOutput(id).delta
        expect(seen.text).toMatch(pattern)
      },
      { timeout: 20_000, interval: 50 },
    )
    return seen.text
  }


  it('the terminal is the controlling terminal of a new session, 120x40, xterm-256color; only fds 0-2 are open', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const task = await bash.start(
      bash.resolve({
        command: `tty; stty size; echo "TERM=$TERM"; read -r st </proc/$$/stat; set -- \${st##*) }; [ "$4" -eq $$ ] && echo leader; exec sleep 6${tag}`,
        interactive: true,
      }),
    )
    const text = await readUntil(bash, task.id, /leader\n/)
    expect(text).toMatch(/^\/dev\/pts\/\d+\n40 120\nTERM=xterm-256color\nleader\n/)
    // The program's descriptors, seen from the host (same kernel): the agent's own are close-on-exec.
    await vi.waitFor(() => expect(processesWith(tag)).toHaveLength(1), { timeout: 20_000, interval: 50 })
    expect(readdirSync(`/proc/${processesWith(tag)[0]}/fd`).sort()).toEqual(['0', '1', '2'])
    await bash.kill(task.id)
  })

  it('resize sets the terminal size the program sees', async () => {
    const bash = await create()
    const task = await bash.start(bash.resolve({ command: 'echo ready; read -r x; stty size', interactive: true }))
    await readUntil(bash, task.id, /ready/)
    await bash.resize!(task.id, 80, 24)
    await bash.write(task.id, '\n')
    expect((await bash.get(task.id)!.done).exitCode).toBe(0)
    await readUntil(bash, task.id, /24 80/)
  })

  it('kill stops the whole tree, escapees of the session included', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const task = await bash.start(
      bash.resolve({
        command: `setsid sleep 3${q(tag)} & nohup sleep 4${q(tag)} >/dev/null 2>&1 & printf 'red \\033[31mtext\\033[0m\\n'; sleep 5${q(tag)}`,
        interactive: true,
      }),
    )
    // Colours are the emulator's business: the read is text.
    expect(await readUntil(bash, task.id, /red text/)).toBe('red text\n')
    await vi.waitFor(() => expect(processesWith(tag).length).toBe(3), { timeout: 20_000, interval: 50 })
    expect(await bash.kill(task.id)).toBe(true)
    const done = await bash.get(task.id)!.done
    expect(done.status).toBe('killed')
    expect(processesWith(tag)).toEqual([])
  })

  it('input to a program that does not read is buffered by the agent: other commands keep running', async () => {
    const bash = await create()
    const task = await bash.start(bash.resolve({ command: 'echo ready; sleep 300', interactive: true }))
    await readUntil(bash, task.id, /ready/)
    // More than the terminal's input queue (4 KiB) and a pipe (64 KiB): the rest waits in the agent.
    await bash.write(task.id, 'x'.repeat(200_000))
    const result = await bash.run(bash.resolve({ command: 'echo still here' }))
    expect(result.stdout.text).toBe('still here\n')
    await bash.kill(task.id)
  })
})
