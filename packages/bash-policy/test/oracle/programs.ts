import fc from 'fast-check'

/**
 * Generators of the programs' own syntax, for the readers of issue 25: sed scripts, awk programs,
 * tar option bundles and less options, built from the pieces where readers went wrong (bracket
 * expressions holding the delimiter, custom delimiters, flags after blanks, labels, text commands,
 * comments holding quotes, backslash-newline, regexes with `/` in brackets, division against
 * regex, old-style tar bundles, abbreviations, lesskey files…), mixed with everyday pieces so that
 * many lines are allowed and really run. Every word is literal and single-quoted, so `argv` is
 * exactly what the program receives.
 */
export interface ProgramLine {
  program: 'sed' | 'awk' | 'tar' | 'less'
  /** The words the program gets, argv[0] included. */
  argv: string[]
  line: string
}

/** Single-quotes a word unless it is plain. */
export function quote(word: string): string {
  return /^[A-Za-z0-9_./:=+,@%-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

const toLine = (program: ProgramLine['program'], argv: string[], suffix = ''): ProgramLine => ({ program, argv, line: argv.map(quote).join(' ') + suffix })

// ------------------------------------------------------------------------------------------ sed

const delimiter = fc.constantFrom('/', '/', '|', ',', '#', ' ', 'x', ';', 'n', '[', ']', '\\', ':', 'e', 'w')

/** A regex for delimiter `d`: brackets that hold it, escapes, classes. */
const sedRegex = (d: string) =>
  fc
    .array(
      fc.constantFrom(
        'a', '.*', '^', '$', 'x\\+', `[[:alpha:]${d}]*`, `[[:digit:][:alpha:]${d}]*`, `[[.x.]${d}]*`, `[[=x=]${d}]*`, `[]${d}]*`, `[^]${d}]`,
        `[${d}]*`, `\\${d}`, '\\n', '[a-z]', '[[:space:]]', '\\(a\\)', '[[:alpha:]', '[.]', '[:]', `[[:a${d}:]]`, '[[.', ']',
      ),
      { minLength: 1, maxLength: 3 },
    )
    .map((parts) => parts.join(''))

const sedReplacement = fc.constantFrom('b', 'touch m', '&', '\\1', 'touch\\ m', 'x\\\ny', '')

const sedFlags = fc.constantFrom('', '', 'g', 'p', 'e', 'ge', ' e', ' g e', 'w m', ' w m', 'gw m', 'I', '2', 'w /dev/stdout', ';e', ' ; e', '}e')

const sedSubstitute = delimiter.chain((d) =>
  fc.tuple(sedRegex(d), sedReplacement, sedFlags).map(([re, rep, flags]) => `s${d}${re}${d}${rep}${d}${flags}`),
)

/** The shape of the round-3 attack: a bracket holding the delimiter, then text a reader may take for commands. */
const sedBracketTrick = fc
  .tuple(
    fc.constantFrom('|', ',', '#', ':', '_'),
    fc.constantFrom('[[:alpha:]D]*', '[[:digit:][:alpha:]D]*', '[[.x.]D]*', '[[=x=]D]*', '[]D]*', '[^]D]*', '[[:alpha:]D]\\+'),
    fc.constantFrom('touch m', 'b x', '# x', ':x', 'touch\\ m'),
    fc.constantFrom('e', 'w m', 'pe', ' e', 'gw m'),
  )
  .map(([d, bracket, rep, flags]) => `s${d}${bracket.replace('D', d)}${d}${rep}${d}${flags}`)

const sedAddress = fc.oneof(
  fc.constantFrom('', '', '1', '$', '2,3', '0~2', '1,+1', '$!', '/a/I,', '1!'),
  delimiter.chain((d) => sedRegex(d).map((re) => (d === '/' ? `/${re}/` : `\\${d}${re}${d}`))),
)

const sedCommand = fc.oneof(
  { weight: 4, arbitrary: sedSubstitute },
  { weight: 2, arbitrary: sedBracketTrick },
  { weight: 4, arbitrary: fc.constantFrom('p', 'd', 'n', 'N', 'P', 'D', 'h', 'H', 'g', 'G', 'x', '=', 'l', 'q', 'z', 'F', 'y/ab/ba/', 'y|a|b|') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'e touch m', 'e', 'w m', 'W m', 'r a.txt', ':x e touch m', 'bx e touch m', 'b', 'bx', ':x', 't x', 'T', 'a text', 'a\\\ntouch m',
      'a\\\\\n1e touch m', 'i\\', 'c foo\\\ne touch m', '# comment " \' e', 'v', 'v 4.2', '{p}', '{ s/a/b/e }', '}', '{', 'k', '1e touch m',
    ),
  },
)

const sedScript = fc
  .array(fc.tuple(sedAddress, sedCommand), { minLength: 1, maxLength: 2 })
  .chain((commands) => fc.constantFrom(';', '\n', ' ; ', '\n').map((sep) => commands.map(([a, c]) => a + c).join(sep)))

const sedOptions = fc.subarray(['-n', '-E', '-r', '--posix', '-s', '-z', '--debug', '-u'], { maxLength: 2 })

export const sedLine: fc.Arbitrary<ProgramLine> = fc
  .tuple(sedOptions, fc.array(sedScript, { minLength: 1, maxLength: 2 }), fc.boolean(), fc.constantFrom('none', 'before', 'after'))
  .map(([options, scripts, useE, sandbox]) => {
    const script = useE || scripts.length > 1 ? scripts.flatMap((s) => ['-e', s]) : scripts
    const argv = ['sed', ...(sandbox === 'before' ? ['--sandbox'] : []), ...options, ...script, ...(sandbox === 'after' ? ['--sandbox'] : []), 'a.txt']
    return toLine('sed', argv)
  })

// ------------------------------------------------------------------------------------------ awk

const awkAction = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '{ print $1 }', '{ print }', '{ n++ } END { print n }', '{ s += $2 } END { print s/NR }', '{ print length($0) }', '{ print "a|b", "system(" }',
      '{ print (1 > 2) }', '{ print $1 > "/dev/stderr" }', '{ getline l < "a.txt"; print l }', '{ print $NF / 2 }', '{ print substr($0, 1, 2) }',
      '{ a[$1] += 1 } END { for (k in a) print k, a[k] }', '{ x = "\\"" }', '{ print "# not a comment" }', '{ print "/[/]/" }',
    ),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '{ print "x" > "m" }', '{ print "x" \\\n> "m" }', '{ printf("%s", $1) > "m" }', '{ print > "/dev/stdout" "x" }', '{ system("touch m") }',
      '{ system\\\n("touch m") }', '{ print | "sh" }', '{ "touch m" | getline }', '{ print "touch m" | "sh" }', '{ print length /x/ 1 }',
      '{ if (1) /x/ }',
    ),
  },
)
const awkPattern = fc.constantFrom('', '', '', 'NR==1 ', '/a/ ', '/[/]"/ ', '/[/]/ ', '$1 > 5 ', 'length > 1 ', '!seen[$0]++ ', 'BEGIN ', 'END ', '/a"/ ', '/[[:alpha:]]/ ')
const awkNoise = fc.constantFrom('', '', '', '', '# say "hi\n', '# "\n', '\n', '# a\\\n', ' \\\n')

export const awkLine: fc.Arbitrary<ProgramLine> = fc
  .tuple(
    fc.constantFrom('awk', 'awk', 'mawk', 'gawk', 'original-awk', 'busybox awk'),
    fc.array(fc.tuple(awkNoise, awkPattern, awkAction), { minLength: 1, maxLength: 2 }),
    fc.constantFrom('', '', '', '', '"', '" ; system("touch m") }', ' # " \n{ system("touch m") } # "'),
  )
  .map(([awk, rules, tail]) => {
    const program = rules.map(([noise, pattern, action]) => noise + pattern + action).join('\n') + tail
    return toLine('awk', [...awk.split(' '), program, 'a.txt'])
  })

// ------------------------------------------------------------------------------------------ tar

const tarMode = fc.constantFrom('t', 't', 'tv', 'x', 'xO', 'xO', 'Ox', 'c', 'r', 'u', 'A', 'd')
const tarExtra = fc.subarray(
  [
    '-v', '-O', '--to-stdout', '-z', '-C', 'src', '--wildcards', '--strip-components=1', '--to-command=touch m', '--index-file=m', '--volno-file=m',
    '-g', 'snap', '--checkpoint=1', '--checkpoint-action=exec=touch m', '-I', 'gzip', '--use-compress-program=gzip', '--force-local',
    '--overwrite', '--to-c=touch m', '--verbo', '--exclude=x', '-k', '-m', '--remove-files', '--delete', '-T', 'a.txt', '--occurrence',
  ],
  { maxLength: 3 },
)
const tarArchive = fc.constantFrom('a.tar', 'a.tar', 'a.tar.gz', 'm.tar', 'host:a.tar', 'src/../a.tar')

export const tarLine: fc.Arbitrary<ProgramLine> = fc
  .tuple(fc.constantFrom('old', 'dash', 'split', 'long'), tarMode, tarExtra, tarArchive, fc.constantFrom('', 'a.txt', 'd/f'))
  .map(([style, mode, extra, archive, member]) => {
    const letters = mode.split('')
    let head: string[]
    if (style === 'old') head = [`${mode}f`, archive]
    else if (style === 'dash') head = [`-${mode}f`, archive]
    else if (style === 'split') head = [...letters.map((l) => `-${l}`), '-f', archive]
    else {
      const names: Record<string, string> = { t: '--list', v: '--verbose', x: '--extract', O: '--to-stdout', c: '--create', r: '--append', u: '--update', A: '--catenate', d: '--diff' }
      head = [...letters.map((l) => names[l]), `--file=${archive}`]
    }
    return toLine('tar', ['tar', ...head, ...extra, ...(member ? [member] : [])])
  })

// ----------------------------------------------------------------------------------------- less

export const lessLine: fc.Arbitrary<ProgramLine> = fc
  .tuple(
    fc.subarray(
      [
        '-N', '-S', '-R', '-o', 'm', '-Om', '--log-file=m', '--LOG-FILE=m', '-k', 'keys', '--lesskey-src=keys', '--lesskey-s=keys', '+G',
        '+/alpha', '+!touch m', '+|touch m', '-p', 'alpha', '-p', '-om', '-+S', '--no-lessopen', '-t', 'x', '--log=m', '-No', 'm', '-s',
        '+/x\n!touch m', '-Nk', 'keys', '-F', '-X', '--quit-if-one-screen',
      ],
      { maxLength: 3 },
    ),
    fc.constantFrom('a.txt', 'notes.txt'),
    fc.boolean(),
  )
  .map(([options, file, piped]) => {
    const line = toLine('less', ['less', ...options, ...(piped ? [] : [file])])
    return piped ? { ...line, line: `cat ${file} | ${line.line}` } : line
  })

export const programLine = fc.oneof(sedLine, awkLine, tarLine, lessLine)
