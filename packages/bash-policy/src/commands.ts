import { awkEffects, networkOperand } from './awk.js'
import { hasOption, optionValues, resolveLong, scanOptions, type ScannedOptions } from './options.js'
import { sedEffects, type SedScript } from './sed.js'
import { tarFlags } from './tar.js'
import { LESS, MAN, MORE, pagerFlags, type PagerOptions } from './pager.js'
import { dynamicWord, type Word } from './unquote.js'
import { isHarmlessTarget } from './wrappers.js'

/**
 * What a command does beyond what its name suggests: options of "read-only" commands that run
 * other commands or write files.
 */
export interface Inspection {
  /** Reasons that turn an allowed command into `ask`. */
  flags: string[]
  /** Commands it runs, as words (`find -exec CMD {} ;`). */
  commands: Word[][]
  /** Scripts it runs, as words joined by spaces (`git rebase --exec SCRIPT`). */
  scripts: Word[][]
}

type Inspector = (words: Word[], out: Inspection) => void

/**
 * Programs whose every glob argument that starts with a plain character stays an operand: it
 * cannot expand to an option (`src/*.ts` only yields names starting `src/`), nor to `(`, `!` or
 * `;` in find's expression, and neither program reads an operand as a script (sed and awk do).
 */
const OPERAND_GLOBS = new Set(['find', 'rg'])

function computed(name: string, words: readonly Word[], out: Inspection): void {
  // A glob is computed too: `find *` in a directory holding a file named `-delete` deletes. Not
  // `~` (HOME could start with `-`) nor a pattern character first.
  const operand = (w: Word) => OPERAND_GLOBS.has(name) && w.literal && /^[A-Za-z0-9_./]/.test(w.text)
  const word = words.slice(1).find((w) => !w.literal || (w.glob && !operand(w)))
  if (word) out.flags.push(`${name} argument ${word.source} is computed at run time and could be an option`)
}

/** Long options of the word, if it is one, resolved against the names a command knows. */
function longOption(word: Word, names: readonly string[]): string | undefined {
  if (!word.literal || !word.text.startsWith('--')) return undefined
  const eq = word.text.indexOf('=')
  return resolveLong(word.text.slice(2, eq < 0 ? undefined : eq), names)
}

/** A long option given as a prefix of one of `dangerous` (getopt accepts abbreviations). */
function abbreviates(word: Word, dangerous: readonly string[]): string | undefined {
  if (!word.literal || !word.text.startsWith('--') || word.text.length < 4) return undefined
  const eq = word.text.indexOf('=')
  const given = word.text.slice(2, eq < 0 ? undefined : eq)
  return dangerous.find((name) => name.startsWith(given))
}

const find: Inspector = (words, out) => {
  computed('find', words, out)
  for (let i = 1; i < words.length; i++) {
    const text = words[i].literal ? words[i].text : ''
    if (['-exec', '-execdir', '-ok', '-okdir'].includes(text)) {
      let end = i + 1
      while (end < words.length && !(words[end].literal && (words[end].text === ';' || words[end].text === '+'))) end++
      const command = words.slice(i + 1, end).map((word) => (word.literal && word.text.includes('{}') ? dynamicWord(word.source) : word))
      if (command.length) out.commands.push(command)
      else out.flags.push(`find ${text} is given no command`)
      i = end
    } else if (text === '-delete') {
      out.flags.push('find -delete deletes files')
    } else if (['-fprint', '-fprint0', '-fprintf', '-fls'].includes(text)) {
      const file = words[i + 1]
      if (!file || !isHarmlessTarget(file)) out.flags.push(`find ${text} writes to ${file?.source ?? 'a file'}`)
    }
  }
}

// Global options of git that take a value in the next word.
const GIT_GLOBAL_ARG = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--list-cmds', '--attr-source'])

const git: Inspector = (words, out) => {
  computed('git', words, out)
  let i = 1
  for (; i < words.length; i++) {
    const text = words[i].text
    if (!words[i].literal || !text.startsWith('-')) break
    const name = text.includes('=') ? text.slice(0, text.indexOf('=')) : text
    if (name === '-c' || text.startsWith('-c')) out.flags.push('git -c sets configuration that can run commands')
    else if (name === '--config-env') out.flags.push('git --config-env sets configuration that can run commands')
    else if (name === '--exec-path' && text.includes('=')) out.flags.push('git --exec-path changes the programs git runs')
    if (GIT_GLOBAL_ARG.has(text)) i++
  }
  const sub = words[i]?.literal ? words[i].text : undefined
  const args = words.slice(i + 1)
  for (let j = 0; j < args.length; j++) {
    const word = args[j]
    if (!word.literal) continue
    const text = word.text
    const dangerous = abbreviates(word, ['upload-pack', 'receive-pack', 'exec', 'open-files-in-pager', 'extcmd', 'tool'])
    if (dangerous === 'exec' && sub === 'rebase') {
      const eq = text.indexOf('=')
      const script = eq >= 0 ? [{ ...word, text: text.slice(eq + 1) }] : args.slice(j + 1, j + 2)
      out.scripts.push(script)
      if (eq < 0) j++
    } else if (dangerous === 'exec' || dangerous === 'upload-pack' || dangerous === 'receive-pack') {
      out.flags.push(`git --${dangerous} runs a command`)
    } else if (dangerous === 'open-files-in-pager' || (sub === 'grep' && /^-[a-zA-Z]*O/.test(text))) {
      out.flags.push('git grep --open-files-in-pager runs a command')
    } else if (dangerous === 'extcmd' || dangerous === 'tool' || (sub === 'difftool' && /^-[a-zA-Z]*x/.test(text))) {
      out.flags.push(`git ${sub} runs an external tool`)
    } else if (sub === 'rebase' && /^-[a-zA-Z]*x/.test(text)) {
      const rest = text.slice(text.indexOf('x') + 1)
      out.scripts.push(rest ? [{ ...word, text: rest }] : args.slice(j + 1, j + 2))
      if (!rest) j++
    } else if (sub === 'clone' && text === '-u') {
      out.flags.push('git clone -u runs a command')
    } else if (abbreviates(word, ['output'])) {
      out.flags.push('git --output writes to a file')
    }
  }
  if (sub === 'bisect' && args[0]?.literal && args[0].text === 'run' && args.length > 1) out.commands.push(args.slice(1))
  if (sub === 'submodule') {
    const at = args.findIndex((word) => word.literal && word.text === 'foreach')
    if (at >= 0) {
      let rest = args.slice(at + 1)
      while (rest[0]?.literal && rest[0].text.startsWith('-')) rest = rest.slice(1)
      if (rest.length) out.scripts.push(rest)
    }
  }
  if (sub === 'filter-branch') out.flags.push('git filter-branch runs scripts')
}

const SED_OPTIONS = {
  short: 'nErsuzb',
  shortArg: 'efl',
  shortOptional: 'i',
  long: ['quiet', 'silent', 'regexp-extended', 'separate', 'unbuffered', 'null-data', 'zero-terminated', 'posix', 'debug', 'sandbox', 'follow-symlinks', 'binary', 'help', 'version'],
  longArg: ['expression', 'file', 'line-length'],
  longOptional: ['in-place'],
}

/**
 * The scripts sed compiles, in its order: each `-e` when getopt reaches it (with `--sandbox` only
 * if it came earlier), then the first operand if there was no `-e`/`-f` (after all options).
 */
function sedScripts(scan: ScannedOptions): SedScript[] {
  const scripts: SedScript[] = []
  let sandbox = false
  for (const option of scan.options) {
    if (option.name === 'sandbox') sandbox = true
    else if ((option.name === 'e' || option.name === 'expression') && option.value) scripts.push({ text: option.value.text, sandbox })
  }
  if (!hasOption(scan, 'e', 'expression', 'f', 'file') && scan.operands[0]) scripts.push({ text: scan.operands[0].text, sandbox })
  return scripts
}

const sed: Inspector = (words, out) => {
  computed('sed', words, out)
  // GNU getopt permutes options past operands, unless POSIXLY_CORRECT is in the environment (which
  // the line does not show): then the first operand ends the options. Both readings are checked.
  for (const posix of [false, true]) {
    const scan = scanOptions(words, 1, { ...SED_OPTIONS, posix })
    if (scan.unknown) out.flags.push(`sed option "${scan.unknown}" is not understood`)
    if (hasOption(scan, 'i', 'in-place')) out.flags.push('sed -i edits files in place')
    if (hasOption(scan, 'f', 'file')) out.flags.push('sed -f runs a script the policy cannot see')
    const effects = sedEffects(sedScripts(scan))
    if (effects.unclear) out.flags.push(`sed script could not be read with certainty (${effects.unclear})`)
    if (effects.runs) out.flags.push('sed e runs a command')
    for (const file of effects.writes) {
      if (!['/dev/stdout', '/dev/stderr'].includes(file)) out.flags.push(`sed w writes to ${file}`)
    }
  }
  out.flags.splice(0, out.flags.length, ...new Set(out.flags))
}

const awk: Inspector = (words, out) => {
  const name = words[0].text.split('/').pop()!
  computed(name, words, out)
  const scan = scanOptions(words, 1, {
    short: 'bcCghMNOPrsStV',
    shortArg: 'FvfeEilW',
    shortOptional: 'dDLop',
    long: ['characters-as-bytes', 'traditional', 'copyright', 'gen-pot', 'lint', 'bignum', 'use-lc-numeric', 'non-decimal-data', 'optimize', 'posix', 're-interval', 'no-optimize', 'sandbox', 'lint-old', 'help', 'version', 'csv'],
    longArg: ['field-separator', 'assign', 'file', 'source', 'exec', 'include', 'load'],
    longOptional: ['dump-variables', 'debug', 'pretty-print', 'profile'],
    posix: true,
  })
  if (scan.unknown) out.flags.push(`${name} option "${scan.unknown}" is not understood`)
  if (hasOption(scan, 'f', 'file', 'E', 'exec', 'i', 'include', 'l', 'load', 'W')) out.flags.push(`${name} runs a program file the policy cannot see`)
  if (hasOption(scan, 'd', 'dump-variables', 'D', 'debug', 'o', 'pretty-print', 'p', 'profile')) out.flags.push(`${name} writes to a file`)
  const sources = optionValues(scan, 'e', 'source')
  const programs = sources.length || hasOption(scan, 'f', 'file', 'E', 'exec') ? sources : words.slice(scan.end, scan.end + 1)
  for (const program of programs) {
    if (program.literal) out.flags.push(...awkEffects(name, program.text))
  }
  const operands = words.slice(scan.end + (sources.length ? 0 : 1))
  const network = operands.find((word) => word.literal && networkOperand(word.text))
  if (network) out.flags.push(`${name} operand ${network.source} is a network connection for gawk`)
}

/** Only long options matter; a set of dangerous ones per command. */
function dangerousLong(name: string, options: Record<string, string>): Inspector {
  const names = Object.keys(options)
  return (words, out) => {
    computed(name, words, out)
    for (const word of words.slice(1)) {
      const option = abbreviates(word, names)
      if (option) out.flags.push(options[option])
    }
  }
}

const rg = dangerousLong('rg', { pre: 'rg --pre runs a command' })

const sortLong = dangerousLong('sort', { 'compress-program': 'sort --compress-program runs a command' })

const sort: Inspector = (words, out) => {
  sortLong(words, out)
  for (let i = 1; i < words.length; i++) {
    const word = words[i]
    if (!word.literal) continue
    let file: Word | undefined
    if (longOption(word, ['output']) === 'output') file = word.text.includes('=') ? { ...word, text: word.text.slice(word.text.indexOf('=') + 1) } : words[i + 1]
    else if (/^-[a-zA-Z]*o/.test(word.text) && !word.text.startsWith('--')) {
      const rest = word.text.slice(word.text.indexOf('o') + 1)
      file = rest ? { ...word, text: rest, source: rest } : words[i + 1]
    }
    if (file && !isHarmlessTarget(file)) out.flags.push(`sort -o writes to ${file.source}`)
  }
}

const tee: Inspector = (words, out) => {
  const scan = scanOptions(words, 1, { short: 'aip', long: ['append', 'ignore-interrupts', 'help', 'version'], longOptional: ['output-error'] })
  for (const file of scan.operands) if (!isHarmlessTarget(file)) out.flags.push(`tee writes to ${file.source}`)
}

const fd: Inspector = (words, out) => {
  computed('fd', words, out)
  for (let i = 1; i < words.length; i++) {
    const text = words[i].literal ? words[i].text : ''
    if (['-x', '--exec', '-X', '--exec-batch'].includes(text)) {
      let end = i + 1
      while (end < words.length && !(words[end].literal && words[end].text === ';')) end++
      const command = words.slice(i + 1, end).map((word) => (word.literal && /\{[/.]*\}|\{\/\.\}/.test(word.text) ? dynamicWord(word.source) : word))
      out.commands.push([...command, dynamicWord('…')])
      i = end
    }
  }
}

function shortOrLong(name: string, short: RegExp, long: Record<string, string>, message: string): Inspector {
  const longCheck = dangerousLong(name, long)
  return (words, out) => {
    longCheck(words, out)
    for (const word of words.slice(1)) if (word.literal && !word.text.startsWith('--') && short.test(word.text)) out.flags.push(message)
  }
}

/** `uniq INPUT OUTPUT` writes its second operand. */
const uniq: Inspector = (words, out) => {
  computed('uniq', words, out)
  let operands = 0
  let options = true
  for (const word of words.slice(1)) {
    if (options && word.text === '--') options = false
    else if (!options || !word.text.startsWith('-') || word.text === '-') operands++
  }
  if (operands >= 2) out.flags.push('uniq writes to its second operand')
}

function pager(spec: PagerOptions): Inspector {
  return (words, out) => {
    computed(spec.name, words, out)
    out.flags.push(...pagerFlags(spec, words))
  }
}

const INSPECTORS: ReadonlyMap<string, Inspector> = new Map<string, Inspector>([
  ['uniq', uniq],
  ['find', find],
  ['gfind', find],
  ['git', git],
  ['sed', sed],
  ['gsed', sed],
  ['awk', awk],
  ['gawk', awk],
  ['mawk', awk],
  ['nawk', awk],
  ['original-awk', awk],
  ['rg', rg],
  ['sort', sort],
  ['tee', tee],
  ['fd', fd],
  ['fdfind', fd],
  [
    'tar',
    (words, out) => {
      computed('tar', words, out)
      out.flags.push(...tarFlags(words))
    },
  ],
  ['man', pager(MAN)],
  ['less', pager(LESS)],
  ['more', pager(MORE)],
  ['zip', shortOrLong('zip', /^-[a-zA-Z]*TT/, { 'unzip-command': 'zip --unzip-command runs a command' }, 'zip -TT runs a command')],
  ['rsync', shortOrLong('rsync', /^-[a-zA-Z]*e/, { rsh: 'rsync --rsh runs a command', 'rsync-path': 'rsync --rsync-path runs a command' }, 'rsync -e runs a command')],
  ['ssh', shortOrLong('ssh', /^-[a-zA-Z]*[oF]/, {}, 'ssh -o/-F can run a local command')],
  ['scp', shortOrLong('scp', /^-[a-zA-Z]*[oFS]/, {}, 'scp -o/-F/-S can run a local command')],
  ['sftp', shortOrLong('sftp', /^-[a-zA-Z]*[oFSD]/, {}, 'sftp -o/-F/-S/-D can run a local command')],
  ['hash', shortOrLong('hash', /^-[a-zA-Z]*p/, {}, 'hash -p changes what a command name runs')],
  ['enable', shortOrLong('enable', /^-[a-zA-Z]*f/, {}, 'enable -f loads a builtin from a file')],
  ['mapfile', shortOrLong('mapfile', /^-[a-zA-Z]*C/, {}, 'mapfile -C runs a callback')],
  ['readarray', shortOrLong('readarray', /^-[a-zA-Z]*C/, {}, 'readarray -C runs a callback')],
  ['complete', shortOrLong('complete', /^-[a-zA-Z]*C/, {}, 'complete -C runs a command')],
  ['compgen', shortOrLong('compgen', /^-[a-zA-Z]*C/, {}, 'compgen -C runs a command')],
  ['bind', shortOrLong('bind', /^-[a-zA-Z]*x/, {}, 'bind -x runs a command')],
  ['tree', shortOrLong('tree', /^-o$/, {}, 'tree -o writes to a file')],
  [
    'shopt',
    (words, out) => {
      if (words.some((word) => !word.literal || word.text === 'expand_aliases')) out.flags.push('shopt expand_aliases lets aliases change what commands run')
    },
  ],
])

/** The executing and writing options of a command, by its base name. */
export function inspect(base: string, words: Word[]): Inspection {
  const out: Inspection = { flags: [], commands: [], scripts: [] }
  INSPECTORS.get(base)?.(words, out)
  return out
}
