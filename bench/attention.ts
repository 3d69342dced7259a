/**
 * npm run bench:attention — the variable-length observations' attention (upstream's x_self
 * encoder, EntityEmbedding and ResidualSelfAttention) at the sizes of upstream's
 * test_var_len_obs_and_goal_ppo (one vector observation beside one or two [10, 5] observations,
 * 1 x 32 units, batch 16): ms per decision of one agent (act), and ms per PPO minibatch
 * (computeGradient: actor and critic, forward and backward), with and without the attention,
 * and the attention's own share (its forward + backward alone). wasm backend.
 * Options: --min-seconds 3
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

const BATCH = 16;

function entities(count: number, size: number): ObservationSpec {
  return { shape: [count, size], dimensionProperty: [DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'buffer' };
}


async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'min-seconds': { type: 'string', default: '3' } } });
  const seconds = Number(values['min-seconds']);
  await selectBackend('wasm', memoryLogger());
  const rows: string[][] = [];
  const cases: Array<[string, ObservationSpec[]]> = [
    ['vector only', [vectorObservation(1)]],
    ['vector + 1 x [10, 5]', [vectorObservation(1), entities(10, 5)]],
    ['vector + 2 x [10, 5]', [vectorObservation(1), entities(10, 5), entities(10, 5)]],
  ];
  for (const [label, observationSpecs] of cases) {
    const spec: BehaviorSpec = { observationSpecs, actionSpec: new ActionSpec(0, [2]) };
    const net = new ActorCritic(spec, { network: network({ hidden_units: 32, num_layers: 1 }), rewardSignals: ['extrinsic'], sharedCritic: false, seed: 1 });
    const random = new SeededRandom(2);
    const one = observations(spec, 1, random);
    const batch = observations(spec, BATCH, random);
    const loss = headLoss(random);
    const act = measure(() => net.act(one, 1, new Float32Array([1, 1])), seconds, 10, 3);
    const update = measure(() => net.computeGradient(batch, BATCH, loss), seconds, 10, 3);
    const attention = net.actorBody.attention;
    let own = '-';
    if (attention !== null) {
      const source = { parameters: net.parameters, gradient: new Float32Array(net.parameters.length), version: 0 };
      const self = tf.randomNormal([BATCH, 1]) as tf.Tensor2D;
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
    `attention at test_var_len_obs_and_goal_ppo's sizes (wasm, batch ${BATCH})`,
    ['observations', 'ms per decision (1 agent)', 'ms per minibatch (actor + critic)', 'ms attention fwd+bwd (one body)'],
    rows,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
