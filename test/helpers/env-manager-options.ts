/** EnvManager launch options for tests and benchmarks: a built environment, no graphics, no restarts. */
import { memoryLogger } from '../../src/common/logger';
import type { LaunchOptions } from '../../src/trainers/env-manager';
import type { EngineSettings } from '../../src/config/settings';
import { tempDir } from './paths';

/** Upstream's default engine settings, without graphics. */
export const ENGINE_SETTINGS: EngineSettings = {
  width: 84,
  height: 84,
  quality_level: 5,
  time_scale: 20,
  target_frame_rate: -1,
  capture_frame_rate: 60,
  no_graphics: true,
  no_graphics_monitor: false,
};

export function envManagerOptions(
  options: Pick<LaunchOptions, 'executable' | 'basePort'> & Partial<LaunchOptions>,
): LaunchOptions {
  return {
    numEnvs: 1,
    seed: 0,
    noGraphics: true,
    timeoutWait: 20,
    envArgs: [],
    numAreas: 1,
    bindAddress: 'localhost',
    logFolder: tempDir('env-manager'),
    engine: { ...ENGINE_SETTINGS, no_graphics: options.noGraphics ?? true },
    environmentParameters: null,
    restarts: { max_lifetime_restarts: 0, restarts_rate_limit_n: -1, restarts_rate_limit_period_s: 60 },
    logger: memoryLogger(),
    ...options,
  };
}
