/**
 * npx tsx bench/ppo-update.ts: milliseconds per PPO minibatch update on 3DBall's
 * hyperparameters (batch 64, actor and critic of 2 x 128 units, normalize, 8 observations,
 * 2 continuous actions), per tfjs backend, for the straightforward tfjs version (autodiff,
 * tf.train.adam: test/helpers/ppo-reference-update.ts) and ours (PpoOptimizer); with the
 * seconds one whole update takes (buffer 12000, 3 epochs: 561 minibatches) and the cost of one
 * batched act() for 12 agents (3DBall's agents of one area set).
 * Options: --backends wasm,cpu  --min-seconds 2
 */
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../src/env/behavior-spec';
import { ActorCritic } from '../src/networks/actor-critic';
import { BackendName, selectBackend } from '../src/networks/backend';
import { SeededRandom } from '../src/common/random';
import { PpoMinibatch } from '../src/trainers/ppo/loss';
import { PpoOptimizer, PpoOptimizerSettings } from '../src/trainers/ppo/optimizer';
import { ReferencePpoUpdate } from '../test/helpers/ppo-reference-update';

const BATCH = 64;
const MINIBATCHES_PER_UPDATE = Math.floor(12000 / BATCH) * 3;
const TARGET_MS = 6.5;

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [8], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' }],
  actionSpec: ActionSpec.createContinuous(2),
};
const SETTINGS: PpoOptimizerSettings = {
  hyperparameters: {
    learning_rate: 3e-4,
    beta: 1e-3,
    epsilon: 0.2,
    learning_rate_schedule: 'linear',
    beta_schedule: 'linear',
    epsilon_schedule: 'linear',
  },
  maxSteps: 500000,
};

function newModel(): ActorCritic {
  return new ActorCritic(SPEC, {
    network: { normalize: true, hidden_units: 128, num_layers: 2, vis_encode_type: 'simple', memory: null, goal_conditioning_type: 'hyper', deterministic: false },
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 1,
  });
}

/** Minibatches as the buffer would give them: actions and log probs from the policy itself. */
function minibatches(model: ActorCritic, howMany: number): PpoMinibatch[] {
  const random = new SeededRandom(2);
  return Array.from({ length: howMany }, () => {
    const observations = [new Float32Array(BATCH * 8).map(() => random.gaussian())];
    model.updateNormalization(observations, BATCH);
    const acted = model.act(observations, BATCH);
    return {
      count: BATCH,
      observations,
      continuousActions: acted.action.continuous,
      discreteActions: acted.action.discrete,
      actionMasks: null,
      oldContinuousLogProbs: acted.logProbs.continuous,
      oldDiscreteLogProbs: acted.logProbs.discrete,
      advantages: new Float32Array(BATCH).map(() => random.gaussian()),
      returns: { extrinsic: new Float32Array(BATCH).map(() => random.gaussian()) },
      oldValues: model.values(observations, BATCH),
    };
  });
}

/** Mean milliseconds per call of `run`, after a warm-up, over at least minSeconds. */
function measure(run: (i: number) => void, minSeconds: number): number {
  for (let i = 0; i < 20; i++) run(i);
  let calls = 0;
  const start = performance.now();
  while (performance.now() - start < minSeconds * 1000 || calls < 20) run(calls++);
  return (performance.now() - start) / calls;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { backends: { type: 'string', default: 'wasm,cpu' }, 'min-seconds': { type: 'string', default: '2' } },
  });
  const minSeconds = Number(values['min-seconds']);
  const rows: string[][] = [];
  for (const backend of (values.backends as string).split(',') as BackendName[]) {
    await selectBackend(backend, memoryLogger());
    const model = newModel();
    const batches = minibatches(model, 16);
    const reference = new ReferencePpoUpdate(model, SETTINGS);
    const straightforward = measure((i) => reference.update(batches[i % batches.length]), minSeconds);
    reference.dispose();
    const optimizer = new PpoOptimizer(model, SETTINGS);
    const ours = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds);
    const agents = [new Float32Array(12 * 8).fill(0.5)];
    const act = measure(() => model.act(agents, 12), minSeconds / 2);
    model.dispose();
    const row = (version: string, ms: number) => [
      backend,
      version,
      ms.toFixed(2),
      ((ms * MINIBATCHES_PER_UPDATE) / 1000).toFixed(2),
      backend === 'wasm' ? (ms < TARGET_MS ? `yes (< ${TARGET_MS})` : `no (>= ${TARGET_MS})`) : '',
    ];
    rows.push(row('straightforward', straightforward), row('ours', ours));
    rows.push([backend, 'act(), 12 agents', act.toFixed(3), '', '']);
  }
  const header = ['backend', 'version', 'ms/minibatch', `s/update (${MINIBATCHES_PER_UPDATE})`, 'target met'];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((cell, c) => cell.padEnd(widths[c])).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

void main();
