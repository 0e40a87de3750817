import type { SyntaxNode } from './parser.js'
import { wordsOf } from './unquote.js'
import { isHarmlessTarget } from './wrappers.js'

export const REDIRECTS = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect'])

/** The body of a heredoc as bash reads it, and whether its delimiter was quoted (no expansion). */
export function heredocText(redirect: SyntaxNode, src: string): { quoted: boolean; text: string } | undefined {
  const start = redirect.children.find((child) => child.type === 'heredoc_start')
  const body = redirect.children.find((child) => child.type === 'heredoc_body')
  const end = redirect.children.find((child) => child.type === 'heredoc_end')
  if (!body) return undefined
  // The grammar's body can start after the indentation of its first line.
  let from = body.start
  while (from > 0 && (src[from - 1] === ' ' || src[from - 1] === '\t')) from--
  const quoted = start ? /['"\\]/.test(src.slice(start.start, start.end)) : false
  return { quoted, text: src.slice(from, end ? end.start : body.end) }
}

export function operatorOf(redirect: SyntaxNode, src: string): string {
  const operator = redirect.children.find((child) => !child.named && /^[<>&|]+-?$/.test(child.type))
  return operator ? src.slice(operator.start, operator.end) : ''
}

/** The harmful output targets of a redirection: anything but /dev/null, &1, &2 or a closed fd. */
export function outputTargets(redirect: SyntaxNode, src: string): string[] {
  if (redirect.type === 'heredoc_redirect') {
    return redirect.children.filter((child) => child.type === 'file_redirect').flatMap((child) => outputTargets(child, src))
  }
  if (redirect.type !== 'file_redirect') return []
  const operator = operatorOf(redirect, src)
  if (!operator.includes('>') || operator.endsWith('-')) return []
  const destination = redirect.children.filter((child) => child.named && child.type !== 'file_descriptor')
  if (!destination.length) return []
  const words = wordsOf(destination, src)
  const written = src.slice(destination[0].start, destination[destination.length - 1].end)
  if (words.length !== 1) return [written]
  const [word] = words
  if (operator === '>&' && word.literal && ['1', '2', '-'].includes(word.text)) return []
  if (isHarmlessTarget(word)) return []
  return [operator === '>&' && word.literal && /^\d+$/.test(word.text) ? `&${word.text}` : written]
}
