import { createRequire } from 'node:module'
import { Language, Parser, type TreeCursor } from 'web-tree-sitter'
import { policyErrors } from './errors.js'

/**
 * A plain copy of a tree-sitter node. The policy walks plain objects instead of web-tree-sitter
 * nodes: every property of those is a call into wasm, and the tree must be freed right after
 * parsing, so the rest of the code never holds wasm memory.
 */
export interface SyntaxNode {
  type: string
  named: boolean
  /** Inserted by error recovery: the parser expected a token that is not in the text. */
  missing: boolean
  /** UTF-16 offsets into the parsed text (web-tree-sitter parses JS strings as UTF-16). */
  start: number
  end: number
  children: SyntaxNode[]
}

export interface ParsedScript {
  root: SyntaxNode
  hasError: boolean
}

let loading: Promise<Parser> | undefined

/**
 * Loads web-tree-sitter and tree-sitter-bash's bundled wasm once; every caller shares the promise.
 * A failed load is forgotten so that a later call can try again.
 */
export function loadParser(): Promise<Parser> {
  loading ??= (async () => {
    await Parser.init()
    const require = createRequire(import.meta.url)
    const language = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'))
    const parser = new Parser()
    parser.setLanguage(language)
    return parser
  })()
  loading.catch(() => {
    loading = undefined
  })
  return loading
}

/** Thrown when parsing runs past its deadline (error recovery on hostile input can be slow). */
export class ParseTimeout extends Error {}

/** Parses a script into a plain tree and frees the wasm tree at once. */
export function parseScript(parser: Parser, text: string, deadline = Infinity): ParsedScript {
  const tree = parser.parse(text, null, deadline === Infinity ? undefined : { progressCallback: () => performance.now() > deadline })
  if (!tree) {
    if (performance.now() > deadline) throw new ParseTimeout()
    throw policyErrors.noTree()
  }
  try {
    const cursor = tree.walk()
    try {
      return { root: copyTree(cursor), hasError: tree.rootNode.hasError }
    } finally {
      cursor.delete()
    }
  } finally {
    tree.delete()
  }
}

// Iterative, because a 16 KiB command of nested parentheses is thousands of levels deep.
function copyTree(cursor: TreeCursor): SyntaxNode {
  const root = current(cursor)
  const stack: SyntaxNode[] = [root]
  for (;;) {
    if (cursor.gotoFirstChild()) {
      const node = current(cursor)
      stack[stack.length - 1].children.push(node)
      stack.push(node)
      continue
    }
    for (;;) {
      if (stack.length === 1) return root
      stack.pop()
      if (cursor.gotoNextSibling()) {
        const node = current(cursor)
        stack[stack.length - 1].children.push(node)
        stack.push(node)
        break
      }
      cursor.gotoParent()
    }
  }
}

function current(cursor: TreeCursor): SyntaxNode {
  return {
    type: cursor.nodeType,
    named: cursor.nodeIsNamed,
    missing: cursor.nodeIsMissing,
    start: cursor.startIndex,
    end: cursor.endIndex,
    children: [],
  }
}
