import { Context } from 'cordis'
import type { ConformanceConfig, ConformanceInstance } from '@deepseek-ai/dsh-bash/conformance'
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
  const ctx = new Context()
  let error: unknown
  ctx.on('internal/error', (e: unknown) => {
    error = e
  })
  const fork = ctx.plugin(SshExecutor, { graceMs: 300, ...config })
  const executor = ctx.get('bash') as SshExecutor | undefined
  if (!executor) throw error ?? new Error('the ssh executor did not load')
  let disposed: Promise<void> | undefined
  return {
    ctx,
    executor,
    dispose() {
      disposed ??= (async () => {
        fork.dispose()
        await executor.shutdown()
      })()
      return disposed
    },
  }
}

/** The conformance factory: one executor per test, against the given servers. */
export function sshFactory(keys: TestKeys, servers: () => SshdInstance[]) {
  return (config?: ConformanceConfig) =>
    createSsh({ cwd: keys.workdir, hosts: servers().map((s) => hostEntry(keys, s)), ...config })
}
