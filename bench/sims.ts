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
import { ObservationWriter, VisualObservationSpec, observationLength } from '../src/sims/sdk/agent';
import { encodeObservationPng } from '../src/sims/sdk/png';
import { SimDefinition } from '../src/sims/sdk/run-environment';
import { builtinExecutable } from '../src/sims/builtin';
import { BALL3D } from '../src/sims/envs/ball3d';
import { BASIC } from '../src/sims/envs/basic';
import { GRIDWORLD } from '../src/sims/envs/gridworld';
import { SIMPLE_GOAL } from '../src/sims/envs/simple-goal';
import { TENNIS } from '../src/sims/envs/tennis';
import { VISUAL3DBALL } from '../src/sims/envs/visual3dball';
import { freePort } from '../test/helpers/paths';

const ENVIRONMENTS: SimDefinition[] = [BALL3D, BASIC, GRIDWORLD, SIMPLE_GOAL, TENNIS, VISUAL3DBALL];

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

/**
 * For an environment whose agents see a PNG camera: microseconds to draw one image (the agent's
 * collectObservations, as the Academy calls it at a decision) and to PNG-encode it, and its bytes.
 * Null when the environment has no such camera.
 */
function cameraCost(definition: SimDefinition, seconds: number): { render: number; encode: number; bytes: number } | null {
  const academy = new Academy();
  academy.seed(1);
  definition.create(academy, defaults(definition), 1);
  academy.reset();
  const agent = academy.agents[0];
  const index = agent.behavior.observations.findIndex((o) => o.kind === 'visual' && o.compressed);
  if (index < 0) return null;
  const spec = agent.behavior.observations[index] as VisualObservationSpec;
  const writer = new ObservationWriter(new Float32Array(observationLength(spec)));
  const time = (work: () => void): number => {
    for (let i = 0; i < 50; i++) work(); // warm up
    let runs = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    while (elapsed < seconds / 2) {
      for (let i = 0; i < 50; i++) work();
      runs += 50;
      elapsed = Number(process.hrtime.bigint() - start) / 1e9;
    }
    return (elapsed / runs) * 1e6;
  };
  const render = time(() => agent.collectObservations(index, writer));
  let bytes = 0;
  const encode = time(() => {
    bytes = encodeObservationPng(writer.values, spec.channels, spec.height, spec.width).length;
  });
  return { render, encode, bytes };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** Columns: the first padded right, the others left. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return `${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.map(line).join('\n')}\n`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '2' }, only: { type: 'string' } } });
  const seconds = Number(values.seconds);
  const chosen = ENVIRONMENTS.filter((d) => values.only === undefined || values.only.split(',').includes(d.name));
  const header = ['environment', 'agents', 'world agent-steps/s', 'world decisions/s', 'protocol exchanges/s', 'protocol decisions/s'];
  const rows: string[][] = [];
  const cameraRows: string[][] = [];
  for (const definition of chosen) {
    const world = await worldRate(definition, seconds);
    const protocol = await protocolRate(definition, seconds);
    rows.push([definition.name, String(world.agents), fmt(world.agentSteps), fmt(world.decisions), fmt(protocol.exchanges), fmt(protocol.decisions)]);
    const camera = cameraCost(definition, seconds);
    if (camera !== null) cameraRows.push([definition.name, fmt(camera.render), fmt(camera.encode), fmt(camera.bytes)]);
  }
  const cameras =
    cameraRows.length === 0
      ? ''
      : `Camera images (the first agent's, as at a decision):\n${table(['environment', 'render us/image', 'PNG encode us/image', 'PNG bytes'], cameraRows)}\n`;
  process.stdout.write(
    `Built-in environments, default settings, random actions; ${seconds} s per measure. Node ${process.version}.\n` +
      `world: the Academy in process (no protocol; camera images drawn at each decision, not encoded); ` +
      `protocol: the executable over loopback gRPC with UnityEnvironment.\n\n` +
      `${table(header, rows)}\n${cameras}` +
      `Aims: 3DBall world stepping over 100,000 agent-steps/s; Visual3DBall's, camera included, over 5,000.\n`,
  );
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});

