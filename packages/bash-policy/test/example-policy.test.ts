import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { decide, loadPolicyFile } from '../src/index.js'

const file = fileURLToPath(new URL('../../../examples/policy.cautious.json', import.meta.url))

describe('examples/policy.cautious.json', () => {
  const policy = loadPolicyFile(file)

  it.each([
    ['ls -la && git status --short && git diff --stat', 'allow'],
    ['rg -n TODO src | head -20', 'allow'],
    ['npm test', 'allow'],
    ['set -euo pipefail; npm test 2>&1 | tail -50', 'allow'],
    ['set -euo pipefail; export NODE_ENV=test && npm test 2>&1 | tail -50', 'ask'],
    ['export PATH=/tmp/evil:$PATH', 'ask'],
    ['shopt -s expand_aliases', 'ask'],
    ['find . -name "*.ts" -exec wc -l {} +', 'allow'],
    ['rm -rf node_modules', 'deny'],
    ['sudo apt-get install x', 'deny'],
    ['git push --force origin main', 'deny'],
    ['git push origin main', 'ask'],
    ['npm install left-pad', 'ask'],
    ['curl https://example.com', 'ask'],
    ['echo x > ~/.bashrc', 'ask'],
    ["sed -i 's/a/b/' file", 'ask'],
    ['find . -delete', 'ask'],
    ['git -c core.pager=x log', 'ask'],
    ['./configure', 'ask'],
    ['python3 -c "print(1)"', 'ask'],
  ] as const)('%s → %s', async (command, kind) => {
    expect((await decide(policy, command)).kind).toBe(kind)
  })
})
