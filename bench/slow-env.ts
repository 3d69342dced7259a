/**
 * npm run bench:slow-env: what one slow environment costs the others. Four built-in 3DBall
 * environments (12 agents each), actions of zeros; one of them sleeps after every step
 * (--step-delay-ms on its port) so that it steps about 10 times slower than the others. Decisions
 * per second over all environments, stepped two ways:
 *   lockstep:   every environment steps, then all wait for the slowest (how the trainer stepped before)
 *   EnvManager: each environment steps on its own, as the trainer steps them now (upstream's
 *               SubprocessEnvManager)
 * Options: --seconds 8  --envs 4
 */
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { UnityEnvironment } from '../src/env/unity-environment';
import { builtinExecutable } from '../src/sims/builtin';
import { ActingPolicy } from '../src/trainers/action-info';
import { AgentManager } from '../src/trainers/agent-processor';
import { EnvManager } from '../src/trainers/env-manager';
import { envManagerOptions } from '../test/helpers/env-manager-options';
import { freePort } from '../test/helpers/paths';
import { ZeroPolicy } from '../test/helpers/zero-policy';
import { printTable } from './table';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '8' }, envs: { type: 'string', default: '4' } } });
const SECONDS = Number(values.seconds);
const ENVS = Number(values.envs);
const EXECUTABLE = builtinExecutable('3DBall');

/** The environments' arguments: none slow, or the last one sleeping `delayMs` after every step. */
function envArgs(basePort: number, delayMs: number): string[] {
  return delayMs > 0 ? ['--step-delay-ms', String(delayMs), '--step-delay-port', String(basePort + ENVS - 1)] : [];
}

/** Decisions and steps per second with every environment stepping together, waiting for the slowest. */
async function lockstep(delayMs: number): Promise<{ decisions: number; steps: number }> {
  const basePort = await freePort();
  const envs = await Promise.all(
    Array.from({ length: ENVS }, (_, workerId) =>
      UnityEnvironment.create({ fileName: EXECUTABLE, workerId, basePort, noGraphics: true, additionalArgs: envArgs(basePort, delayMs), logger: memoryLogger() }),
    ),
  );
  try {
    await Promise.all(envs.map((env) => env.reset()));
    let decisions = 0;
    let steps = 0;
    const end = performance.now() + SECONDS * 1000;
    while (performance.now() < end) {
      steps += 1;
      for (const env of envs) {
        for (const [name, spec] of env.behaviorSpecs) {
          const [decision] = env.getSteps(name);
          decisions += decision.length;
          env.setActions(name, spec.actionSpec.emptyAction(decision.length));
        }
      }
      await Promise.all(envs.map((env) => env.step()));
    }
    return { decisions: decisions / SECONDS, steps: steps / SECONDS };
  } finally {
    await Promise.all(envs.map((env) => env.close()));
  }
}

/** Decisions per second through the trainer's EnvManager. */
async function envManager(delayMs: number): Promise<number> {
  const basePort = await freePort();
  let decisions = 0;
  const created: AgentManager<ActingPolicy>[] = [];
  const manager = await EnvManager.launch(
    envManagerOptions({ executable: EXECUTABLE, numEnvs: ENVS, basePort, timeoutWait: 60, envArgs: envArgs(basePort, delayMs) }),
    (name, spec) => {
      const agents = new AgentManager<ActingPolicy>(spec, { behaviorId: name, stats: { addStat: () => undefined, setStat: () => undefined }, threaded: false });
      const add = agents.addExperiences.bind(agents);
      agents.addExperiences = (decisionSteps, terminalSteps, workerId, actions) => {
        decisions += decisionSteps.length;
        add(decisionSteps, terminalSteps, workerId, actions);
      };
      agents.policyQueue.put(new ZeroPolicy(spec));
      created.push(agents);
      return agents;
    },
  );
  try {
    await manager.reset();
    decisions = 0;
    const end = performance.now() + SECONDS * 1000;
    while (performance.now() < end) {
      await manager.step();
      // The trajectories are not trained on here: drop them so that memory stays flat.
      for (const agents of created) agents.trajectoryQueue.drain();
    }
    return decisions / SECONDS;
  } finally {
    await manager.close();
  }
}

async function main(): Promise<void> {
  // How long a normal environment takes per step here, to make the slow one 10 times slower.
  const fast = await lockstep(0);
  const stepMs = 1000 / fast.steps;
  const delayMs = Math.max(1, Math.round(9 * stepMs));
  const rows: string[][] = [];
  const row = (name: string, allFast: number, oneSlow: number) =>
    rows.push([name, allFast.toFixed(0), oneSlow.toFixed(0), `${((100 * oneSlow) / allFast).toFixed(0)} %`]);
  row('lockstep', fast.decisions, (await lockstep(delayMs)).decisions);
  row('EnvManager', await envManager(0), await envManager(delayMs));
  printTable(
    `${ENVS} x 3DBall (12 agents each), ${SECONDS} s per row; the slow one sleeps ${delayMs} ms a step (a step takes about ${stepMs.toFixed(1)} ms here)`,
    ['stepping', 'decisions/s, all fast', 'decisions/s, one 10x slower', 'kept'],
    rows,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
