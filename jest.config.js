/** Unit specs live beside the code; integration and e2e tests in test/. */
const transform = {
  '^.+\\.(t|j)s$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
      },
      module: { type: 'commonjs' },
    },
  ],
};
const common = {
  transform,
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
};
module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    // Real databases and brokers, two files at a time beside the heavy random-data tests:
    // a wait longer than Jest's 5 s default is load, not a failure (no test asserts speed).
    // `testTimeout` is global-only (a project's own is ignored), so a setup file sets it.
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/timeout.ts'],
    },
    // The web page in Debian's Chromium (playwright-core) against a running Climate: part of
    // `npm test`. The screenshots for docs/ are `npm run ui:screenshots`, not a test.
    {
      ...common,
      displayName: 'ui',
      testMatch: ['<rootDir>/test/ui/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/timeout.ts'],
    },
    {
      ...common,
      displayName: 'screenshots',
      testMatch: ['<rootDir>/test/ui/screenshots.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/timeout.ts'],
    },
    // Needs Keystone and Nova running (../shared/openstack): `npm run test:openstack`.
    { ...common, displayName: 'openstack', testMatch: ['<rootDir>/test/openstack/*.test.ts'] },
  ],
};
