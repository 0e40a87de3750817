// The linter in `npm test` (see README "Testing"). Type-aware: the promise rules need types.
// Sources are linted with their package's own tsconfig.json; tests with tsconfig.lint.json.
// typescript-eslint 8 needs TypeScript's classic JS API, which TypeScript 7 no longer ships: the
// root package.json therefore maps `typescript` to @typescript/typescript6 (read by the linter only)
// and takes `tsc` from @typescript/native (TypeScript 7, the build).
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['**/dist/**', '**/lib/**', '**/node_modules/**', '**/*.mjs', '**/*.js', '**/*.cjs'] },
  {
    files: ['packages/*/src/**/*.ts', 'packages/*/test/**/*.ts', 'test/**/*.ts', 'vitest.config.ts', 'vitest.leaks.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        project: ['tsconfig.lint.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection ends the process) and
      // its ordering; fire-and-forget is written `void p` with a comment saying who handles failure.
      '@typescript-eslint/no-floating-promises': 'error',
      // An async function where a void callback is expected (an event listener, forEach, setTimeout)
      // runs unawaited: same loss as above, hidden in a call.
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
)
