import { readFileSync } from 'node:fs'
import { loadExecutorPlugin, type ConformanceConfig, type ConformanceInstance } from '@deepseek-ai/dsh-bash/conformance'
import { SshExecutor, type SshExecutorConfigInput, type SshHostConfigInput } from '../src/index.js'
import type { SshdInstance, TestKeys } from './sshd.js'

export interface SshInstance extends ConformanceInstance {
  executor: SshExecutor
}

/** A host entry for a test sshd, verified through its known_hosts file. */
export function hostEntry(keys: TestKeys, sshd: SshdInstance, extra: Partial<SshHostConfigInput> = {}): SshHostConfigInput {
  return {
    host: '127.0.0.1',
    port: sshd.port,
    username: keys.user,
    privateKeyPath: keys.userKeyPath,
    hostKey: { knownHostsPath: sshd.knownHostsPath },
    ...extra,
  }
}

/** An SshExecutor loaded as a cordis plugin on a fresh root context. */
export async function createSsh(config: SshExecutorConfigInput): Promise<SshInstance> {
  return loadExecutorPlugin(SshExecutor, { graceMs: 300, ...config })
}

/** The conformance factory: one executor per test, against the given servers. */
export function sshFactory(keys: TestKeys, servers: () => SshdInstance[]) {
  return (config?: ConformanceConfig) =>
    createSsh({ cwd: keys.workdir, hosts: servers().map((s) => hostEntry(keys, s)), ...config })
}

/** The state letter of a process (`/proc/<pid>/stat`), or undefined when it is gone. */
export function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}
