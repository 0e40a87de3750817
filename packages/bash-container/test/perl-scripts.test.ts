import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { AGENT_SCRIPT, KILL_SCRIPT, LIFELINE_SCRIPT } from '../src/index.js'

const PACKAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const perl = spawnSync('perl', ['-v'], { encoding: 'utf8' }).status === 0

/** `perl -c` of a script (a file, or a text as `-e` passes it): '' when it compiles, else what perl said. */
function compileErrors(args: string[]): string {
  const result = spawnSync('perl', ['-c', ...args], { encoding: 'utf8' })
  return result.status === 0 ? '' : result.stderr || `exit ${result.status}`
}

describe.skipIf(!perl)('Perl scripts kept as .pl files (the container and pod agents)', () => {
  if (!perl) console.log('skipped: no perl on this machine')
  const files = readdirSync(PACKAGES).flatMap((pkg) => {
    try {
      return readdirSync(join(PACKAGES, pkg, 'scripts'))
        .filter((name) => name.endsWith('.pl'))
        .map((name) => join(PACKAGES, pkg, 'scripts', name))
    } catch {
      return []
    }
  })

  it('the scripts folders hold the agent, the kill, the lifeline and the pod main process', () => {
    expect(files.map((file) => file.slice(PACKAGES.length + 1)).sort()).toEqual(
      expect.arrayContaining(['bash-container/scripts/agent.pl', 'bash-container/scripts/kill.pl', 'bash-container/scripts/lifeline.pl', 'bash-kubernetes/scripts/pod-main.pl']),
    )
  })

  it('every .pl file compiles (perl -c)', () => {
    expect(files.map((file) => compileErrors([file]) && `${file}: ${compileErrors([file])}`).filter(Boolean)).toEqual([])
  })

  it('every script as it is sent (perl -e, comment lines dropped) compiles and carries no comment line', () => {
    for (const [name, text] of Object.entries({ agent: AGENT_SCRIPT, kill: KILL_SCRIPT, lifeline: LIFELINE_SCRIPT })) {
      expect(compileErrors(['-e', text]), name).toBe('')
      expect(text.split('\n').filter((line) => /^\s*#/.test(line)), name).toEqual([])
    }
  })

  it('a script that does not compile is reported (the check is not blind)', () => {
    expect(compileErrors(['-e', 'my $x = ;'])).toMatch(/syntax error/)
  })
})
