import { TextDecoder } from 'node:util'
import { BASH_ERROR, type BashExecutor, FULL_OUTPUT_URI_PREFIX, fullOutputUri, hasCode, MAX_FULL_OUTPUT_READ, parseFullOutputUri } from '@deepseek-ai/dsh-bash'
import { type ListResourcesResult, type ListResourceTemplatesResult, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js'

/** MCP's error code for a resource that does not exist (spec: Resources, Error Handling). */
export const RESOURCE_NOT_FOUND = -32002

/** The resource template of complete outputs; `offset` and `length` are bytes. */
export const FULL_OUTPUT_TEMPLATE = `${FULL_OUTPUT_URI_PREFIX}{id}/{stream}{?offset,length}`

/**
 * A session's complete outputs as MCP resources: `dsh-bash://output/<run or task id>/<stream>`,
 * optionally `?offset=N&length=N` (bytes), read through the executor (`readFullOutput`) with the
 * session's owner token, so another session reads nothing and learns nothing (the same error for
 * an unknown and a foreign output). A resource lives as long as the executor keeps that output.
 */
export class FullOutputResources {
  constructor(
    private readonly executor: () => Promise<BashExecutor | undefined>,
    private readonly owner: string,
  ) {}

  templates(): ListResourceTemplatesResult {
    return {
      resourceTemplates: [
        {
          uriTemplate: FULL_OUTPUT_TEMPLATE,
          name: 'full-output',
          title: 'Complete output of a command',
          description:
            'The complete stdout or stderr of a background task (bash-N) or of a cut foreground result (the run id in its structuredContent.fullOutput), as the command printed it; offset and length select bytes. An interactive task\'s stdout is its raw terminal stream.',
          mimeType: 'text/plain',
        },
      ],
    }
  }

  async list(): Promise<ListResourcesResult> {
    const bash = await this.executor()
    return {
      resources: (bash?.fullOutputs(this.owner) ?? []).map((output) => ({
        uri: fullOutputUri(output.id, output.stream),
        name: `${output.id} ${output.stream}`,
        mimeType: 'text/plain',
        size: output.size,
      })),
    }
  }

  /**
   * The bytes a URI names: text when they are valid UTF-8, else a base64 blob (a range may cut a
   * character). `_meta["dsh-bash"]` says which bytes these are: `{offset, length, size, complete}`.
   */
  async read(uri: string): Promise<ReadResourceResult> {
    const parsed = parseFullOutputUri(uri)
    if (!parsed) throw notFound(uri)
    const bash = await this.executor()
    if (!bash) throw notFound(uri)
    const offset = parsed.offset ?? 0
    let read
    try {
      read = bash.readFullOutput({ id: parsed.id, stream: parsed.stream }, { offset, length: parsed.length ?? MAX_FULL_OUTPUT_READ }, this.owner)
    } catch (error) {
      if (hasCode(error, BASH_ERROR.noFullOutput)) throw notFound(uri)
      throw error
    }
    const data = Buffer.from(read.data)
    const text = utf8(data)
    const content = text === undefined ? { uri, mimeType: 'application/octet-stream', blob: data.toString('base64') } : { uri, mimeType: 'text/plain', text }
    return { contents: [content], _meta: { 'dsh-bash': { offset, length: data.length, size: read.size, complete: read.complete } } }
  }
}

/** The JSON-RPC error the SDK sends for it: `code` and `message` as they are (McpError would prefix its code twice). */
function notFound(uri: string): Error & { code: number } {
  return Object.assign(new Error(`resource not found: ${uri}`), { code: RESOURCE_NOT_FOUND })
}

const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The bytes as text when they are valid UTF-8 without NUL; else undefined. */
function utf8(data: Buffer): string | undefined {
  if (data.includes(0)) return undefined
  try {
    return strict.decode(data)
  } catch {
    return undefined
  }
}
