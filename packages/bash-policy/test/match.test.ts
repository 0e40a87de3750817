import { describe, expect, it } from 'vitest'
import { compilePattern, matchPattern, type MatchResult } from '../src/match.js'
import type { Word } from '../src/unquote.js'

/** Words as the extractor gives them: `$x`-like words are dynamic, unquoted `*?[` are globs. */
function words(...texts: string[]): Word[] {
  return texts.map((text) =>
    text.startsWith('$')
      ? { text, literal: false, glob: false, source: text }
      : { text, literal: true, glob: /[*?]|\[.+\]/.test(text), source: text },
  )
}

function allow(pattern: string, ...command: string[]): MatchResult {
  return matchPattern(compilePattern(pattern), words(...command), 'allow')
}

function restrict(pattern: string, ...command: string[]): MatchResult {
  return matchPattern(compilePattern(pattern), words(...command), 'restrict')
}

describe('patterns', () => {
  it('a final " *" matches zero or more further words', () => {
    expect(allow('ls *', 'ls')).toBe('yes')
    expect(allow('ls *', 'ls', '-la', '/')).toBe('yes')
    expect(allow('git push *', 'git', 'push')).toBe('yes')
    expect(allow('git push *', 'git', 'pull')).toBe('no')
  })

  it('words must be equal, and the command has no more words than the pattern', () => {
    expect(allow('git status', 'git', 'status')).toBe('yes')
    expect(allow('git status', 'git', 'status', '--porcelain')).toBe('no')
    expect(allow('git status', 'git')).toBe('no')
    expect(allow('git status', 'git', 'Status')).toBe('no')
  })

  it('a * inside a word matches any characters of that word only', () => {
    expect(allow('npm run test:*', 'npm', 'run', 'test:unit')).toBe('yes')
    expect(allow('npm run test:*', 'npm', 'run', 'test:')).toBe('yes')
    expect(allow('npm run test:*', 'npm', 'run', 'test:unit', '--watch')).toBe('no')
    expect(allow('npm run test:*', 'npm', 'run', 'build')).toBe('no')
    expect(allow('*.sh', 'build.sh')).toBe('yes')
    expect(allow('git -c * log', 'git', '-c', 'a=b', 'log')).toBe('yes')
    expect(allow('git -c * log', 'git', '-c', 'log')).toBe('no')
  })

  it('other characters are literal', () => {
    expect(allow('a.b', 'axb')).toBe('no')
    expect(allow('x+ (y)', 'x+', '(y)')).toBe('yes')
    expect(allow('[ *', '[', '-f', 'x', ']')).toBe('yes')
  })

  it('the pattern "*" alone matches every command', () => {
    expect(allow('*', 'anything', 'at', 'all')).toBe('yes')
    expect(allow('*', '/usr/bin/x')).toBe('yes')
  })

  it('whitespace in a pattern is only a separator', () => {
    expect(allow('  git   status ', 'git', 'status')).toBe('yes')
    expect(compilePattern('ls\t*')).toMatchObject({ rest: true, words: ['ls'] })
  })

  it('a path-qualified name is matched by its basename for deny and ask rules', () => {
    expect(restrict('sudo *', '/usr/bin/sudo', 'ls')).toBe('yes')
    expect(restrict('sed *', './sed', 'x')).toBe('yes')
    expect(restrict('rm -rf *', '../bin/rm', '-rf', 'x')).toBe('yes')
  })

  it('a path-qualified name is never allowed by a rule for the plain name', () => {
    expect(allow('ls *', '/bin/ls')).toBe('no')
    expect(allow('sed *', './sed', 'x')).toBe('no')
    expect(allow('./gradlew *', './gradlew', 'build')).toBe('yes')
    expect(allow('*/gradlew *', 'sub/gradlew')).toBe('yes')
  })

  it('run-time words are only consumed by a final " *" for "yes"', () => {
    expect(allow('echo *', 'echo', '$HOME')).toBe('yes')
    expect(allow('cat *', 'cat', '*.ts')).toBe('yes')
    // $X may be empty: it could match, which is not enough to allow.
    expect(allow('git status', 'git', 'status', '$X')).toBe('maybe')
    expect(allow('git status', 'git', '$X')).toBe('maybe')
    expect(allow('git stat?s', 'git', 'stat?s')).toBe('maybe')
  })

  it('a run-time word may stand for any number of words: "maybe"', () => {
    expect(restrict('rm -rf *', 'rm', '$FLAGS', 'build')).toBe('maybe')
    expect(restrict('rm -rf *', 'rm', '-r?', 'build')).toBe('maybe')
    expect(restrict('git push *', 'git', '$SUB')).toBe('maybe')
    expect(restrict('git push --force *', 'git', '$A', 'main')).toBe('maybe')
    expect(restrict('git push *', 'git', 'pull', '$X')).toBe('no')
    expect(restrict('rm -rf *', 'echo', '$X')).toBe('no')
    expect(restrict('git status', 'git', 'status', '$X')).toBe('maybe')
    expect(restrict('git status', 'git', 'status', 'x', '$X')).toBe('no')
  })
})
