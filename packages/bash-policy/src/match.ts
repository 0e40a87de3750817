import type { Word } from './unquote.js'

/**
 * A rule pattern: words separated by whitespace. A last word `*` matches zero or more further
 * words; a `*` inside a word matches any characters within that word; other words must be equal.
 */
export interface Pattern {
  /** The pattern as written in the policy. */
  source: string
  words: readonly WordPattern[]
  /** The pattern ends with the word `*`. */
  rest: boolean
}

type WordPattern = string | RegExp

/** `yes`: it matches. `maybe`: it could match, depending on what run-time expansions yield. */
export type MatchResult = 'yes' | 'maybe' | 'no'

export function compilePattern(source: string): Pattern {
  const parts = source.trim().split(/\s+/).filter(Boolean)
  const rest = parts[parts.length - 1] === '*'
  if (rest) parts.pop()
  return { source, words: parts.map(compileWord), rest }
}

function compileWord(word: string): WordPattern {
  if (!word.includes('*')) return word
  return new RegExp(`^${word.split('*').map(escapeRegExp).join('[\\s\\S]*')}$`)
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')
}

function wordMatches(pattern: WordPattern, text: string): boolean {
  return typeof pattern === 'string' ? pattern === text : pattern.test(text)
}

/** A word bash may still change: an expansion, or a glob that may become file names. */
function isWild(word: Word): boolean {
  return !word.literal || word.glob
}

/**
 * Matches a command against a pattern.
 *
 * In `allow` mode a path-qualified name (`/usr/bin/ls`, `./ls`) only matches a pattern whose first
 * word is a path too: `ls *` never allows `./ls`. In `restrict` mode (deny and ask rules) the
 * basename matches as well, so `sudo *` catches `/usr/bin/sudo`.
 *
 * A wild word (an expansion or a glob) can only be consumed by a final ` *` for `yes`; for `maybe`
 * it can stand for any number of words.
 */
export function matchPattern(pattern: Pattern, words: readonly Word[], mode: 'allow' | 'restrict'): MatchResult {
  if (!words.length) return 'no'
  const name = words[0].text
  const names = [name]
  if (name.includes('/')) {
    if (mode === 'restrict') names.push(name.slice(name.lastIndexOf('/') + 1))
    else {
      const first = pattern.words[0]
      if (first !== undefined && !(typeof first === 'string' ? first.includes('/') : first.source.includes('/'))) return 'no'
    }
  }
  let best: MatchResult = 'no'
  for (const candidate of names) {
    const list = [{ ...words[0], text: candidate }, ...words.slice(1)]
    const result = matchWords(pattern, list)
    if (result === 'yes') return 'yes'
    if (result === 'maybe') best = 'maybe'
  }
  return best
}

function matchWords(pattern: Pattern, words: readonly Word[]): MatchResult {
  if (exact(pattern, words)) return 'yes'
  return words.some(isWild) && possible(pattern, words) ? 'maybe' : 'no'
}

function exact(pattern: Pattern, words: readonly Word[]): boolean {
  const fixed = pattern.words
  if (words.length < fixed.length || (!pattern.rest && words.length > fixed.length)) return false
  for (let i = 0; i < fixed.length; i++) {
    if (isWild(words[i]) || !wordMatches(fixed[i], words[i].text)) return false
  }
  return true
}

/** Whether some run-time value of the wild words makes the pattern match. */
function possible(pattern: Pattern, words: readonly Word[]): boolean {
  const fixed = pattern.words
  const k = fixed.length
  // reachable[j]: the words so far can produce exactly pattern words 0..j-1.
  let reachable = new Array<boolean>(k + 1).fill(false)
  reachable[0] = true
  for (const word of words) {
    const next = new Array<boolean>(k + 1).fill(false)
    let seen = false
    for (let j = 0; j <= k; j++) {
      if (isWild(word)) {
        // Any number of words: every later position is reachable.
        seen ||= reachable[j]
        if (seen) next[j] = true
      } else if (reachable[j]) {
        if (j < k && wordMatches(fixed[j], word.text)) next[j + 1] = true
        if (j === k && pattern.rest) next[k] = true
      }
    }
    reachable = next
  }
  return reachable[k]
}
