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
