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
    // The four everyday lines issue 25 found refused, and neighbours of them that stay refused.
    ['cd src && ls', 'allow'],
    ['git --no-pager log --oneline -3', 'allow'],
    ['for f in src/*.js; do wc -l "$f"; done', 'allow'],
    ['ls "$(pwd)"', 'allow'],
    ['(cd src && git -C .. status --short) | head', 'allow'],
    ['diff <(sort a) <(sort b)', 'allow'],
    ["cat - <<'EOF'\nnotes\nEOF", 'allow'],
    ['rg -n TODO src/*.ts', 'allow'],
    ['git --no-pager -c core.pager=x log', 'ask'],
    ['for f in src/*.js; do rm "$f"; done', 'ask'],
    ['ls "$(npm install x)"', 'ask'],
    ['cd src && ./configure', 'ask'],
    ['for PATH in /tmp/evil; do ls; done', 'ask'],
  ] as const)('%s → %s', async (command, kind) => {
    expect((await decide(policy, command)).kind).toBe(kind)
  })
})
