// A server stand-in for the lifeline test: loads the executor, runs one command (which creates the
// session's container), prints the container id, then waits to be killed.
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { ContainerExecutor } from '@deepseek-ai/dsh-bash-container'

const [image, engine, workspace, label] = process.argv.slice(2)
const instance = await loadExecutorPlugin(ContainerExecutor, { image, engine, workspace, labels: { 'dsh-bash.test': label } })
const bash = instance.executor
bash.start(bash.resolve({ command: 'sleep 1000', owner: 'a' }))
const result = await bash.run(bash.resolve({ command: 'echo ready', owner: 'a' }))
process.stdout.write(`${result.stdout.text.trim()} ${await bash.containerOf('a')}\n`)
setInterval(() => {}, 1000)
