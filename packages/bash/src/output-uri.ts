import type { OutputStream } from './types.js'

/**
 * The name of a launch's complete output wherever it is offered by URI (the MCP server's resources,
 * `structuredContent.fullOutput`): `dsh-bash://output/<id>/<stream>`, the id percent-encoded.
 * It names; it grants nothing: every reader fences by owner (`readFullOutput`).
 */
export const FULL_OUTPUT_URI_PREFIX = 'dsh-bash://output/'

export function fullOutputUri(id: string, stream: OutputStream): string {
  return `${FULL_OUTPUT_URI_PREFIX}${encodeURIComponent(id)}/${stream}`
}

/**
 * The id and stream a full-output URI names, and its optional byte range (`?offset=N&length=N`);
 * undefined for anything else (another scheme, a third path segment, a bad stream or number).
 */
export function parseFullOutputUri(uri: string): { id: string; stream: OutputStream; offset?: number; length?: number } | undefined {
  if (!uri.startsWith(FULL_OUTPUT_URI_PREFIX)) return undefined
  const [path, query = ''] = uri.slice(FULL_OUTPUT_URI_PREFIX.length).split('?', 2) as [string, string?]
  const parts = path.split('/')
  if (parts.length !== 2) return undefined
  const [rawId, stream] = parts
  if (stream !== 'stdout' && stream !== 'stderr') return undefined
  let id: string
  try {
    id = decodeURIComponent(rawId)
  } catch {
    return undefined
  }
  if (id === '') return undefined
  const out: { id: string; stream: OutputStream; offset?: number; length?: number } = { id, stream }
  for (const pair of query === '' ? [] : query.split('&')) {
    const [key, value] = pair.split('=', 2)
    if (key !== 'offset' && key !== 'length') return undefined
    if (value === undefined || !/^\d{1,15}$/.test(value)) return undefined
    out[key] = Number(value)
  }
  return out
}
