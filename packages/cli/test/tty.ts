import { type IPty, spawn as spawnPty } from '@lydell/node-pty'
import { MAIN, waitFor } from './helpers.js'

/**
 * The real CLI on a real terminal: everything it writes, as the person's terminal receives it.
 * `hidden`: words never shown in a failure message (a typed secret).
 */
export function startTtyRepl(dir: string, hidden: string[] = []) {
  return startTty(dir, ['repl', '--workdir', dir], hidden)
}

/** `dsh-bash ARGS` on a real terminal in `dir` (see startTtyRepl). */
export function startTty(dir: string, args: string[], hidden: string[] = []) {
  const term: IPty = spawnPty(process.execPath, [MAIN, ...args], {
    name: 'xterm-256color',
    cols: 200,
    rows: 50,
    cwd: dir,
    env: { ...process.env, NO_COLOR: '1' } as Record<string, string>,
  })
  let out = ''
  term.onData((data) => (out += data))
  const exited = new Promise<void>((resolve) => term.onExit(() => resolve()))
  return {
    term,
    exited,
    all: () => out,
    /** Types `keys` as a person does; resolves once `until` appears after them. */
    async type(keys: string, until: string | RegExp): Promise<string> {
      const from = out.length
      term.write(keys)
      return waitFor(`${JSON.stringify(until)} after typing ${JSON.stringify(hidden.reduce((text, word) => text.replaceAll(word, '<secret>'), keys))}\nterminal so far: ${out}`, () => {
        const fresh = out.slice(from)
        return (typeof until === 'string' ? fresh.includes(until) : until.test(fresh)) && fresh
      })
    },
  }
}

