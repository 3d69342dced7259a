/**
 * engine_settings.no_graphics_monitor (ML-Agents release 22), as upstream: the first environment
 * keeps its graphics, every other one runs with -nographics -batchmode. Real child processes of
 * the built-in Basic environment, whose player logs name the Unity flags they were given.
 */
import * as fs from 'fs';
import * as path from 'path';
import { builtinExecutable } from '../../src/sims/builtin';
import { ActingPolicy } from '../../src/trainers/action-info';
import { AgentManager } from '../../src/trainers/agent-processor';
import { EnvManager } from '../../src/trainers/env-manager';
import { ENGINE_SETTINGS, envManagerOptions } from '../helpers/env-manager-options';
import { freePort, tempDir } from '../helpers/paths';

async function launchedFlags(noGraphics: boolean, noGraphicsMonitor: boolean): Promise<string[]> {
  const logFolder = tempDir('graphics-monitor');
  const envManager = await EnvManager.launch(
    envManagerOptions({
      executable: builtinExecutable('Basic'),
      numEnvs: 3,
      basePort: await freePort(),
      noGraphics,
      logFolder,
      engine: { ...ENGINE_SETTINGS, no_graphics: noGraphics, no_graphics_monitor: noGraphicsMonitor },
    }),
    (name, spec) => new AgentManager<ActingPolicy>(spec, { behaviorId: name, stats: { addStat: () => undefined, setStat: () => undefined }, threaded: false }),
  );
  // Each player logs the Unity flags it was given before it connects; launch() waits for all of them.
  await envManager.close();
  return [0, 1, 2].map((worker) => fs.readFileSync(path.join(logFolder, `Player-${worker}.log`), 'utf8'));
}

describe('engine_settings.no_graphics_monitor', () => {
  it('runs every environment but the first without graphics', async () => {
    const logs = await launchedFlags(false, true);
    expect(logs[0]).not.toContain('-nographics');
    expect(logs[1]).toContain('-nographics -batchmode');
    expect(logs[2]).toContain('-nographics -batchmode');
  });

  it('changes nothing when no_graphics is set (none renders) or when it is off (all render)', async () => {
    expect((await launchedFlags(true, true)).every((log) => log.includes('-nographics -batchmode'))).toBe(true);
    expect((await launchedFlags(false, false)).some((log) => log.includes('-nographics'))).toBe(false);
  });
});
