/**
 * The workspace as a tar stream, for `workspaceMode: "copy"` (the Docker executor uploads it with
 * `PUT /containers/{id}/archive`, the Kubernetes executor pipes it into `tar -x` through an exec).
 *
 * Made by the system's `find` and GNU `tar` (both Essential in Debian, so on every host this runs
 * on) rather than an npm tar library: GNU tar keeps file names byte for byte (a JS walk decodes
 * them as UTF-8), handles hard links, sparse files and long names, streams without holding files in
 * memory, and adds no dependency. `find` lists what is copied first, so the size limit is checked
 * before a byte is sent and special files are left out by type.
 *
 * What is copied: regular files, directories and symbolic links (stored as links, never followed:
 * a link pointing outside the workspace dangles in the container). Sockets, FIFOs and device nodes
 * are skipped. Modes are kept except set-uid/set-gid bits; owner and group are set to the given
 * numeric ids (the container user). A file that cannot be read is skipped with tar's warning
 * (`--ignore-failed-read`).
 */
import { spawn } from 'node:child_process'
import { PassThrough, type Readable } from 'node:stream'
import { codedError } from '@deepseek-ai/dsh-bash'
import { CONTAINER_ERROR } from './errors.js'

/** A failure of the archive itself: the bare reason (each executor words its own message around it). */
const failed = (why: string) => codedError(CONTAINER_ERROR.workspaceCopy, why)

/** How to make the archive. */
export interface WorkspaceArchiveOptions {
  /** The host directory whose content is archived. Must exist (the executors check at load). */
  hostPath: string
  /**
   * The path every entry is put under, relative, without a leading slash (`workspace` for
   * `/workspace`): the archive then holds that directory itself (owned by `owner`) and is
   * extracted at `/`. Undefined: entries are `./name` with no entry for the directory itself
   * (extracted with `tar -x -C <mountPath>` into a directory that exists).
   */
  prefix?: string
  /** Numeric owner and group written into every entry; undefined: the host's (with `--numeric-owner`). */
  owner?: { uid: number; gid: number }
  /** At most this many bytes of regular-file content (checked before anything is sent). */
  maxBytes: number
}

/** A tar stream being produced. */
export interface WorkspaceArchive {
  /** The tar bytes (GNU format). */
  stream: Readable
  /** Regular files and bytes in it (before tar's headers). */
  files: number
  bytes: number
  /** Resolves when tar has written everything and exited 0; rejects with a coded error otherwise. */
  done: Promise<void>
  /** Stops tar (e.g. when the receiver failed); `done` then rejects. */
  abort(): void
  /** tar's own failure, once it exited non-zero before any abort (undefined otherwise). */
  readonly failure: Error | undefined
}

/**
 * Lists the workspace (`find`), checks the size limit, and starts `tar` over that list. Rejects
 * with `DSH_CONTAINER_WORKSPACE_COPY` (the bare reason as its message) when the workspace is larger than `maxBytes` or the tools fail.
 */
export async function workspaceArchive(options: WorkspaceArchiveOptions): Promise<WorkspaceArchive> {
  const list = await listWorkspace(options.hostPath, options.prefix !== undefined)
  if (list.bytes > options.maxBytes) {
    throw failed(`the workspace ${options.hostPath} holds ${list.bytes} bytes in regular files, more than workspaceCopyMaxBytes (${options.maxBytes})`)
  }
  const args = ['-c', '-f', '-', '--null', '--no-recursion', '-T', '-', '--ignore-failed-read', '--numeric-owner', '--mode=ug-s']
  if (options.owner) args.push(`--owner=${options.owner.uid}`, `--group=${options.owner.gid}`)
  // `S`: symlink targets are left alone; member names and hard-link targets get the prefix.
  if (options.prefix !== undefined) args.push(`--transform=s,^\\.,${sedEscape(options.prefix)},S`)
  const tar = spawn('tar', args, { cwd: options.hostPath, stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  tar.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)))
  tar.stdin.on('error', () => {})
  tar.stdin.end(list.names)
  let aborted = false
  let failure: Error | undefined
  const done = new Promise<void>((resolve, reject) => {
    const fail = (error: Error) => {
      if (!aborted) failure = error
      reject(error)
    }
    tar.once('error', (error) => fail(failed(`cannot run tar: ${error.message}`)))
    tar.once('close', (code, signal) => {
      if (code === 0) resolve()
      else fail(failed(`tar exited with ${code ?? signal}${stderr.trim() ? `: ${stderr.trim().split('\n').slice(-1)[0]}` : ''}`))
    })
  })
  done.catch(() => {})
  // Read from now on: Node drops the unread output of a child that exits with no reader attached.
  const stream = tar.stdout.pipe(new PassThrough())
  return {
    stream,
    files: list.files,
    bytes: list.bytes,
    done,
    abort: () => {
      aborted = true
      tar.kill('SIGKILL')
    },
    get failure() {
      return failure
    },
  }
}

/** `find`'s NUL-separated list of what is copied, with the regular files' total size. */
function listWorkspace(hostPath: string, withRoot: boolean): Promise<{ names: Buffer; files: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    // One record per entry: type letter, size, then the path (bytes as they are), NUL-terminated.
    const find = spawn('find', ['.', ...(withRoot ? [] : ['-mindepth', '1']), '(', '-type', 'f', '-o', '-type', 'd', '-o', '-type', 'l', ')', '-printf', '%y %s %p\\0'], {
      cwd: hostPath,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const chunks: Buffer[] = []
    let stderr = ''
    find.stdout.on('data', (chunk: Buffer) => chunks.push(chunk))
    find.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-2000)))
    find.once('error', (error) => reject(failed(`cannot run find: ${error.message}`)))
    find.once('close', (code) => {
      // 1: some entries could not be read (permissions); what could be listed is copied.
      if (code !== 0 && code !== 1) return reject(failed(`find exited with ${code}: ${stderr.trim().split('\n').slice(-1)[0] ?? ''}`))
      const all = Buffer.concat(chunks)
      const names: Buffer[] = []
      let files = 0
      let bytes = 0
      for (let start = 0; start < all.length; ) {
        let end = all.indexOf(0, start)
        if (end < 0) end = all.length
        const record = all.subarray(start, end)
        start = end + 1
        const space = record.indexOf(0x20, 2)
        if (space < 0) continue
        if (record[0] === 0x66 /* f */) {
          files++
          bytes += Number(record.subarray(2, space).toString('latin1'))
        }
        names.push(record.subarray(space + 1), Buffer.from([0]))
      }
      resolve({ names: Buffer.concat(names), files, bytes })
    })
  })
}

/** Escapes a replacement text of tar's `--transform` (sed syntax, `,` as the delimiter). */
function sedEscape(text: string): string {
  return text.replace(/[\\&,]/g, (c) => `\\${c}`)
}
