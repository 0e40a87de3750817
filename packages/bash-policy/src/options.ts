import type { Word } from './unquote.js'

/** What getopt would be told about a command's options. */
export interface OptionSpec {
  /** Short options without an argument. */
  short?: string
  /** Short options with an argument, attached (`-n5`) or in the next word (`-n 5`). */
  shortArg?: string
  /** Short options whose optional argument can only be attached (`-i.bak`). */
  shortOptional?: string
  long?: readonly string[]
  /** Long options with an argument: `--name=value` or `--name value`. */
  longArg?: readonly string[]
  /** Long options whose optional argument can only follow `=`. */
  longOptional?: readonly string[]
  /** Options end at the first operand (POSIX, and `+` in GNU getopt); otherwise GNU permutes. */
  posix?: boolean
  /** `-5` is an option (nice). */
  numeric?: boolean
}

export interface ParsedOption {
  /** A short letter (`n`) or a full long name (`adjustment`). */
  name: string
  /** The argument, when the option has one. */
  value?: Word
  /** The option as written (`-n5`, `--adj=5`). */
  written: string
}

export interface ScannedOptions {
  options: ParsedOption[]
  operands: Word[]
  /** With `posix`: the index of the first word after the options. */
  end: number
  /** The first option the spec does not know, as written. */
  unknown?: string
}

/**
 * Scans options the way getopt_long does: clusters of short letters, attached or separate
 * arguments, `--name=value`, unique prefixes of long names, `--` ending the options.
 * A word whose value is only known at run time counts as an operand; callers that care treat it
 * as possibly an option.
 */
export function scanOptions(words: readonly Word[], from: number, spec: OptionSpec): ScannedOptions {
  const result: ScannedOptions = { options: [], operands: [], end: words.length }
  const longNames = [...(spec.long ?? []), ...(spec.longArg ?? []), ...(spec.longOptional ?? [])]
  let i = from
  for (; i < words.length; i++) {
    const word = words[i]
    const text = word.text
    if (!word.literal || text === '-' || !text.startsWith('-')) {
      if (spec.posix) break
      result.operands.push(word)
      continue
    }
    if (text === '--') {
      i++
      break
    }
    if (text.startsWith('--')) {
      const eq = text.indexOf('=')
      const given = text.slice(2, eq < 0 ? undefined : eq)
      if (spec.numeric && /^\d+$/.test(given)) {
        result.options.push({ name: '#', written: text })
        continue
      }
      const name = resolveLong(given, longNames)
      if (!name) {
        result.unknown ??= text
        continue
      }
      const option: ParsedOption = { name, written: text }
      if (eq >= 0) option.value = { ...word, text: text.slice(eq + 1) }
      else if (spec.longArg?.includes(name) && i + 1 < words.length) option.value = words[++i]
      result.options.push(option)
      continue
    }
    if (spec.numeric && /^-\d+$/.test(text)) {
      result.options.push({ name: '#', written: text })
      continue
    }
    for (let j = 1; j < text.length; j++) {
      const letter = text[j]
      if (spec.shortArg?.includes(letter)) {
        const rest = text.slice(j + 1)
        const value = rest ? { ...word, text: rest } : words[++i]
        result.options.push({ name: letter, value, written: text })
        break
      }
      if (spec.shortOptional?.includes(letter)) {
        const rest = text.slice(j + 1)
        result.options.push({ name: letter, value: rest ? { ...word, text: rest } : undefined, written: text })
        break
      }
      if (!spec.short?.includes(letter)) result.unknown ??= `-${letter}`
      result.options.push({ name: letter, written: text })
    }
  }
  result.end = Math.min(i, words.length)
  for (; i < words.length; i++) result.operands.push(words[i])
  return result
}

/** getopt_long accepts any unambiguous prefix of a long option. */
export function resolveLong(given: string, names: readonly string[]): string | undefined {
  if (names.includes(given)) return given
  if (!given) return undefined
  const candidates = names.filter((name) => name.startsWith(given))
  return candidates.length === 1 ? candidates[0] : undefined
}

export function hasOption(scan: ScannedOptions, ...names: string[]): boolean {
  return scan.options.some((option) => names.includes(option.name))
}

export function optionValues(scan: ScannedOptions, ...names: string[]): Word[] {
  return scan.options.filter((option) => names.includes(option.name) && option.value).map((option) => option.value!)
}
