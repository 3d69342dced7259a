/**
 * The EnvManager restarting crashed workers, against the scripted environment: real child
 * processes that leave the session after a number of steps, or that are killed.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ActingPolicy } from '../../src/trainers/action-info';
import { AgentManager } from '../../src/trainers/agent-processor';
import { EnvManager, RestartLimits } from '../../src/trainers/env-manager';
import { SCRIPTED_ENV, freePort, tempDir } from '../helpers/paths';
import { ZeroPolicy } from '../helpers/zero-policy';
import { envManagerOptions } from '../helpers/env-manager-options';

const opened: EnvManager[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((m) => m.close()));
});

async function launch(numEnvs: number, envArgs: string[], restarts: RestartLimits) {
  const logger = memoryLogger();
  const logFolder = tempDir('env-restarts');
  const managers = new Map<string, AgentManager<ActingPolicy>>();
  const episodeLengths: number[] = [];
  const stats = {
    addStat: (key: string, value: number) => key === 'Environment/Episode Length' && episodeLengths.push(value),
    setStat: () => undefined,
  };
  const envManager = await EnvManager.launch(
    envManagerOptions({
      executable: SCRIPTED_ENV,
      numEnvs,
      basePort: await freePort(),
      timeoutWait: 10,
      envArgs: ['--agents', '2', ...envArgs],
      logFolder,
      restarts,
      logger,
    }),
    (name, spec) => {
      const manager = new AgentManager<ActingPolicy>(spec, {
        behaviorId: name,
        stats,
        threaded: false,
      });
      manager.policyQueue.put(new ZeroPolicy(spec));
      managers.set(name, manager);
      return manager;
    },
  );
  opened.push(envManager);
  await envManager.reset();
  return { envManager, logger, episodeLengths, logFolder };
}

const UNLIMITED: RestartLimits = { max_lifetime_restarts: -1, restarts_rate_limit_n: -1, restarts_rate_limit_period_s: 60 };

describe('restarting crashed environment workers', () => {
  it('relaunches a worker that left the session on its port, resets it and goes on stepping', async () => {
    const { envManager, logger, episodeLengths, logFolder } = await launch(1, ['--episode-length', '3', '--quit-after', '5'], UNLIMITED);
    const first = envManager.environments[0];
    for (let step = 1; step <= 4; step++) await envManager.step();
    expect(episodeLengths).toEqual([2, 2]);
    await envManager.step(); // the environment leaves at its fifth step: restarted and reset
    expect(envManager.restartCountPerWorker).toEqual([1]);
    const second = envManager.environments[0];
    expect(second).not.toBe(first);
    expect(second.port).toBe(first.port);
    // Upstream's warning, then where the crashed player's log went: the relaunch writes Player-0.log afresh.
    const kept = path.join(logFolder, 'Player-0.crash-1.log');
    const warning = logger.lines.find((l) => l.level === 'warning' && l.message.startsWith('Restarting worker[0]'));
    expect(warning?.message).toMatch(/^Restarting worker\[0\] after '.+'\. Its log up to the crash is kept in /);
    expect(warning?.message.endsWith(kept)).toBe(true);
    expect(fs.readFileSync(kept, 'utf8')).toContain('leaving after 5 steps');
    expect(fs.readFileSync(path.join(logFolder, 'Player-0.log'), 'utf8')).not.toContain('leaving after');
    // The new process answers from its first step (the observation starts with the step number).
    expect(second.getSteps('Scripted')[0].observation(0, 0)[0]).toBe(0);
    await envManager.step();
    expect(second.getSteps('Scripted')[0].observation(0, 0)[0]).toBe(1);
    // The episodes cut by the crash ended without a trace: the next ones count from the reset.
    await envManager.step();
    await envManager.step();
    expect(episodeLengths).toEqual([2, 2, 2, 2]);
  });

  it('restarts a killed worker and keeps the other one', async () => {
    const { envManager } = await launch(2, [], UNLIMITED);
    await envManager.step();
    const [kept, killed] = envManager.environments;
    const pid = (killed as unknown as { process: { pid: number } }).process.pid;
    process.kill(pid, 'SIGKILL');
    // Workers step on their own: the other one's steps may come in before the crash is seen.
    for (let step = 0; step < 20 && envManager.restartCountPerWorker[1] === 0; step++) await envManager.step();
    expect(envManager.restartCountPerWorker).toEqual([0, 1]);
    expect(envManager.environments[0]).toBe(kept);
    const replacement = envManager.environments[1];
    expect(replacement).not.toBe(killed);
    await envManager.step();
    expect(replacement.getSteps('Scripted')[0].length).toBe(2);
  });

  it('stops when a worker crashes more often than --max-lifetime-restarts', async () => {
    const limits = { ...UNLIMITED, max_lifetime_restarts: 2 };
    const { envManager, logger } = await launch(1, ['--quit-after', '1'], limits);
    await envManager.step();
    await envManager.step();
    expect(envManager.restartCountPerWorker).toEqual([2]);
    await expect(envManager.step()).rejects.toThrow(
      /^Worker 0 exceeded the allowed number of restarts \(--max-lifetime-restarts 2\)\. Environment worker 0 \(port \d+\) stopped: /,
    );
    expect(logger.lines).toContainEqual({ level: 'error', message: 'Worker 0 exceeded the allowed number of restarts.' });
  });

  it('stops when a worker crashes more than --restarts-rate-limit-n times within the period', async () => {
    const limits = { max_lifetime_restarts: 10, restarts_rate_limit_n: 1, restarts_rate_limit_period_s: 60 };
    const { envManager } = await launch(1, ['--quit-after', '1'], limits);
    await envManager.step();
    expect(envManager.restartCountPerWorker).toEqual([1]);
    await expect(envManager.step()).rejects.toThrow(
      /exceeded the allowed number of restarts \(--restarts-rate-limit-n 1 within --restarts-rate-limit-period-s 60\)/,
    );
  });

  it('counts only the restarts within the period against the rate limit', async () => {
    const limits = { max_lifetime_restarts: 10, restarts_rate_limit_n: 1, restarts_rate_limit_period_s: 0 };
    const { envManager } = await launch(1, ['--quit-after', '1'], limits);
    await envManager.step();
    await envManager.step();
    expect(envManager.restartCountPerWorker).toEqual([2]);
  });
});
