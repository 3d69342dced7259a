/**
 * A slow environment does not slow the others: with two built-in Basic environments, one of them
 * sleeping 200 ms after every step (--step-delay-ms on its port), the fast one keeps stepping
 * while the slow one's step is in flight, as upstream's SubprocessEnvManager steps its workers.
 */
import { ActingPolicy } from '../../src/trainers/action-info';
import { AgentManager } from '../../src/trainers/agent-processor';
import { EnvManager } from '../../src/trainers/env-manager';
import { builtinExecutable } from '../../src/sims/builtin';
import { envManagerOptions } from '../helpers/env-manager-options';
import { freePort } from '../helpers/paths';
import { ZeroPolicy } from '../helpers/zero-policy';

it('steps the fast environment many times while the slow one makes one step', async () => {
  const basePort = await freePort();
  const stepsPerWorker = [0, 0];
  const envManager = await EnvManager.launch(
    envManagerOptions({
      executable: builtinExecutable('Basic'),
      numEnvs: 2,
      basePort,
      envArgs: ['--step-delay-ms', '200', '--step-delay-port', String(basePort + 1)],
    }),
    (name, spec) => {
      const manager = new AgentManager<ActingPolicy>(spec, { behaviorId: name, stats: { addStat: () => undefined, setStat: () => undefined }, threaded: false });
      // Counts each worker's steps as they are taken in.
      const addExperiences = manager.addExperiences.bind(manager);
      manager.addExperiences = (decisions, terminals, workerId, actions) => {
        stepsPerWorker[workerId] += 1;
        addExperiences(decisions, terminals, workerId, actions);
      };
      manager.policyQueue.put(new ZeroPolicy(spec));
      return manager;
    },
  );
  try {
    await envManager.reset();
    while (stepsPerWorker[1] < 6) await envManager.step();
  } finally {
    await envManager.close();
  }
  // In lockstep both would have made the same number of steps.
  expect(stepsPerWorker[0]).toBeGreaterThan(5 * stepsPerWorker[1]);
}, 60_000);
