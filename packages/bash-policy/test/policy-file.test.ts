import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { definePolicy, isPolicyError, loadPolicyFile, parsePolicy, POLICY_ERROR, PolicyError } from '../src/index.js'

function refused(text: string, file = 'policy.json'): string {
  try {
    parsePolicy(text, file)
  } catch (error) {
    expect(error).toBeInstanceOf(PolicyError)
    expect(error).toMatchObject({ code: POLICY_ERROR.invalid })
    expect(isPolicyError(error)).toBe(true)
    return (error as Error).message
  }
  throw new Error('the policy was accepted')
}

describe('policy files', () => {
  it('reads the JSON of issue 7, with defaults for the limits', () => {
    const policy = parsePolicy(
      JSON.stringify({
        default: 'ask',
        deny: ['rm -rf *', 'sudo *'],
        ask: ['git push *'],
        allow: ['ls *', 'cat *', 'echo *', 'git status', 'npm run test:*'],
      }),
      'policy.json',
    )
    expect(policy).toEqual({
      default: 'ask',
      deny: ['rm -rf *', 'sudo *'],
      ask: ['git push *'],
      allow: ['ls *', 'cat *', 'echo *', 'git status', 'npm run test:*'],
      interactive: [],
      maxCommands: 50,
      maxCommandBytes: 16384,
    })
    expect(Object.isFrozen(policy)).toBe(true)
    expect(Object.isFrozen(policy.allow)).toBe(true)
  })

  it('reads YAML', () => {
    const policy = parsePolicy('default: deny\n# comment\nallow:\n  - ls *\n  - "git status"\nmaxCommands: 10\n', 'policy.yaml')
    expect(policy).toMatchObject({ default: 'deny', allow: ['ls *', 'git status'], deny: [], ask: [], maxCommands: 10 })
  })

  it('an empty policy asks about everything', () => {
    expect(parsePolicy('{}', 'p.json')).toMatchObject({ default: 'ask', deny: [], ask: [], allow: [] })
  })

  it('refuses a rule list that is not a list of strings, naming the line', () => {
    expect(refused('{\n  "default": "ask",\n  "deny": ["rm -rf *"],\n  "ask": "git push *"\n}')).toBe(
      'policy.json:4:10: "ask" must be a list of strings',
    )
    expect(refused('{\n  "deny": [\n    "rm -rf *",\n    42\n  ]\n}')).toBe('policy.json:4:5: "deny" must be a list of strings')
    expect(refused('default: ask\ndeny:\n  - rm -rf *\n  - [a]\n', 'p.yaml')).toBe('p.yaml:4:5: "deny" must be a list of strings')
    expect(refused('allow: ls *\n', 'p.yml')).toBe('p.yml:1:8: "allow" must be a list of strings')
  })

  it('refuses an unknown default, key or limit, and an empty pattern', () => {
    expect(refused('{\n  "default": "maybe"\n}')).toBe('policy.json:2:14: "default" must be one of "allow", "ask", "deny"')
    expect(refused('{\n  "default": "ask",\n  "alow": ["ls *"]\n}')).toMatch(/^policy\.json:3:3: unknown key "alow" \(expected one of default, deny/)
    expect(refused('{\n  "maxCommands": 0\n}')).toBe('policy.json:2:18: "maxCommands" must be a positive integer')
    expect(refused('{\n  "maxCommandBytes": 1.5\n}')).toBe('policy.json:2:22: "maxCommandBytes" must be a positive integer')
    expect(refused('{\n  "allow": ["ls *", "  "]\n}')).toBe('policy.json:2:21: "allow" has an empty pattern')
    expect(refused('[1, 2]')).toBe('policy.json:1:1: the policy must be a mapping of "default", "deny", "ask" and "allow"')
    expect(refused('  \n')).toBe('policy.json:1:1: the policy file is empty')
  })

  it('refuses broken JSON with the line and column, even where JSON.parse gives no position', () => {
    expect(refused('{\n  "deny": ["rm"],\n}')).toBe('policy.json:3:1: invalid JSON: expected a double-quoted property name')
    expect(refused('{\n  "deny": ["rm" "x"]\n}')).toBe('policy.json:2:17: invalid JSON: expected "," or "]" after a list item')
    expect(refused('{\n "a": }')).toBe('policy.json:2:7: invalid JSON: unexpected "}"')
    expect(refused('{"deny": ["a"]')).toBe('policy.json:1:15: invalid JSON: unexpected end of the file')
    expect(refused('{"deny": ["a"]} x')).toBe('policy.json:1:17: invalid JSON: unexpected text after the policy')
    expect(refused('{\n  // comment\n}')).toBe('policy.json:2:3: invalid JSON: expected a double-quoted property name')
  })

  it('refuses duplicate keys', () => {
    expect(refused('{"deny": ["a"],\n "deny": ["b"]}')).toMatch(/^policy\.json:2:2: invalid JSON: map keys must be unique/)
  })

  it('refuses broken YAML with the line', () => {
    expect(refused('deny: [a\n', 'p.yml')).toMatch(/^p\.yml:2:1: invalid YAML: /)
    expect(refused('default: ask\n  deny: x\n', 'p.yaml')).toMatch(/^p\.yaml:1:10: invalid YAML: /)
  })

  it('chooses JSON or YAML by the extension, else by the first character', () => {
    expect(parsePolicy('{"allow": ["ls *"]}')).toMatchObject({ allow: ['ls *'] })
    expect(parsePolicy('allow: [ls *]')).toMatchObject({ allow: ['ls *'] })
    expect(refused('{"allow": [ls *]}', 'policy')).toMatch(/^policy:1:12: invalid JSON/)
  })

  it('loadPolicyFile: errors start with the path and the line', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bash-policy-'))
    const good = join(dir, 'good.yaml')
    writeFileSync(good, 'allow: [ls *]\n')
    expect(loadPolicyFile(good)).toMatchObject({ allow: ['ls *'] })
    const bad = join(dir, 'policy.json')
    writeFileSync(bad, '{\n  "default": "ask",\n  "deny": ["rm -rf *"],\n  "ask": "git push *"\n}\n')
    expect(() => loadPolicyFile(bad)).toThrow(`${bad}:4:10: "ask" must be a list of strings`)
    expect(() => loadPolicyFile(join(dir, 'missing.json'))).toThrow(new RegExp(`^${join(dir, 'missing.json')}: cannot read the policy file: ENOENT`))
    let unreadable: unknown
    try {
      loadPolicyFile(join(dir, 'missing.json'))
    } catch (error) {
      unreadable = error
    }
    expect(unreadable).toMatchObject({ code: 'DSH_POLICY_UNREADABLE' })
    expect(isPolicyError(unreadable)).toBe(true)
  })

  it('definePolicy validates an object the same way, without a line', () => {
    expect(definePolicy({ allow: ['ls *'] })).toMatchObject({ default: 'ask', allow: ['ls *'] })
    expect(() => definePolicy({ deny: 'rm' })).toThrow('policy: "deny" must be a list of strings')
  })
})
