import type { Readable, Writable } from 'node:stream'
import { finished } from 'node:stream/promises'
import { readScript } from '@deepseek-ai/dsh-bash-kit'
import { AGENT_ARCHES, type AgentArch, type AgentBinary, agentArchOf, findAgentBinary } from './binary.js'
import { agentErrors } from './errors.js'

/**
 * Getting the agent to the far side on first use, checked by its SHA-256 (the version name of
 * every copy: `agent-<sha256>`):
 * - a container: an archive put into the created container before it starts (Engine API `PUT
 *   /containers/{id}/archive`): `/.dsh-bash/agent-<sha256>`, root's, mode 0555;
 * - a pod: an exec running INSTALL_SCRIPT with the binary on its stdin, into `/.dsh-bash/<uid>/`
 *   (an emptyDir the executor adds); the pod's PID 1 (POD_BOOT_SCRIPT) waits for it and becomes it;
 * - an SSH host: once per version into the user's cache (`${XDG_CACHE_HOME:-~/.cache}/dsh-bash`),
 *   by INSTALL_SCRIPT over an exec channel when SSH_SERVE_SCRIPT says it needs it.
 * The scripts need bash and coreutils only; they are bootstrap, not control: every decision about
 * processes is the agent's.
 */
const script = (name: string) => readScript(new URL(`../scripts/${name}`, import.meta.url))

/** Installs the binary (see scripts/install.sh for the arguments and the dialogue). */
export const INSTALL_SCRIPT = script('install.sh')
/** Starts the cached agent on an SSH host, or says `@dsh-bash-agent need <why>` (scripts/ssh-serve.sh). */
export const SSH_SERVE_SCRIPT = script('ssh-serve.sh')
/** PID 1 of a pod until the agent is there (scripts/pod-boot.sh). */
export const POD_BOOT_SCRIPT = script('pod-boot.sh')

/** What SSH_SERVE_SCRIPT prints instead of starting the agent. */
export const NEED_PREFIX = '@dsh-bash-agent need '

/** Where a container's agent lives. */
export const CONTAINER_AGENT_DIR = '/.dsh-bash'
/** The base directory of a pod's agent (an emptyDir); the copy is in `<dir>/<uid>/`. */
export const POD_AGENT_DIR = '/.dsh-bash'

/** `<x64 sha> <x64 size> <arm64 sha> <arm64 size>`, `-`/`0` for a build that does not ship. */
function buildArgs(withSize: boolean): string[] {
  return AGENT_ARCHES.flatMap((arch) => {
    const binary = findAgentBinary(arch)
    return withSize ? [binary?.sha256 ?? '-', String(binary?.bytes.length ?? 0)] : [binary?.sha256 ?? '-']
  })
}

/** The arguments of INSTALL_SCRIPT (`$1`…, after `$0`): `where` is `cache` or a base directory. */
export function installArgs(where: 'cache' | string): string[] {
  return [where, ...buildArgs(true)]
}

/** The arguments of SSH_SERVE_SCRIPT (`$1`…): the shipped builds' hashes, then the agent's `serve` arguments. */
export function sshServeArgs(shell: string, secretPatterns: readonly string[]): string[] {
  return [...buildArgs(false), shell, ...secretPatterns]
}

/** The streams of an exec running INSTALL_SCRIPT. */
export interface InstallStream {
  readonly stdin: Writable
  readonly stdout: Readable
  readonly stderr: Readable
  /** Resolves once the exec is over. Never rejects. */
  readonly closed: Promise<void>
}

/**
 * Runs the installation dialogue over an exec of INSTALL_SCRIPT: on `arch <a>` it sends that build
 * (exactly its size: the script reads no more), and resolves with the path of `ready <path>`.
 * Rejects (DSH_AGENT_INSTALL, naming `where`) on `fail <why>`, a missing build, or an exec that
 * ends first (with its last stderr line).
 */
export function runInstall(stream: InstallStream, where: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = ''
    let err = ''
    let settled = false
    const settle = (error: Error | undefined, path?: string) => {
      if (settled) return
      settled = true
      if (error) reject(error)
      else resolve(path!)
    }
    stream.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString('utf8')).slice(-2000)))
    stream.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8')
      let newline: number
      while ((newline = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, newline)
        out = out.slice(newline + 1)
        if (line.startsWith('arch ')) {
          const arch = agentArchOf(line.slice(5)) as AgentArch | undefined
          const binary = arch && findAgentBinary(arch)
          if (!binary) return settle(agentErrors.noBinary(line.slice(5).trim()))
          stream.stdin.write(binary.bytes)
        } else if (line.startsWith('ready ')) {
          settle(undefined, line.slice(6).trim())
        } else if (line.startsWith('fail ')) {
          settle(agentErrors.install(where, line.slice(5).trim()))
        }
      }
    })
    // Over when the exec is closed and its output read to the end (a close can be seen before the
    // last bytes are delivered).
    void Promise.all([stream.closed, finished(stream.stdout).catch(() => undefined)]).then(() => {
      const why = err.trim().split('\n').filter(Boolean).at(-1)
      settle(agentErrors.install(where, why ? `the installation ended early: ${why}` : 'the installation ended early'))
    })
  })
}

/** The container path of a build. */
export function containerAgentPath(binary: AgentBinary): string {
  return `${CONTAINER_AGENT_DIR}/agent-${binary.sha256}`
}

const archives = new Map<string, Buffer>()

/**
 * A tar archive (for `PUT /containers/{id}/archive?path=/`) holding `.dsh-bash/` (root's, 0755)
 * and `.dsh-bash/agent-<sha256>` (root's, 0555): a non-root container user can run it but never
 * change it. Made once per build.
 */
export function containerAgentArchive(binary: AgentBinary): Buffer {
  let archive = archives.get(binary.sha256)
  if (!archive) {
    const dir = CONTAINER_AGENT_DIR.slice(1)
    const file = `${dir}/agent-${binary.sha256}`
    const padding = Buffer.alloc((512 - (binary.bytes.length % 512)) % 512)
    archive = Buffer.concat([tarHeader(`${dir}/`, 0o755, 0, '5'), tarHeader(file, 0o555, binary.bytes.length, '0'), binary.bytes, padding, Buffer.alloc(1024)])
    archives.set(binary.sha256, archive)
  }
  return archive
}

/** One ustar header (POSIX 1003.1-1988), owner root, mtime 0. */
function tarHeader(name: string, mode: number, size: number, type: '0' | '5'): Buffer {
  const header = Buffer.alloc(512)
  const put = (text: string, at: number, length: number) => header.write(text, at, length, 'latin1')
  const octal = (value: number, length: number) => value.toString(8).padStart(length - 1, '0')
  put(name, 0, 100)
  put(octal(mode, 8), 100, 8)
  put(octal(0, 8), 108, 8)
  put(octal(0, 8), 116, 8)
  put(octal(size, 12), 124, 12)
  put(octal(0, 12), 136, 12)
  put('        ', 148, 8)
  put(type, 156, 1)
  put('ustar\u000000', 257, 8)
  put('root', 265, 32)
  put('root', 297, 32)
  let sum = 0
  for (const byte of header) sum += byte
  put(`${octal(sum, 7)}\u0000`, 148, 8)
  return header
}
