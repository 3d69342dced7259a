/**
 * Built environments (dist/sims/...) started the way a trainer starts a Unity build, for tests.
 * Every environment opened here is closed by closeOpenedEnvironments: a test file calls
 * `afterEach(closeOpenedEnvironments)` so that no child process outlives its test.
 */
import { memoryLogger } from '../../src/common/logger';
import { UnityEnvironment, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { freePort } from './paths';

const opened: UnityEnvironment[] = [];

/**
 * Starts the executable `file` with `args` on a free port and waits for its handshake: 10 s to
 * connect and logs kept in memory, unless `options` say otherwise. The environment is not reset.
 */
export async function openBuiltEnvironment(
  file: string,
  args: string[] = [],
  options: Partial<UnityEnvironmentOptions> = {},
): Promise<UnityEnvironment> {
  const env = await UnityEnvironment.create({
    fileName: file,
    basePort: await freePort(),
    timeoutWait: 10,
    additionalArgs: args,
    logger: memoryLogger(),
    ...options,
  });
  opened.push(env);
  return env;
}

/** Closes every environment openBuiltEnvironment opened since the last call. */
export async function closeOpenedEnvironments(): Promise<void> {
  await Promise.all(opened.splice(0).map((env) => env.close()));
}
