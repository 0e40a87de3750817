// A server stand-in for the pod lifeline test: loads the Kubernetes executor against the fake API
// server, starts a background sleeper and runs one command (which creates the session's pod), prints
// the pod's name, then waits: SIGKILL leaves its pod behind; SIGTERM disposes the executor first.
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { KubernetesExecutor } from '@deepseek-ai/dsh-bash-kubernetes'

let instance
process.on('SIGTERM', () => {
  void (instance ? instance.dispose() : Promise.resolve()).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    },
  )
})
const [kubeconfig, image, marker] = process.argv.slice(2)
instance = await loadExecutorPlugin(KubernetesExecutor, { kubeconfig, image, sweep: false })
const bash = instance.executor
bash.start(bash.resolve({ command: `sleep 1000.${marker}`, owner: 'a' }))
const result = await bash.run(bash.resolve({ command: 'echo ready', owner: 'a' }))
const pod = await bash.podOf('a')
process.stdout.write(`${result.stdout.text.trim()} ${pod}\n`)
setInterval(() => {}, 1000)
