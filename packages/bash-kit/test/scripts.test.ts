import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { preludeScript, launcherScript } from '../../bash-local/src/prelude.js'
import { INSTALL_SCRIPT, POD_BOOT_SCRIPT, SSH_SERVE_SCRIPT } from '../../bash-agent/src/install.js'
import { describe, expect, it } from 'vitest'
import { closeInheritedFds, fillScript } from '../src/index.js'

const PACKAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** `bash -n` of a script text: '' when it parses, else what bash said. */
function syntaxErrors(text: string): string {
  const result = spawnSync('bash', ['--noprofile', '--norc', '-n'], { input: text, encoding: 'utf8' })
  return result.status === 0 ? '' : result.stderr || `exit ${result.status}`
}

describe('shell scripts kept as .sh files', () => {
  const files = readdirSync(PACKAGES).flatMap((pkg) => {
    try {
      return readdirSync(join(PACKAGES, pkg, 'scripts'))
        .filter((name) => name.endsWith('.sh'))
        .map((name) => join(pkg, 'scripts', name))
    } catch {
      return []
    }
  })

  it("the scripts folders hold the prelude, the launcher and the agent's bootstrap", () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'bash-kit/scripts/close-inherited-fds.sh',
        'bash-local/scripts/prelude.sh',
        'bash-local/scripts/launcher.sh',
        'bash-local/scripts/join-cgroup.sh',
        'bash-agent/scripts/install.sh',
        'bash-agent/scripts/ssh-serve.sh',
        'bash-agent/scripts/pod-boot.sh',
      ]),
    )
  })

  it('every .sh file parses (bash -n), placeholders included', () => {
    const failures = files.map((file) => {
      const result = spawnSync('bash', ['--noprofile', '--norc', '-n', join(PACKAGES, file)], { encoding: 'utf8' })
      return result.status === 0 ? '' : `${file}: ${result.stderr}`
    })
    expect(failures.filter(Boolean)).toEqual([])
  })

  it('every script as it is sent or written parses, with no placeholder left', () => {
    const scripts = {
      closeInheritedFds: closeInheritedFds(2),
      prelude: preludeScript(),
      launcher: launcherScript(1),
      install: INSTALL_SCRIPT,
      sshServe: SSH_SERVE_SCRIPT,
      podBoot: POD_BOOT_SCRIPT,
    }
    for (const [name, text] of Object.entries(scripts)) {
      expect(syntaxErrors(text), name).toBe('')
      expect(text, name).not.toMatch(/@[A-Z][A-Z0-9_]*@/)
    }
    // Comment lines are for the file's reader: the remote scripts carry none.
    for (const text of [INSTALL_SCRIPT, SSH_SERVE_SCRIPT, POD_BOOT_SCRIPT]) expect(text).not.toMatch(/^[ \t]*#/m)
    expect(preludeScript().split('\n')[0]).toMatch(/^# dsh-bash: runs in the command's shell/)
  })

  it('fillScript refuses a placeholder without a value and a value without a placeholder', () => {
    expect(fillScript('echo @A@', { A: 'x' })).toBe('echo x')
    expect(() => fillScript('echo @A@ @B@', { A: 'x' })).toThrow('script placeholder @B@ has no value')
    expect(() => fillScript('echo @A@', { A: 'x', C: 'y' })).toThrow('script values not used: C')
  })
})
