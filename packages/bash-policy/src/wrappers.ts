import { hasOption, optionValues, scanOptions, type OptionSpec } from './options.js'
import { dynamicWord, literalWord, type Word } from './unquote.js'

/** What a wrapper runs, as far as its words tell. */
export type Unwrapped =
  /** It runs nothing else here (`env` alone, `command -v x`, `sudo -l`): an ordinary command. */
  | { kind: 'plain'; flags?: string[] }
  /** It runs these words as a command. */
  | { kind: 'argv'; words: Word[]; assignments?: string[]; flags?: string[] }
  /** It runs these words, joined by spaces, as a shell script. */
  | { kind: 'script'; words: Word[]; flags?: string[] }
  | { kind: 'uncertain'; why: string; flags?: undefined }

/** A heredoc or here-string on the command: what a shell reading stdin would run. */
export type Stdin = { text: string } | { unknown: true } | undefined

export interface Wrapper {
  /**
   * A transparent wrapper (`timeout 5 ls`) has no decision of its own: deny and ask rules still
   * match it, but whether it is allowed is decided by what it runs. An opaque one (`sudo`) must be
   * allowed itself, as well as what it runs.
   */
  transparent: boolean
  unwrap(words: Word[], stdin: Stdin): Unwrapped
}

const HELP = ['help', 'version']

/** A wrapper whose options end at its first operand; `positional` operands precede the command. */
function simple(transparent: boolean, spec: OptionSpec, options: { positional?: number; plainIf?: string[] } = {}): Wrapper {
  return {
    transparent,
    unwrap(words) {
      const scan = scanOptions(words, 1, { ...spec, posix: true })
      if (scan.unknown) return { kind: 'uncertain', why: `${words[0].text} option "${scan.unknown}" is not understood` }
      if (hasOption(scan, ...HELP, ...(options.plainIf ?? []))) return { kind: 'plain' }
      const rest = words.slice(scan.end + (options.positional ?? 0))
      return rest.length ? { kind: 'argv', words: rest } : { kind: 'plain' }
    },
  }
}

/** Leading NAME=VALUE words (env, sudo) set the environment of the command. */
function splitAssignments(words: Word[]): { assignments: string[]; rest: Word[] } {
  let i = 0
  while (i < words.length && words[i].literal && /^[^=]+=/.test(words[i].text)) i++
  return { assignments: words.slice(0, i).map((word) => word.text.slice(0, word.text.indexOf('='))), rest: words.slice(i) }
}

const env: Wrapper = {
  transparent: true,
  unwrap(words) {
    const scan = scanOptions(words, 1, {
      short: 'i0v',
      shortArg: 'uCS',
      long: ['ignore-environment', 'null', 'debug', 'list-signal-handling', ...HELP],
      longArg: ['unset', 'chdir', 'split-string'],
      longOptional: ['default-signal', 'ignore-signal', 'block-signal'],
      posix: true,
    })
    if (scan.unknown) return { kind: 'uncertain', why: `env option "${scan.unknown}" is not understood` }
    if (hasOption(scan, 'S', 'split-string')) return { kind: 'uncertain', why: 'env -S splits a string into a command line' }
    if (hasOption(scan, ...HELP)) return { kind: 'plain' }
    let rest = words.slice(scan.end)
    if (rest[0]?.literal && rest[0].text === '-') rest = rest.slice(1)
    const { assignments, rest: command } = splitAssignments(rest)
    return command.length ? { kind: 'argv', words: command, assignments } : { kind: 'plain' }
  },
}

const sudo: Wrapper = {
  transparent: false,
  unwrap(words) {
    const scan = scanOptions(words, 1, {
      short: 'AbBEeHiKklnNPSsVv',
      shortArg: 'CDghprRtTuU',
      long: ['askpass', 'background', 'bell', 'edit', 'set-home', 'login', 'remove-timestamp', 'reset-timestamp', 'list', 'non-interactive', 'no-update', 'preserve-groups', 'stdin', 'shell', 'validate', ...HELP],
      longArg: ['chdir', 'chroot', 'close-from', 'command-timeout', 'group', 'host', 'other-user', 'prompt', 'role', 'type', 'user'],
      longOptional: ['preserve-env'],
      posix: true,
    })
    if (scan.unknown) return { kind: 'uncertain', why: `sudo option "${scan.unknown}" is not understood` }
    // -e edits files, -l lists privileges, -v/-K/-V run nothing: sudo itself is the command.
    if (hasOption(scan, 'e', 'edit', 'l', 'list', 'v', 'validate', 'K', 'remove-timestamp', 'V', ...HELP)) return { kind: 'plain' }
    const { assignments, rest } = splitAssignments(words.slice(scan.end))
    return rest.length ? { kind: 'argv', words: rest, assignments } : { kind: 'plain' }
  },
}

/** su and runuser: `-c SCRIPT` runs a script through the target user's shell. */
function su(name: string): Wrapper {
  return {
    transparent: false,
    unwrap(words) {
      const spec: OptionSpec = {
        short: 'flmpP',
        shortArg: name === 'runuser' ? 'cgGswu' : 'cgGsw',
        long: ['login', 'preserve-environment', 'pty', 'fast', ...HELP],
        longArg: ['command', 'session-command', 'group', 'supp-group', 'shell', 'whitelist-environment', 'user'],
      }
      const posix = scanOptions(words, 1, { ...spec, posix: true })
      if (posix.unknown) return { kind: 'uncertain', why: `${name} option "${posix.unknown}" is not understood` }
      if (name === 'runuser' && hasOption(posix, 'u', 'user') && !hasOption(posix, 'c', 'command', 'session-command')) {
        const rest = words.slice(posix.end)
        return rest.length ? { kind: 'argv', words: rest } : { kind: 'plain' }
      }
      const scan = scanOptions(words, 1, spec)
      const scripts = optionValues(scan, 'c', 'command', 'session-command')
      const operands = scan.operands.filter((word) => !(word.literal && word.text === '-'))
      if (operands.length > 1) return { kind: 'uncertain', why: `${name} passes extra arguments to a shell` }
      if (scripts.length > 1) return { kind: 'uncertain', why: `${name} is given more than one command` }
      return scripts.length ? { kind: 'script', words: scripts } : { kind: 'plain' }
    },
  }
}

const xargs: Wrapper = {
  transparent: true,
  unwrap(words) {
    const scan = scanOptions(words, 1, {
      short: '0oprtx',
      shortArg: 'adEILnPs',
      shortOptional: 'eil',
      long: ['null', 'open-tty', 'interactive', 'no-run-if-empty', 'verbose', 'exit', 'show-limits', ...HELP],
      longArg: ['arg-file', 'delimiter', 'max-args', 'max-procs', 'max-chars', 'process-slot-var'],
      longOptional: ['eof', 'replace', 'max-lines'],
      posix: true,
    })
    if (scan.unknown) return { kind: 'uncertain', why: `xargs option "${scan.unknown}" is not understood` }
    if (hasOption(scan, ...HELP, 'show-limits')) return { kind: 'plain' }
    let replace: string | undefined
    for (const option of scan.options) {
      if (option.name === 'I') replace = option.value?.text
      if (option.name === 'i' || option.name === 'replace') replace = option.value?.text ?? '{}'
    }
    // `--process-slot-var=NAME` sets NAME in the command's environment (PATH=0 makes `./0/ls` run).
    const slotVariables = scan.options.filter((option) => option.name === 'process-slot-var').map((option) => (option.value?.literal ? option.value.text : 'PATH'))
    const command = words.slice(scan.end)
    if (!command.length) command.push(literalWord('echo'))
    // The input becomes arguments: in place of the replace string, or appended.
    const input = dynamicWord('…')
    const assignments = slotVariables.length ? slotVariables : undefined
    if (replace === undefined) return { kind: 'argv', words: [...command, input], assignments }
    return { kind: 'argv', words: command.map((word) => (word.literal && replace && word.text.includes(replace) ? dynamicWord(word.source) : word)), assignments }
  },
}

const watch: Wrapper = {
  transparent: true,
  unwrap(words) {
    const scan = scanOptions(words, 1, {
      short: 'bcCegprtwx',
      shortArg: 'nq',
      shortOptional: 'd',
      long: ['beep', 'color', 'no-color', 'errexit', 'chgexit', 'precise', 'no-rerun', 'no-title', 'no-wrap', 'no-linewrap', 'exec', ...HELP],
      longArg: ['interval', 'equexit'],
      longOptional: ['differences'],
      posix: true,
    })
    if (scan.unknown) return { kind: 'uncertain', why: `watch option "${scan.unknown}" is not understood` }
    if (hasOption(scan, ...HELP)) return { kind: 'plain' }
    const rest = words.slice(scan.end)
    if (!rest.length) return { kind: 'plain' }
    // Without -x, watch joins its arguments and runs them with `sh -c`.
    return hasOption(scan, 'x', 'exec') ? { kind: 'argv', words: rest } : { kind: 'script', words: rest }
  },
}

const time: Wrapper = {
  transparent: true,
  unwrap(words) {
    const scan = scanOptions(words, 1, {
      short: 'apqv',
      shortArg: 'fo',
      long: ['append', 'portability', 'quiet', 'verbose', ...HELP],
      longArg: ['format', 'output'],
      posix: true,
    })
    if (scan.unknown) return { kind: 'uncertain', why: `time option "${scan.unknown}" is not understood` }
    const flags = optionValues(scan, 'o', 'output')
      .filter((file) => !isHarmlessTarget(file))
      .map((file) => `time -o writes to ${file.source}`)
    const rest = words.slice(scan.end)
    return rest.length ? { kind: 'argv', words: rest, flags } : { kind: 'plain', flags }
  },
}

const flock: Wrapper = {
  transparent: true,
  unwrap(words) {
    const spec: OptionSpec = {
      short: 'eFhnosuVx',
      shortArg: 'cEw',
      long: ['shared', 'exclusive', 'unlock', 'nonblock', 'nb', 'close', 'no-fork', 'verbose', ...HELP],
      longArg: ['command', 'timeout', 'wait', 'conflict-exit-code'],
      posix: true,
    }
    const scan = scanOptions(words, 1, spec)
    if (scan.unknown) return { kind: 'uncertain', why: `flock option "${scan.unknown}" is not understood` }
    if (hasOption(scan, ...HELP)) return { kind: 'plain' }
    let scripts = optionValues(scan, 'c', 'command')
    // `flock FILE -c SCRIPT` and `flock FILE COMMAND…`: the lock file comes first.
    let rest = words.slice(scan.end + 1)
    if (rest[0]?.literal && (rest[0].text === '-c' || rest[0].text === '--command')) {
      scripts = [...scripts, ...rest.slice(1, 2)]
      rest = rest.slice(2)
    }
    if (scripts.length) return rest.length ? { kind: 'uncertain', why: 'flock is given a command twice' } : { kind: 'script', words: scripts }
    return rest.length ? { kind: 'argv', words: rest } : { kind: 'plain' }
  },
}

const coproc: Wrapper = {
  transparent: true,
  unwrap(words) {
    // tree-sitter-bash has no coproc: `coproc NAME { cmd; }` arrives as words ending before `}`;
    // the resolver drops the `{`.
    let rest = words.slice(1)
    if (rest.length >= 2 && rest[0].literal && /^[A-Za-z_]\w*$/.test(rest[0].text) && rest[1].source === '{') rest = rest.slice(1)
    return rest.length ? { kind: 'argv', words: rest } : { kind: 'plain' }
  },
}

const evalWrapper: Wrapper = {
  transparent: true,
  unwrap(words) {
    const rest = words[1]?.literal && words[1].text === '--' ? words.slice(2) : words.slice(1)
    return rest.length ? { kind: 'script', words: rest } : { kind: 'plain' }
  },
}

const trap: Wrapper = {
  transparent: true,
  unwrap(words) {
    let rest = words.slice(1)
    if (rest[0]?.literal && rest[0].text === '--') rest = rest.slice(1)
    if (rest.length < 2) return { kind: 'plain' }
    const action = rest[0]
    if (action.literal && (action.text === '-' || action.text === '' || /^-[lpP]+$/.test(action.text))) return { kind: 'plain' }
    // The action runs later, when a signal arrives: it is part of what this command line runs.
    return { kind: 'script', words: [action] }
  },
}

const busybox: Wrapper = {
  transparent: true,
  unwrap(words) {
    const rest = words.slice(1)
    if (!rest.length || (rest[0].literal && rest[0].text.startsWith('-'))) return { kind: 'plain' }
    return { kind: 'argv', words: rest }
  },
}

const SHELL_LONG_WITH_ARG = new Set(['--rcfile', '--init-file'])

/** `sh -c SCRIPT`, `bash -lc SCRIPT`, and a shell reading a heredoc or here-string. */
const shell: Wrapper = {
  transparent: true,
  unwrap(words, stdin) {
    let command = false
    let readsStdin = false
    let i = 1
    for (; i < words.length; i++) {
      const word = words[i]
      if (!word.literal) break
      const text = word.text
      if (text === '--' || text === '-') {
        i++
        break
      }
      if (text.startsWith('--')) {
        if (SHELL_LONG_WITH_ARG.has(text)) i++
        continue
      }
      if (!/^[-+][A-Za-z]+$/.test(text)) break
      if (text.startsWith('-') && text.includes('c')) command = true
      if (text.startsWith('-') && text.includes('s')) readsStdin = true
      // -o/-O take an option name.
      if (/[oO]/.test(text.slice(1))) i++
    }
    const operands = words.slice(i)
    if (command) {
      if (!operands.length) return { kind: 'uncertain', why: `${words[0].text} -c is given no script` }
      return { kind: 'script', words: [operands[0]] }
    }
    if ((readsStdin || !operands.length) && stdin && 'text' in stdin) return { kind: 'script', words: [literalWord(stdin.text)] }
    return { kind: 'plain' }
  },
}

const SHELLS = ['sh', 'bash', 'rbash', 'dash', 'ash', 'zsh', 'ksh', 'mksh', 'pdksh', 'posh', 'yash']

export const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map<string, Wrapper>([
  ['env', env],
  ['sudo', sudo],
  ['doas', simple(false, { short: 'nsL', shortArg: 'uC' }, { plainIf: ['C', 'L'] })],
  ['su', su('su')],
  ['runuser', su('runuser')],
  ['pkexec', simple(false, { long: ['disable-internal-agent', 'keep-cwd', ...HELP], longArg: ['user'] })],
  ['chroot', simple(false, { long: ['skip-chdir', ...HELP], longArg: ['userspec', 'groups'] }, { positional: 1 })],
  ['timeout', simple(true, { short: 'v', shortArg: 'ks', long: ['preserve-status', 'foreground', 'verbose', ...HELP], longArg: ['kill-after', 'signal'] }, { positional: 1 })],
  ['nice', simple(true, { shortArg: 'n', long: HELP, longArg: ['adjustment'], numeric: true })],
  ['nohup', simple(true, { long: HELP })],
  ['setsid', simple(true, { short: 'cfw', long: ['ctty', 'fork', 'wait', ...HELP] })],
  ['command', simple(true, { short: 'pvV' }, { plainIf: ['v', 'V'] })],
  ['builtin', simple(true, {})],
  ['exec', simple(true, { short: 'cl', shortArg: 'a' })],
  ['time', time],
  ['xargs', xargs],
  ['watch', watch],
  ['stdbuf', simple(true, { shortArg: 'eio', long: HELP, longArg: ['error', 'input', 'output'] })],
  ['ionice', simple(true, { short: 't', shortArg: 'cnpPu', long: ['ignore', ...HELP], longArg: ['class', 'classdata', 'pid', 'pgid', 'uid'] }, { plainIf: ['p', 'P', 'u', 'pid', 'pgid', 'uid'] })],
  ['taskset', simple(true, { short: 'acp', long: ['all-tasks', 'cpu-list', 'pid', ...HELP] }, { positional: 1, plainIf: ['p', 'pid'] })],
  ['flock', flock],
  ['busybox', busybox],
  ['coproc', coproc],
  ['eval', evalWrapper],
  ['trap', trap],
  ...SHELLS.map((name) => [name, shell] as const),
])

/** `/dev/null`, `/dev/stdout` and `/dev/stderr` receive output without changing any file. */
export function isHarmlessTarget(word: Word): boolean {
  return word.literal && !word.glob && ['/dev/null', '/dev/stdout', '/dev/stderr'].includes(word.text)
}
