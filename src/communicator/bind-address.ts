/**
 * Where the trainer's gRPC server listens. Unity's client speaks plain, unauthenticated gRPC, so
 * a server bound beyond loopback lets anyone who can reach the machine connect: worth one clear
 * warning at start.
 */
import type { Logger } from '../common/logger';

/** Whether only this machine can reach a server bound to `host` (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackAddress(host: string): boolean {
  const bare = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** Warns, once at start, when the server bound to `host` is open beyond this machine. */
export function warnIfOpenToNetwork(host: string, logger: Logger): void {
  if (isLoopbackAddress(host)) return;
  logger.warning(
    `--bind-address ${host}: the trainer's port is open to the network, without authentication or encryption ` +
      "(Unity's client supports neither): anyone who can reach this machine can connect to the training session. " +
      'Bind to localhost unless the environments run on other machines, and then only on a network you trust.',
  );
}
