#!/usr/bin/env node
// The command. The built program is dist/main.js (packages/cli/bundle.mjs); this file exists before
// any build, so npm links the command even in a fresh clone, where the build runs after the link.
import('../dist/main.js').catch((error) => {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/main.js')) {
    process.stderr.write('dsh-bash: not built yet: run "npm run build" in the repository\n')
    process.exit(1)
  }
  throw error
})
