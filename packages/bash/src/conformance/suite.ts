import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { describe, expect, it, vi } from 'vitest'
import type { BashExecutor } from '../executor.js'
import { backgroundTests } from './background.js'
import { capabilityTests } from './capabilities.js'
import { descriptorTests } from './descriptors.js'
import { disposalTests } from './disposal.js'
import { foregroundTests } from './foreground.js'
import { fullOutputTests } from './full-output.js'
import { defineInteractiveConformance } from './interactive.js'
import { trackInstances, WAIT } from './helpers.js'
import { leftoverTests } from './leftovers.js'
import { resolveTests } from './resolve.js'
import { spillThresholdTests } from './spill-threshold.js'
import type { ExtraRequest, SuiteContext } from './suite-context.js'
import { taskDoneTests } from './task-done.js'
import { timeoutTests } from './timeouts.js'
import type { ConformanceConfig, ConformanceInstance, ConformanceOptions } from './types.js'
import { yieldTests } from './yield.js'

/**
 * Defines the conformance tests for one executor. Call it at the top level of a test file.
 */
export function defineBashExecutorConformance(name: string, options: ConformanceOptions): void {
  const graceMs = options.graceMs ?? 300
  const workdir = options.workdir ?? tmpdir()
  const followsEscapees = options.followsEscapees ?? true
  // An executor that cannot follow escapees (process-group containment) documents that limit and
  // tests it itself; these tests are not defined for it rather than skipped.
  const itEscapees = followsEscapees ? it : (((..._args: unknown[]) => undefined) as unknown as typeof it)
  const readSpill = options.readSpillFile ?? ((path: string) => readFile(path))
  const count = (marker: string) => options.countProcesses(marker)
  const instances = trackInstances<ConformanceInstance>()

  /** A fresh executor, disposed after the test. */
  async function create(config: ConformanceConfig = {}): Promise<ConformanceInstance> {
    return instances.track(await options.create({ graceMs, ...config }))
  }

  const suite: SuiteContext = {
    options,
    graceMs,
    workdir,
    followsEscapees,
    itEscapees,
    readSpill,
    count,
    create,
    executor: async (config?: ConformanceConfig): Promise<BashExecutor> => (await create(config)).executor,
    run: (bash: BashExecutor, command: string, extra: ExtraRequest = {}) => bash.run(bash.resolve({ command, workdir, ...extra })),
    start: (bash: BashExecutor, command: string, extra: ExtraRequest = {}) => bash.start(bash.resolve({ command, workdir, ...extra })),
    seen: async (marker: string) => {
      await vi.waitFor(async () => expect(await count(marker)).toBeGreaterThan(0), WAIT)
    },
  }

  describe(`bash executor conformance: ${name}`, () => {
    resolveTests(suite)
    capabilityTests(suite)
    foregroundTests(suite)
    descriptorTests(suite)
    timeoutTests(suite)
    leftoverTests(suite)
    backgroundTests(suite)
    taskDoneTests(suite)
    yieldTests(suite)
    spillThresholdTests(suite)
    fullOutputTests(suite)
    disposalTests(suite)
    defineInteractiveConformance({
      executor: suite.executor,
      countProcesses: count,
      workdir,
      readSpillFile: readSpill,
      ...(options.interactive === undefined || options.interactive === true ? {} : { interactive: false, reason: options.interactive.reason }),
    })
  })
}
