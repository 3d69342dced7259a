/**
 * npm run bench:sims: how fast each built-in environment runs.
 *   world:    the Academy stepping the world in process, actions drawn at random (no protocol);
 *   protocol: the built executable driven over loopback gRPC by UnityEnvironment sending random actions.
 * Agent-steps count every agent at every academy step; decisions count what the trainer sees.
 */
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { UnityEnvironment } from '../src/env/unity-environment';
import { Academy, ActionsByBehavior, Brain, Decision, InfoBatch } from '../src/sims/sdk/academy';
import { SeededRandom } from '../src/common/random';
import { SimDefinition } from '../src/sims/sdk/run-environment';
import { builtinExecutable } from '../src/sims/builtin';
import { BALL3D } from '../src/sims/envs/ball3d';
import { BASIC } from '../src/sims/envs/basic';
import { GRIDWORLD } from '../src/sims/envs/gridworld';
import { SIMPLE_GOAL } from '../src/sims/envs/simple-goal';
import { freePort } from '../test/helpers/paths';

const ENVIRONMENTS: SimDefinition[] = [BALL3D, BASIC, GRIDWORLD, SIMPLE_GOAL];

/** Random actions for whoever asks, as a trainer with an untrained policy would send. */
class RandomBrain implements Brain {
  private readonly random = new SeededRandom(1);

  async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
    const actions = new Map<string, { continuous: Float32Array; discrete: Int32Array }>();
    for (const [name, batch] of batches) {
      const deciding = batch.decidingAgents().length;
      const branches = batch.group.template.behavior.discreteBranches;
      const continuous = new Float32Array(deciding * batch.group.continuousSize).map(() => this.random.range(-1, 1));
      const discrete = new Int32Array(deciding * branches.length).map((_, i) => this.random.int(branches[i % branches.length]));
      actions.set(name, { continuous, discrete });
    }
    return { kind: 'actions', actions: actions as ActionsByBehavior };
  }
}

function defaults(definition: SimDefinition): Record<string, string | boolean | undefined> {
  return Object.fromEntries(Object.entries(definition.options).map(([name, o]) => [name, o.default]));
}

async function worldRate(definition: SimDefinition, seconds: number): Promise<{ agents: number; agentSteps: number; decisions: number }> {
  const academy = new Academy();
  academy.seed(1);
  definition.create(academy, defaults(definition), 1);
  let decisions = 0;
  academy.addBatchListener((batches) => {
    for (const batch of batches.values()) decisions += batch.decidingAgents().length;
  });
  academy.reset();
  const brain = new RandomBrain();
  const agents = academy.agents.length;
  let steps = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0;
  while (elapsed < seconds) {
    for (let i = 0; i < 100; i++) await academy.step(brain);
    steps += 100;
    elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  }
  return { agents, agentSteps: (agents * steps) / elapsed, decisions: decisions / elapsed };
}

async function protocolRate(definition: SimDefinition, seconds: number): Promise<{ decisions: number; exchanges: number }> {
  const env = await UnityEnvironment.create({
    fileName: builtinExecutable(definition.name),
    basePort: await freePort(),
    timeoutWait: 30,
    logger: memoryLogger(),
  });
  const random = new SeededRandom(2);
  try {
    await env.reset();
    let decisions = 0;
    let exchanges = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < seconds) {
      for (const [name, spec] of env.behaviorSpecs) {
        const [decision] = env.getSteps(name);
        decisions += decision.length;
        env.setActions(name, spec.actionSpec.randomAction(decision.length, () => random.next()));
      }
      await env.step();
      exchanges += 1;
      elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    }
    return { decisions: decisions / elapsed, exchanges: exchanges / elapsed };
  } finally {
    await env.close();
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, only: { type: 'string' } } });
  const seconds = Number(values.seconds);
  const chosen = ENVIRONMENTS.filter((d) => values.only === undefined || values.only.split(',').includes(d.name));
  const header = ['environment', 'agents', 'world agent-steps/s', 'world decisions/s', 'protocol exchanges/s', 'protocol decisions/s'];
  const rows: string[][] = [];
  for (const definition of chosen) {
    const world = await worldRate(definition, seconds);
    const protocol = await protocolRate(definition, seconds);
    rows.push([definition.name, String(world.agents), fmt(world.agentSteps), fmt(world.decisions), fmt(protocol.exchanges), fmt(protocol.decisions)]);
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  process.stdout.write(
    `Built-in environments, default settings, random actions; ${seconds} s per measure. Node ${process.version}.\n` +
      `world: the Academy in process (no protocol); protocol: the executable over loopback gRPC with UnityEnvironment.\n\n` +
      `${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n\n` +
      `Aim: 3DBall world stepping over 100,000 agent-steps/s.\n`,
  );
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});

