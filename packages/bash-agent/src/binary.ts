import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { agentErrors } from './errors.js'

/** The architectures an agent can be built for (scripts/build-native.sh). */
export type AgentArch = 'x64' | 'arm64'
export const AGENT_ARCHES: readonly AgentArch[] = ['x64', 'arm64']

/** The protocol version this client speaks (docs/agent-protocol.md); the agent's hello must name it. */
export const AGENT_PROTOCOL_VERSION = 1

/**
 * What a serving agent's command line reads (/proc/<pid>/cmdline: this, then only NULs): a pod's
 * PID 1 looks for it. Never the name of anything else the executors start.
 */
export const AGENT_PROCESS_NAME = 'dsh-bash-agent'

/** One shipped build of the agent. */
export interface AgentBinary {
  arch: AgentArch
  /** Where it is on this machine (inside the package). */
  path: string
  bytes: Buffer
  /** SHA-256 of `bytes`, hex: the version name of the far side's copy (`agent-<sha256>`). */
  sha256: string
}

const loaded = new Map<AgentArch, AgentBinary | undefined>()

/** The build for `arch`, or undefined when the package ships none. Read once. */
export function findAgentBinary(arch: AgentArch): AgentBinary | undefined {
  if (!loaded.has(arch)) {
    const path = fileURLToPath(new URL(`../native/dsh-bash-agent-linux-${arch}`, import.meta.url))
    try {
      const bytes = readFileSync(path)
      loaded.set(arch, { arch, path, bytes, sha256: createHash('sha256').update(bytes).digest('hex') })
    } catch {
      loaded.set(arch, undefined)
    }
  }
  return loaded.get(arch)
}

/** The build for `arch`; throws (DSH_AGENT_NO_BINARY) when none ships. */
export function agentBinary(arch: AgentArch): AgentBinary {
  const binary = findAgentBinary(arch)
  if (!binary) throw agentErrors.noBinary(arch)
  return binary
}

/** The agent architecture of a machine name (`uname -m`, Docker's `Arch`, Node's `process.arch`); undefined: none. */
export function agentArchOf(machine: string): AgentArch | undefined {
  switch (machine.trim()) {
    case 'x86_64':
    case 'amd64':
    case 'x64':
      return 'x64'
    case 'aarch64':
    case 'arm64':
      return 'arm64'
    default:
      return undefined
  }
}
