import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadExecutorPlugin } from '@deepseek-ai/dsh-bash/conformance'
import { afterAll, afterEach, expect } from 'vitest'
import { ContainerExecutor, type ContainerExecutorConfigInput } from '../src/index.js'

/** The offline test image (built by build-image.sh; .ci/run builds it too). */
export const TEST_IMAGE = process.env.DSH_CONTAINER_TEST_IMAGE ?? 'dsh-bash-test:bare'
export const ENGINE_URL = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock'
const BUILD_SCRIPT = fileURLToPath(new URL('./build-image.sh', import.meta.url))

let cached: { reason?: string } | undefined

/**
 * Why the container suites cannot run here (no docker client, no engine answering, no image and it
 * cannot be built), or undefined when they can. Builds the test image when it is missing.
 */
export function unavailableReason(): string | undefined {
  if (cached) return cached.reason
  cached = { reason: probe() }
  return cached.reason
}

function probe(): string | undefined {
  if (process.platform !== 'linux') return 'the container tests count processes through /proc (Linux only)'
  const ping = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { encoding: 'utf8', timeout: 20_000 })
  if (ping.error) return `no docker client (${(ping.error as NodeJS.ErrnoException).code}); .ci/run installs docker.io`
  if (ping.status !== 0) return `no container engine answers at ${ENGINE_URL}: ${ping.stderr.trim().split('\n')[0]} (start dockerd; .ci/run does)`
  const build = spawnSync('bash', [BUILD_SCRIPT, TEST_IMAGE], { encoding: 'utf8', timeout: 300_000 })
  if (build.status !== 0) return `cannot build the test image ${TEST_IMAGE}: ${(build.stderr || build.stdout).trim().split('\n').slice(-1)[0]}`
  return undefined
}

/**
 * Live processes (zombies excluded) on this machine whose command line contains `marker`. The
 * containers share this kernel and their PID namespaces are children of ours: their processes are
 * visible here too.
 */
export function processesWith(marker: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8')
      if (!cmdline.includes(marker)) continue
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
      if (state === 'Z' || state === 'X') continue
      found.push(Number(name))
    } catch {
      // Gone meanwhile.
    }
  }
  return found
}

/** Ids of the engine's containers with a label (all states). */
export function containersWithLabel(label: string): string[] {
  const out = execFileSync('docker', ['ps', '-aq', '--no-trunc', '--filter', `label=${label}`], { encoding: 'utf8' })
  return out.split('\n').filter(Boolean)
}

/**
 * Resolves once every container with `label` that the engine created since `sinceMs` (Unix time in
 * ms, taken before the action that creates it) has been destroyed again, and at least one was
 * created; read from the engine's event log (`docker events`), so a container created after a check
 * still counts. Events are compared to the millisecond: a whole-second window took in the containers
 * of the test before (created and destroyed), resolved before the awaited create had even happened,
 * and the container made after that was leaked into every later test's check. Rejects after `timeoutMs`.
 */
export async function createdAndDestroyed(label: string, sinceMs: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const until = Math.floor(Date.now() / 1000)
    const out = execFileSync('docker', ['events', '--since', String(Math.floor(sinceMs / 1000)), '--until', String(until), '--filter', `label=${label}`, '--filter', 'type=container', '--format', '{{.TimeNano}} {{.Action}} {{.Actor.ID}}'], { encoding: 'utf8' })
    const created = new Set<string>()
    const destroyed = new Set<string>()
    // Only create/destroy lines: an exec's action holds its command, the agent script's lines too.
    for (const line of out.split('\n')) {
      const event = /^(\d+) (create|destroy) ([0-9a-f]+)$/.exec(line)
      if (!event || Number(BigInt(event[1]) / 1_000_000n) < sinceMs) continue
      if (event[2] === 'create') created.add(event[3])
      else destroyed.add(event[3])
    }
    if (created.size > 0 && [...created].every((id) => destroyed.has(id))) return
    if (Date.now() > deadline) throw new Error(`containers labelled ${label}: created ${[...created].join(',') || 'none'}, destroyed ${[...destroyed].join(',') || 'none'}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** A tag split by an empty quote: only the started processes' arguments carry it, not the shell's. */
export const splitTag = (tag: string) => `${tag.slice(0, 4)}''${tag.slice(4)}`

/**
 * The per-suite fixture of the container tests (call it inside a `describe`): a private workspace,
 * a test label on every container, and `create(config)`, a ContainerExecutor over the test image.
 * After each test every executor made is disposed and no container with the label may be left; the
 * workspace goes after all.
 */
export function containerFixture(name: string, base: Partial<ContainerExecutorConfigInput> = {}) {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), `dsh-${name}-`)))
  const testLabel = `${name}-${process.pid}`
  const label = `dsh-bash.test=${testLabel}`
  const disposers: Array<() => Promise<void>> = []
  afterEach(async () => {
    await Promise.all(disposers.splice(0).map((dispose) => dispose()))
    expect(containersWithLabel(label)).toEqual([])
  })
  afterAll(() => rmSync(workspace, { recursive: true, force: true }))
  return {
    workspace,
    testLabel,
    label,
    async create(config: Partial<ContainerExecutorConfigInput> = {}): Promise<ContainerExecutor> {
      const instance = await loadExecutorPlugin(ContainerExecutor, {
        image: TEST_IMAGE,
        engine: ENGINE_URL,
        workspace,
        graceMs: 300,
        labels: { 'dsh-bash.test': testLabel },
        ...base,
        ...config,
      })
      disposers.push(instance.dispose)
      return instance.executor
    },
  }
}
