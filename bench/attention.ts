/**
 * npm run bench:attention — the variable-length observations' attention (upstream's x_self
 * encoder, EntityEmbedding and ResidualSelfAttention) at the sizes of upstream's
 * test_var_len_obs_and_goal_ppo (one vector observation beside one or two [10, 5] observations,
 * 1 x 32 units, batch 16): ms per decision of one agent (act), and ms per PPO minibatch
 * (computeGradient: actor and critic, forward and backward), with and without the attention,
 * and the attention's own share (its forward + backward alone). wasm backend.
 * With --sorter, at the sizes of the built-in Sorter and config/ppo/Sorter_curriculum.yaml instead: its
 * tiles [20, 23] beside its vectors (10 and 8), 2 x 128 units, three branches of 3, batch 512. Also with its first lesson's 1 or 2 tiles, the rest padding.
 * Options: --min-seconds 3  --sorter
 */
import { parseArgs } from 'util';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../src/common/logger';
import { SeededRandom } from '../src/common/random';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType } from '../src/env/behavior-spec';
import { selectBackend } from '../src/networks/backend';
import { ActorCritic } from '../src/networks/actor-critic';
import { observations, vectorObservation, network } from '../test/networks/model-fixtures';
import { headLoss } from '../test/networks/model-fixtures';
import { printTable } from './table';
import { measure } from './measure';

/** A case: its observations, network size and minibatch. */
interface Sizes {
  readonly title: string;
  /** Label, observations, and for the variable-length ones how many entities agents fill at most (all when absent). */
  readonly cases: Array<[string, ObservationSpec[], number?]>;
  readonly units: number;
  readonly layers: number;
  readonly branches: number[];
  readonly batch: number;
}

function entities(count: number, size: number): ObservationSpec {
  return { shape: [count, size], dimensionProperty: [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'buffer' };
}

/** Leaves each agent 1 to `filled` entities of each variable-length observation, the rest zero (padding at the end, as BufferSensor's). */
function padEntities(spec: BehaviorSpec, batch: Float32Array[], count: number, filled: number, random: SeededRandom): void {
  spec.observationSpecs.forEach((o, k) => {
    if (o.shape.length !== 2) return;
    const [n, size] = o.shape;
    for (let i = 0; i < count; i++) batch[k].fill(0, (i * n + 1 + random.int(filled)) * size, (i + 1) * n * size);
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'min-seconds': { type: 'string', default: '3' }, sorter: { type: 'boolean', default: false } } });
  const seconds = Number(values['min-seconds']);
  await selectBackend('wasm', memoryLogger());
  const sizes: Sizes = values.sorter
    ? {
        title: "the built-in Sorter's sizes (config/ppo/Sorter_curriculum.yaml: 2 x 128, batch 512)",
        cases: [
          ['Sorter without its tiles: [10] + [8]', [vectorObservation(10), vectorObservation(8)]],
          ['Sorter: [20, 23] + [10] + [8]', [entities(20, 23), vectorObservation(10), vectorObservation(8)]],
          ['Sorter, lesson 0: 1 or 2 tiles of [20, 23] + [10] + [8]', [entities(20, 23), vectorObservation(10), vectorObservation(8)], 2],
        ],
        units: 128,
        layers: 2,
        branches: [3, 3, 3],
        batch: 512,
      }
    : {
        title: "test_var_len_obs_and_goal_ppo's sizes (1 x 32, batch 16)",
        cases: [
          ['vector only', [vectorObservation(1)]],
          ['vector + 1 x [10, 5]', [vectorObservation(1), entities(10, 5)]],
          ['vector + 2 x [10, 5]', [vectorObservation(1), entities(10, 5), entities(10, 5)]],
        ],
        units: 32,
        layers: 1,
        branches: [2],
        batch: 16,
      };
  const rows: string[][] = [];
  const BATCH = sizes.batch;
  for (const [label, observationSpecs, filled] of sizes.cases) {
    const spec: BehaviorSpec = { observationSpecs, actionSpec: new ActionSpec(0, sizes.branches) };
    const net = new ActorCritic(spec, { network: network({ hidden_units: sizes.units, num_layers: sizes.layers }), rewardSignals: ['extrinsic'], sharedCritic: false, seed: 1 });
    const random = new SeededRandom(2);
    const one = observations(spec, 1, random);
    const batch = observations(spec, BATCH, random);
    if (filled !== undefined) padEntities(spec, batch, BATCH, filled, random);
    const loss = headLoss(random);
    const act = measure(() => net.act(one, 1, new Float32Array(spec.actionSpec.discreteBranches.reduce((a, b) => a + b, 0)).fill(1)), seconds, 10, 3);
    const update = measure(() => net.computeGradient(batch, BATCH, loss), seconds, 10, 3);
    const attention = net.actorBody.attention;
    let own = '-';
    if (attention !== null) {
      const source = { parameters: net.parameters, gradient: new Float32Array(net.parameters.length), version: 0 };
      const self = tf.randomNormal([BATCH, attention.selfSize]) as tf.Tensor2D;
      const gradient = tf.randomNormal([BATCH, 128]) as tf.Tensor2D;
      own = measure(() => tf.tidy(() => {
        attention.forward(self, batch, BATCH, source, true);
        attention.backward(gradient, source, false);
      }), seconds, 10, 3).toFixed(2);
    }
    rows.push([label, act.toFixed(2), update.toFixed(2), own]);
    net.dispose();
  }
  printTable(
    `attention at ${sizes.title} (wasm)`,
    ['observations', 'ms per decision (1 agent)', 'ms per minibatch (actor + critic)', 'ms attention fwd+bwd (one body)'],
    rows,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
