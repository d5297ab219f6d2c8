// Lint rules that encode the project's style: typed, no `any`, no floating promises.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/** Modules of the engine that only the engine (and its own tests) may import. */
const engineInternals = {
  group: [
    '**/lib/volumemanager/cache/**',
    '**/lib/volumemanager/reconciler/**',
    '**/lib/volumemanager/populator/**',
    '**/lib/volumemanager/internals.ts',
    '**/lib/operationexecutor/**',
  ],
  message: 'The agent uses the engine through lib/volumemanager/index.ts; these modules are its internals.',
};

/** The engine's test harness and fixtures. */
const engineTesting = {
  group: ['**/lib/volumemanager/testing/**'],
  message: 'The engine test harness is for tests; the agent uses the engine through lib/volumemanager/index.ts.',
};

export default tseslint.config(
  // components/headlamp/plugin is its own package, type-checked and linted by Headlamp's tooling (`npm run tsc` there).
  { ignores: ['node_modules/', '.next/', '.volumescope/', 'e2e/artifacts/', 'next-env.d.ts', 'components/headlamp/plugin/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'Use the injected Clock (lib/clock) instead of Date.now().',
        },
      ],
    },
  },
  {
    // The agent uses the engine through its public surface, lib/volumemanager/index.ts. The
    // worlds, the populator, the reconciler and the operation executor are the engine's internals.
    files: ['agent/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [engineInternals] }] },
  },
  {
    // Only the agent's tests and their fixtures may use the engine's test harness.
    files: ['agent/**'],
    ignores: ['agent/**/*.test.ts', 'agent/**/testing/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [engineInternals, engineTesting] }] },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { globals: globals.node, parserOptions: { projectService: false, project: null } },
  },
  {
    // Scripts, benchmarks and the agent process may read the wall clock directly.
    files: ['lib/clock/clock.ts', 'scripts/**', 'bench/**', 'agent/**', 'e2e/**', 'app/**', 'components/**', '**/*.test.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
