import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import type { BashExecutor, BashTask } from '@deepseek-ai/dsh-bash'
import { LocalExecutor } from '@deepseek-ai/dsh-bash-local'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { createSandbox, sandboxUnavailable, scratchDir, type SandboxInstance } from './helpers.js'

const reason = sandboxUnavailable()
const dir = scratchDir()
afterAll(() => dir.remove())
const has = (program: string) => {
  try {
    execFileSync(program, program === 'perl' ? ['-e', '1'] : ['-c', 'pass'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const legacyTiocsti = (() => {
  try {
    return readFileSync('/proc/sys/dev/tty/legacy_tiocsti', 'utf8').trim() === '1'
  } catch {
    return true
  }
})()

/**
 * TIOCSTI on the command's own terminal (fd 0), then a read of what arrived: `injected`/`refused`
 * and `line=[…]`. Perl needs no header file for it (0x5412 is TIOCSTI on x86_64 and arm64).
 */
const TIOCSTI_PROBE = `perl -e '$c = "X"; print(ioctl(STDIN, 0x5412, $c) ? "injected\\n" : "refused: $!\\n")'; read -t 1 -r line; echo "line=[$line]"`

const WAIT = { timeout: 20_000, interval: 25 }
let instances: Array<{ dispose(): Promise<void> }> = []
afterEach(async () => {
  await Promise.all(instances.map((i) => i.dispose()))
  instances = []
})

async function transcript(bash: BashExecutor, task: BashTask, until: (text: string) => boolean): Promise<string> {
  let text = ''
  await vi.waitFor(() => {
    text += bash.readOutput(task.id).delta
    expect(until(text), text).toBe(true)
  }, WAIT)
  return text
}

describe.skipIf(reason !== undefined)('interactive commands in the sandbox', () => {
  async function sandbox(mode: 'read-only' | 'workspace-write' = 'workspace-write'): Promise<SandboxInstance> {
    const instance = await createSandbox({ workspaceRoot: dir.path, mode })
    instances.push(instance)
    return instance
  }

  it('run confined, in a terminal that stays their controlling terminal', async () => {
    const { executor: bash } = await sandbox()
    const task = bash.start(bash.resolve({ command: `[ -t 0 ] && echo tty; (exec 3</dev/tty) && echo ctty; touch /usr/dsh-escape 2>/dev/null || echo confined; read -p 'Name? ' n; echo "hi $n"`, workdir: dir.path, interactive: true }))
    expect(await transcript(bash, task, (t) => t.includes('Name? '))).toBe('tty\nctty\nconfined\nName? ')
    await bash.write(task.id, 'Ada\n')
    await task.done
    expect(bash.readOutput(task.id).delta).toBe('Ada\nhi Ada\n')
    expect(task.status).toBe('completed')
  })

  it.skipIf(!has('python3'))("Ctrl-C reaches the program (python's KeyboardInterrupt), not bwrap; Ctrl-D ends it", async () => {
    const { executor: bash } = await sandbox()
    const task = bash.start(bash.resolve({ command: 'python3 -q -i', workdir: dir.path, interactive: true }))
    await transcript(bash, task, (t) => t.endsWith('>>> '))
    await bash.write(task.id, 'x = 6*7\nwhile True: pass\n\n')
    await transcript(bash, task, (t) => t.includes('...'))
    await bash.write(task.id, '\u0003')
    await transcript(bash, task, (t) => t.includes('KeyboardInterrupt\n>>> '))
    await bash.write(task.id, 'print(x)\n')
    await transcript(bash, task, (t) => t.includes('42\n>>> '))
    await bash.write(task.id, '\u0004')
    await task.done
    expect(task.status).toBe('completed')
    expect(task.exitCode).toBe(0)
  })

  it.skipIf(!has('perl'))('TIOCSTI cannot push input into the terminal from inside (seccomp refuses it; nothing arrives)', async () => {
    const { executor: bash } = await sandbox('read-only')
    const task = bash.start(bash.resolve({ command: TIOCSTI_PROBE, workdir: dir.path, interactive: true }))
    await task.done
    const text = bash.readOutput(task.id).delta
    expect(text).toBe('refused: Operation not permitted\nline=[]\n')
  })

  it.skipIf(!has('perl') || !legacyTiocsti)('control: the same probe outside the sandbox does inject on this kernel (the test above can fail)', async () => {
    const instance = await loadExecutorPlugin(LocalExecutor, { graceMs: 300 })
    instances.push(instance)
    const bash = instance.executor
    const task = bash.start(bash.resolve({ command: TIOCSTI_PROBE, workdir: dir.path, interactive: true }))
    await task.done
    expect(bash.readOutput(task.id).delta).toContain('injected')
  })
})
