import { beforeAll, describe, expect, it } from 'vitest'
import type { Parser } from 'web-tree-sitter'
import { extract, loadParser, type CommandFinding } from '../src/index.js'
import { sedEffects } from '../src/sed.js'
import { awkEffects, lexAwk } from '../src/awk.js'
import { decodeAnsiC } from '../src/unquote.js'

let parser: Parser
beforeAll(async () => {
  parser = await loadParser()
})

/** The words of the first command, `<source>` for run-time words. */
function words(line: string): string[] {
  // Commands inside substitutions come first; the line's own command is the last one.
  const command = extract(parser, line, 50).filter((finding): finding is CommandFinding => finding.kind === 'command').at(-1)
  return command!.words.map((word) => (word.literal ? word.text : `<${word.source}>`))
}

describe('quote removal', () => {
  it('removes quotes and backslashes the way bash does', () => {
    expect(words(`echo a"b"'c' "x\\"y" 'x\\y' \\$HOME "\\$HOME" "a\\qb"`)).toEqual(['echo', 'abc', 'x"y', 'x\\y', '$HOME', '$HOME', 'a\\qb'])
    expect(words(`echo '' "" x''y`)).toEqual(['echo', '', '', 'xy'])
    expect(words(`e\\c\\h\\o \\ a b\\ c \\\\ d`)).toEqual(['echo', ' a', 'b c', '\\', 'd'])
  })

  it('decodes ANSI-C strings and $"…"', () => {
    expect(words(`echo $'a\\tb' $'\\x41\\101\\u00e9\\U0001F600' $'it\\'s' $"tr"`)).toEqual(['echo', 'a\tb', 'AAé😀', "it's", 'tr'])
    expect(decodeAnsiC('\\cA\\e\\z')).toBe('\x01\x1b\\z')
  })

  it('removes line continuations, also inside a word', () => {
    expect(words('ec\\\nho a\\\nb "c\\\nd"')).toEqual(['echo', 'ab', 'cd'])
    expect(words("echo 'a\\\nb'")).toEqual(['echo', 'a\\\nb'])
  })

  it('expands braces but not quoted ones', () => {
    expect(words('echo a{b,c}d {1..3} {01..03} {a..e..2} {x} \\{a,b\\} "{a,b}" {a,{b,c}}')).toEqual([
      'echo', 'abd', 'acd', '1', '2', '3', '01', '02', '03', 'a', 'c', 'e', '{x}', '{a,b}', '{a,b}', 'a', 'b', 'c',
    ])
  })

  it('keeps expansions as run-time words', () => {
    expect(words('echo $x "${y}z" $(date) `id` $((1+2)) <(ls) a$b')).toEqual([
      'echo', '<$x>', '<"${y}z">', '<$(date)>', '<`id`>', '<$((1+2))>', '<<(ls)>', '<a$b>',
    ])
  })

  it('marks unquoted globs', () => {
    const command = extract(parser, `ls *.ts '*.js' a?c [ab] "[x]" x[`, 50)[0] as CommandFinding
    expect(command.words.map((word) => word.glob)).toEqual([false, true, false, true, true, false, false])
  })
})

describe('sed scripts', () => {
  it.each([
    ['p', { runs: false, writes: [] }],
    ['s/a/b/g; 1,5d; /x/,/y/p', { runs: false, writes: [] }],
    ['s/a/b/e', { runs: true, writes: [] }],
    ['s|a|b|ge', { runs: true, writes: [] }],
    ['1e date', { runs: true, writes: [] }],
    ['$!N; e', { runs: true, writes: [] }],
    ['w out.txt', { runs: false, writes: ['out.txt'] }],
    ['s/a/b/w out.txt', { runs: false, writes: ['out.txt'] }],
    ['/re/W log', { runs: false, writes: ['log'] }],
    ['s/[/]/x/', { runs: false, writes: [] }],
    ['y/abc/xyz/', { runs: false, writes: [] }],
    ['a\\\nappended e text', { runs: false, writes: [] }],
    ['/start/,/end/ { s/x/y/; p }', { runs: false, writes: [] }],
    ['\\,x,d', { runs: false, writes: [] }],
    ['# comment e\np', { runs: false, writes: [] }],
  ])('%j', (script, effects) => {
    expect(sedEffects(script)).toEqual(effects)
  })

  it('reads the scripts of several -e in order, with --sandbox only after it', () => {
    expect(sedEffects([{ text: 'a\\', sandbox: false }, { text: '1e date', sandbox: false }])).toEqual({ runs: false, writes: [] })
    expect(sedEffects([{ text: 'a\\\\', sandbox: false }, { text: '1e date', sandbox: false }])).toEqual({ runs: true, writes: [] })
    expect(sedEffects([{ text: '1e date', sandbox: false }, { text: 'w m', sandbox: true }])).toEqual({ runs: true, writes: [] })
  })

  it.each([
    ['s|[[:alpha:]|]*|x|e', true],
    ['s|[[.|.]|]*|x|e', true],
    ['s|[]|]|x|e', true],
    ['s|[^]|]|x|e', true],
    ['s[a[b[e', true],
    ['s\\a\\b\\e', true],
    ['s/a/b/ g e', true],
    [':a e', true],
    ['s|[[:alpha:]|]*|x|', false],
  ])('the s flags after %j are found (runs: %s)', (script, runs) => {
    expect(sedEffects(script)).toEqual({ runs, writes: [] })
  })

  it('an unreadable script says so', () => {
    expect(sedEffects('s/a/b').unclear).toBe('an s command is not terminated')
    expect(sedEffects('k').unclear).toBe('unknown sed command "k"')
  })
})

describe('the awk lexer', () => {
  it.each([
    ['{ print length /x/ }', 'a "/" after "length" is a regex for some awks and a division for others'],
    ['{ if (x) /y/ }', 'a "/" after ")" is a regex for some awks and a division for others'],
    ['/[/]/', 'a bracket expression in a regex holds "/", "\\" or "["'],
    ['/[]a]/', 'a bracket expression in a regex starts with "]"'],
    ['{ print "a\\\nb" }', 'a string continues over a line break'],
    ['# x\\\n{ system("x") }', 'a comment ends in a backslash'],
    ["{ print 'x' }", 'the character "\'" is not awk'],
  ])('%j is unclear', (program, why) => {
    expect(() => lexAwk(program)).toThrow(why)
  })

  it('lexes comments, strings, continuations, regexes and divisions', () => {
    const tokens = lexAwk('# "q\n/[[:alpha:]x]+/ { s += $1 / 2 } \\\nEND { print "a\\"b" }')
    expect(tokens.map((token) => `${token.kind}:${token.text}`)).toEqual([
      'newline:\n', 'regex:[[:alpha:]x]+', 'op:{', 'name:s', 'op:+=', 'op:$', 'number:1', 'op:/', 'number:2', 'op:}', 'name:END', 'op:{',
      'name:print', 'string:a\\"b', 'op:}',
    ])
  })
})

describe('awk programs', () => {
  it.each([
    ['{ print $1 }', []],
    ['$3 > 5 { print $1 }', []],
    ['/a|b/ { n++ } END { print n }', []],
    ['{ print "a|b", "system(" }', []],
    ['NR > 1 && $2 != "x" || /y/', []],
    ['{ print > "/dev/stderr" }', []],
    ['BEGIN { system("ls") }', ['awk system() runs a command']],
    ['{ print | "sort" }', ['awk pipes run commands']],
    ['{ print $1 >> "out" }', ['awk print > writes to a file']],
    ['BEGIN { @f() }', ['awk @-directives and indirect calls can run anything']],
  ])('%j', (program, flags) => {
    expect(awkEffects('awk', program)).toEqual(flags)
  })
})
