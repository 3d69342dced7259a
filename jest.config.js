/**
 * Jest runs the TypeScript sources directly through ts-jest, each module with the JavaScript
 * built-ins bound to local constants (test/helpers/intrinsics-transform.js says why).
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['<rootDir>/test/helpers/intrinsics-transform.js', { tsconfig: 'tsconfig.json' }],
  },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  testTimeout: 30000,
};
