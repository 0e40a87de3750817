import { createApp } from './lib/app.mjs'
import { sshSetup } from './lib/ssh.mjs'
import { sandboxExecutor } from './lib/optional.mjs'
const t = performance.now()
const lg = (m) => console.log(((performance.now() - t) | 0) + 'ms', m)
const sb = await sandboxExecutor(); lg('sandbox ' + sb.available)
const sapp = await createApp({ executor: sb.plugin, config: sb.config }); lg('sandbox app')
const ag = sapp.agent('x'); lg(JSON.stringify(await sapp.call('bash', {command:'true', description:'x'}, ag)))
const ssh = await sshSetup(); lg('ssh ' + ssh.available + ' ' + ssh.reason)
const app = await createApp({ executor: ssh.plugin, config: ssh.config, workspace: ssh.workspace }); lg('ssh app')
const a2 = app.agent('y', ssh.workspace)
lg(JSON.stringify(await app.call('bash', {command:'true', description:'x'}, a2)))
await app.dispose(); lg('disposed'); await ssh.stop(); await sapp.dispose(); lg('done')
