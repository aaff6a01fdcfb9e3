import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // vitest's default on this 2-core machine is one worker (cores - 1); the cluster tests mostly
    // wait on the API server and controllers, and each isolates itself (own namespaces, selector,
    // user agent), so two files at a time: 293 s -> 169 s for the whole suite here (issue 9)
    maxWorkers: 2,
    reporters: process.env.CI ? ['default', ['json', { outputFile: '.tmp/vitest.json' }]] : ['default'],
    projects: [
      // pure functions: no control plane (`npx vitest run --project unit` runs in seconds)
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'src/**/*.test.ts', 'api/**/*.test.ts'] } },
      // one real control plane (etcd + kube-apiserver) for the rest; see test/support/global-setup.ts
      {
        extends: true,
        test: { name: 'cluster', include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'], globalSetup: ['test/support/global-setup.ts'] },
      },
    ],
  },
});
