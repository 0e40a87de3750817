/**
 * 1. Call overhead of a foreground `true`.
 *   bare     child_process.spawn of `bash --noprofile --norc -c true` (pipes drained, until 'close')
 *   executor ctx.bash.run(ctx.bash.resolve({command: 'true'})) — the executor alone (diagnostic)
 *   tools    ctx.tools.execute('bash', …) in-process, called by a real agent (the whole pipeline)
 *   mcp      the MCP server (packages/cli/dist/main.js mcp) over stdio with the SDK Client
 *   mcp-server-commands  its `run_command` of `true` over stdio with the same client (it runs
 *            `sh -c`, keeps nothing); only with DSH_BENCH_COMMANDS=<dir where it is installed>
 *   sandbox  ctx.tools.execute('bash', …) over the sandbox executor   (when it has landed)
 *   ssh      ctx.tools.execute('bash', …) over the SSH executor to a local sshd (when it has landed)
 *   bwrap-bare, ssh2-bare  the floors of those two: bwrap spawned bare with the sandbox's own
 *            arguments; one ssh2 exec channel on an open connection (diagnostics)
 * Every round runs each variant once, in a rotated order, so drift and noise hit all alike.
 */
import { BASH, bareSpawn, bareSpawnFile, createApp } from './lib/app.mjs'
import { commandsServer, mcpUnavailable, startCommands, startMcp } from './lib/mcp.mjs'
import { sandboxExecutor } from './lib/optional.mjs'
import { sshSetup } from './lib/ssh.mjs'
import { median, p90, rotate, round, summary } from './lib/stats.mjs'

const ARGS = { command: 'true', description: 'Run the true command' }

/** Rejects after `ms` (a hanging work-in-progress executor must not hang the whole bench). */
function within(ms, promise, what) {
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms / 1000} s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

export async function run({ quick = false, log = () => {} } = {}) {
  const rounds = quick ? 40 : 400
  const warmup = quick ? 5 : 20
  const variants = []
  const notMeasured = {}
  const cleanups = []
  try {
    variants.push({ name: 'bare', fn: () => bareSpawn('true').then((r) => (r.code === 0 ? '(no output)' : `exit ${r.code}`)) })

    const app = await createApp()
    cleanups.push(() => app.dispose())
    const agent = app.agent('bench-overhead')
    variants.push({
      name: 'executor',
      fn: async () => {
        const r = await app.bash.run(app.bash.resolve({ command: 'true', owner: 'bench-overhead' }))
        return r.exitCode === 0 && r.stdout.text === '' ? '(no output)' : JSON.stringify(r)
      },
    })
    variants.push({ name: 'tools', fn: () => app.text('bash', ARGS, agent) })

    const mcpWhy = mcpUnavailable()
    if (mcpWhy) notMeasured.mcp = `not measured: ${mcpWhy}`
    else {
      try {
        const mcp = await startMcp()
        cleanups.push(() => mcp.close())
        variants.push({ name: 'mcp', fn: () => mcp.call('bash', ARGS).then((r) => (r.isError ? `Error: ${r.text}` : r.text)) })
      } catch (error) {
        notMeasured.mcp = `not measured: ${error.message.split('\n')[0]}`
      }
    }

    const commands = commandsServer()
    if (commands.why) notMeasured['mcp-server-commands'] = commands.why
    else {
      try {
        const other = await startCommands(commands.main)
        cleanups.push(() => other.close())
        // `true` prints nothing: its result has no content blocks at all.
        variants.push({
          name: 'mcp-server-commands',
          fn: () => other.client.callTool({ name: 'run_command', arguments: { command: 'true' } }).then((r) => (r.isError ? `Error: ${JSON.stringify(r.content)}` : r.content.length === 0 ? '(no output)' : JSON.stringify(r.content))),
        })
      } catch (error) {
        notMeasured['mcp-server-commands'] = `not measured: ${error.message.split('\n')[0]}`
      }
    }

    const sandbox = await sandboxExecutor()
    if (!sandbox.available) notMeasured.sandbox = sandbox.reason
    else {
      try {
        const sapp = await createApp({ executor: sandbox.plugin, config: sandbox.config })
        cleanups.push(() => within(30_000, sapp.dispose(), 'disposing the sandbox app').catch(() => {}))
        const sagent = sapp.agent('bench-overhead-sandbox')
        const probe = await within(30_000, sapp.call('bash', ARGS, sagent), 'a first `true` through the sandbox executor')
        if (probe.isError) throw new Error(probe.content.map((c) => c.text).join('\n'))
        variants.push({ name: 'sandbox', fn: () => sapp.text('bash', ARGS, sagent) })
        // Floor: bwrap itself, spawned bare with the executor's own arguments (default mode
        // workspace-write, network off) minus the status descriptor and the seccomp filter.
        if (typeof sandbox.bwrapArgs === 'function') {
          const args = sandbox.bwrapArgs({ mode: 'workspace-write', network: false, workspaceRoot: sapp.workspace, protections: [], workdir: sapp.workspace, workdirReal: sapp.workspace, readOnlyExtras: [], hidden: [] })
          // Both name descriptors the executor passes (the status pipe, the seccomp filter): a
          // bare spawn has neither, and bwrap exits 1 on a missing one.
          for (const flag of ['--json-status-fd', '--seccomp']) {
            const i = args.indexOf(flag)
            if (i >= 0) args.splice(i, 2)
          }
          const argv = [...args, '--', BASH, '--noprofile', '--norc', '-c', 'true']
          const bwrap = sandbox.bwrapPath ?? 'bwrap'
          variants.push({
            name: 'bwrap-bare',
            fn: () => bareSpawnFile(bwrap, argv).then((r) => (r.code === 0 ? '(no output)' : `exit ${r.code}`)),
          })
        }
      } catch (error) {
        notMeasured.sandbox = `not measured: the sandbox executor fails here: ${error.message.split('\n')[0]}`
      }
    }

    const ssh = await sshSetup()
    if (!ssh.available) notMeasured.ssh = ssh.reason
    else {
      cleanups.push(() => ssh.stop())
      try {
        const sapp = await createApp({ executor: ssh.plugin, config: ssh.config, workspace: ssh.workspace })
        cleanups.push(() => within(30_000, sapp.dispose(), 'disposing the SSH app').catch(() => {}))
        const sagent = sapp.agent('bench-overhead-ssh', ssh.workspace)
        const probe = await within(30_000, sapp.call('bash', ARGS, sagent), 'a first `true` through the SSH executor')
        if (probe.isError) throw new Error(probe.content.map((c) => c.text).join('\n'))
        variants.push({ name: 'ssh', fn: () => sapp.text('bash', ARGS, sagent) })
        // Floor: the ssh2 client alone, one exec channel per call on an open connection.
        const floor = await ssh.bareConnection()
        cleanups.push(() => floor.end())
        variants.push({ name: 'ssh2-bare', fn: () => floor.exec('bash --noprofile --norc -c true').then((r) => (r.code === 0 ? '(no output)' : `exit ${r.code}`)) })
      } catch (error) {
        notMeasured.ssh = `not measured: the SSH executor fails here: ${error.message.split('\n')[0]}`
      }
    }

    const times = Object.fromEntries(variants.map((v) => [v.name, []]))
    const wrong = Object.fromEntries(variants.map((v) => [v.name, []]))
    log(`overhead: ${warmup} warm-up + ${rounds} rounds of ${variants.map((v) => v.name).join(', ')}`)
    for (let i = 0; i < warmup + rounds; i++) {
      for (const variant of rotate(variants, i)) {
        const t0 = performance.now()
        const text = await within(60_000, variant.fn(), `a \`true\` through ${variant.name}`)
        const dt = performance.now() - t0
        if (text !== '(no output)' && wrong[variant.name].length < 3) wrong[variant.name].push(text)
        if (i >= warmup) times[variant.name].push(dt)
      }
    }

    const stats = Object.fromEntries(Object.entries(times).map(([name, t]) => [name, summary(t)]))
    const paired = (name, base) => {
      if (!times[name] || !times[base]) return undefined
      return times[name].map((t, i) => t / times[base][i])
    }
    const ratios = {}
    for (const name of Object.keys(times)) {
      if (name === 'bare' || name.endsWith('-bare')) continue
      ratios[`${name}/bare`] = { ofMedians: round(median(times[name]) / median(times.bare)), pairedMedian: round(median(paired(name, 'bare'))), pairedP90: round(p90(paired(name, 'bare'))) }
    }
    // Against the other MCP server, in the same rounds (issue 16: ours below it).
    if (times.mcp && times['mcp-server-commands']) {
      ratios['mcp/mcp-server-commands'] = { ofMedians: round(median(times.mcp) / median(times['mcp-server-commands'])), pairedMedian: round(median(paired('mcp', 'mcp-server-commands'))), pairedP90: round(p90(paired('mcp', 'mcp-server-commands'))) }
    }
    const extraVsLocal = {}
    for (const [name, base] of [['sandbox', 'tools'], ['ssh', 'tools'], ['bwrap-bare', 'bare'], ['ssh2-bare', 'bare'], ['sandbox', 'bwrap-bare'], ['ssh', 'ssh2-bare']]) {
      if (!times[name] || !times[base]) continue
      const key = base === 'tools' ? name : `${name} vs ${base}`
      const diffs = times[name].map((t, i) => t - times[base][i])
      extraVsLocal[key] = {
        extraMsMedian: round(median(times[name]) - median(times[base])),
        pairedExtraMsMedian: round(median(diffs)),
        pairedExtraMsP90: round(p90(diffs)),
        ratio: round(median(times[name]) / median(times[base])),
      }
    }
    return { rounds, warmup, stats, ratios, extraVsLocal, notMeasured, wrongOutputs: wrong }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup()
  }
}
