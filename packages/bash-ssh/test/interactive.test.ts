/**
 * Interactive tasks over SSH: what is particular to the remote pty (the agent opens it on the host;
 * sshd's own pty is not used). The behaviour every executor shares is in the interactive
 * conformance suite (conformance.test.ts).
 */
import { readdirSync } from 'node:fs'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { SshExecutor } from '../src/index.js'
import { createSsh, hostEntry } from './helpers.js'
import { makeKeys, type SshdInstance, startSshd, type TestKeys, unavailableReason, userProcesses } from './sshd.js'

/** The tag split by an empty quote: only the started processes' arguments carry it, not the shell's. */
const q = (tag: string) => `${tag.slice(0, 4)}''${tag.slice(4)}`

const skip = unavailableReason()
if (skip) console.warn(`[dsh-bash-ssh] skipping the interactive SSH tests: ${skip}`)

describe.skipIf(skip !== undefined)('ssh executor: interactive tasks', () => {
  let keys: TestKeys
  let sshd: SshdInstance
  let noTty: SshdInstance
  const disposers: Array<() => Promise<void>> = []
  if (!skip) {
    // A user of its own: the other SSH test files check for their users' processes meanwhile.
    keys = makeKeys('dshtest4')
    beforeAll(async () => {
      sshd = await startSshd(keys, 'interactive')
      noTty = await startSshd(keys, 'no-tty', { extraConfig: ['PermitTTY no'] })
    })
    afterAll(async () => {
      await vi.waitFor(() => expect(userProcesses(keys.user)).toEqual([]), { timeout: 20_000, interval: 100 })
      await sshd?.stop()
      await noTty?.stop()
      keys.remove()
    })
  }
  afterEach(async () => {
    await Promise.all(disposers.splice(0).map((dispose) => dispose()))
  })

  async function create(server = () => sshd): Promise<SshExecutor> {
    const instance = await createSsh({ cwd: keys.workdir, hosts: [hostEntry(keys, server())] })
    disposers.push(instance.dispose)
    return instance.executor
  }

  /** Everything read from the task until `pattern` shows up (reads are deltas: they are accumulated). */
  async function readUntil(bash: SshExecutor, id: string, pattern: RegExp, seen = { text: '' }): Promise<string> {
    await vi.waitFor(
      () => {
        seen.text += bash.readOutput(id).delta
        expect(seen.text).toMatch(pattern)
      },
      { timeout: 20_000, interval: 50 },
    )
    return seen.text
  }

  it("the agent's pty is the controlling terminal of the command's new session; only fds 0-2 are open", async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const task = bash.start(
      bash.resolve({
        command: `read -r st </proc/$$/stat; set -- \${st##*) }; [ "$4" -eq $$ ] && [ "$3" -eq $$ ] && echo leader; tty | cut -c6-; exec sleep 6${tag}`,
        interactive: true,
      }),
    )
    const text = await readUntil(bash, task.id, /leader\npts\/\d+\n/)
    expect(text).toMatch(/^leader\npts\/\d+\n$/)
    await vi.waitFor(() => expect(userProcesses(keys.user, `sleep 6${tag}`)).toHaveLength(1), { timeout: 20_000, interval: 50 })
    const pid = userProcesses(keys.user, `sleep 6${tag}`)[0]!.split(' ')[0]
    expect(readdirSync(`/proc/${pid}/fd`).sort()).toEqual(['0', '1', '2'])
    await bash.kill(task.id)
  })

  it('resize sets the terminal size: the program sees the new size', async () => {
    const bash = await create()
    const task = bash.start(bash.resolve({ command: 'echo ready; read -r x; stty size', interactive: true }))
    await readUntil(bash, task.id, /ready/)
    await bash.resize!(task.id, 80, 24)
    await bash.write(task.id, '\n')
    expect((await task.done).exitCode).toBe(0)
    await readUntil(bash, task.id, /24 80/)
  })

  it('kill stops the whole tree, processes that left the session (setsid, nohup) included', async () => {
    const bash = await create()
    const tag = `${process.pid}${Date.now() % 100000}`
    const task = bash.start(
      bash.resolve({ command: `setsid sleep 3${q(tag)} & nohup sleep 4${q(tag)} >/dev/null 2>&1 & echo started; sleep 5${q(tag)}`, interactive: true }),
    )
    await readUntil(bash, task.id, /started/)
    await vi.waitFor(() => expect(userProcesses(keys.user, tag)).toHaveLength(3), { timeout: 20_000, interval: 50 })
    expect(await bash.kill(task.id)).toBe(true)
    expect(task.status).toBe('killed')
    expect(userProcesses(keys.user, tag)).toEqual([])
  })

  it("a server that refuses sshd's ptys (PermitTTY no) does not matter: the agent opens its own", async () => {
    const bash = await create(() => noTty)
    const task = bash.start(bash.resolve({ command: 'tty; echo done', interactive: true }))
    await task.done
    expect(task.status).toBe('completed')
    expect(await readUntil(bash, task.id, /done/)).toMatch(/^\/dev\/pts\/\d+\r?\ndone/)
  })

})
