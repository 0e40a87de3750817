import { spawn } from 'node:child_process'
import type { TerminalModes } from '@deepseek-ai/dsh-bash'
import { parseSttyModes } from '@deepseek-ai/dsh-bash-kit'

/** A read that takes longer than this (a stuck machine) cannot tell. */
const STTY_TIMEOUT_MS = 5_000

/**
 * The modes of the terminal behind `fd` (the slave side this process holds for an interactive
 * task), read by `stty -a` with `fd` as its stdin: Node has no tcgetattr, and the pty binding we
 * load (node-pty's) has none either. stty only reads (tcgetattr, the window size); it opens no
 * path, so a reused pts number can never be read by mistake. It costs one process start (measured
 * on 2 busy cores, load 16: 42 ms median, where starting `true` took 30 ms), paid twice per
 * `bash_input {ask_user}` (before the person is asked, and before the reply is written), never per read.
 * Undefined when stty is missing, fails, times out or prints something unexpected.
 */
export function readTerminalModes(stty: string | undefined, fd: number): Promise<TerminalModes | undefined> {
  if (!stty) return Promise.resolve(undefined)
  return new Promise((resolve) => {
    let child
    try {
      // LC_ALL=C: the flag words are never translated, but the rest of the text may be.
      child = spawn(stty, ['-a'], { stdio: [fd, 'pipe', 'ignore'], env: { LC_ALL: 'C' }, timeout: STTY_TIMEOUT_MS })
    } catch {
      return resolve(undefined)
    }
    let out = ''
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (chunk: string) => {
      if (out.length < 65536) out += chunk
    })
    child.once('error', () => resolve(undefined))
    child.once('close', (code) => resolve(code === 0 ? parseSttyModes(out) : undefined))
  })
}
