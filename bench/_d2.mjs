import { sshSetup } from './lib/ssh.mjs'
import { execFileSync } from 'node:child_process'
const ssh = await sshSetup()
const h = ssh.config.hosts[0]
try { console.log(execFileSync('ssh', ['-i', h.privateKeyPath, '-p', String(h.port), '-o', `UserKnownHostsFile=${h.hostKey.knownHostsPath}`, '-o', 'BatchMode=yes', 'dshtest@127.0.0.1', 'echo ok; id'], { encoding: 'utf8', timeout: 20000 })) } catch (e) { console.log('ssh failed', e.message, e.stderr) }
await ssh.stop()
