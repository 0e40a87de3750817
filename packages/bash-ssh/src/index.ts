/**
 * @deepseek-ai/dsh-bash-ssh — `SshExecutor`: commands on remote hosts over SSH, through the far-side agent.
 *
 * Flow at a glance: `launch(spec)` (executor.ts) picks the host (host.ts: one per configured host,
 * leases, reconnects) → its connection (connection.ts: ssh2, the host key checked by hostkey.ts:
 * fingerprint or known_hosts) → one exec channel running the agent, copied once per version into
 * the user's cache (agent-session.ts, the command text from exec-text.ts) → bash-agent's
 * `launchThroughAgent` makes the kit's LaunchedCommand. A dropped connection ends its commands with
 * the reason (errors.ts). Config and its checks: config.ts.
 */
export { SshExecutor } from './executor.js'
export { SSH_ERROR, lostMessage } from './errors.js'
export {
  sshConfigSchema,
  sshHostSchema,
  parseSshConfig,
  parseSshTarget,
  hostLabel,
  type SshExecutorConfig,
  type SshExecutorConfigInput,
  type SshHostConfig,
  type SshHostConfigInput,
} from './config.js'
export { fingerprintOf, keyTypeOf, hostMatches } from './hostkey.js'
