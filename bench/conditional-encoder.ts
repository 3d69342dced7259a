/**
 * npm run bench:conditioning — the ConditionalEncoder (upstream's hypernetwork goal conditioning)
 * at GridWorld's sizes (a body input of 128 image features + the 2-value goal, 1 x 128 units): ms
 * per forward + backward on a training minibatch of 32 (gradients of every block), the
 * parameters changed before each as after an optimizer step; the goals GridWorld's (a one-hot of
 * 2, so 2 distinct goals in a batch) as a goal from a vector observation runs (one generated
 * weight matrix per distinct goal), then with the goal's own gradient as an image goal needs
 * (one per sample); beside tfjs's autodiff of upstream's formulation (per-sample generated weights
 * and a batched product, test/helpers/hypernetwork-reference.ts); and ms per forward for acting
 * (9 agents, GridWorld's areas). wasm backend. Options: --min-seconds 3
 */
import { parseArgs } from 'util';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../src/common/logger';
import { SeededRandom } from '../src/common/random';
import { selectBackend } from '../src/networks/backend';
import { ConditionalEncoder } from '../src/networks/layers/conditional-encoder';
import { blockValues, sequentialAllocator } from '../src/networks/layers/layer';
import { referenceHyperNetwork, swish } from '../test/helpers/hypernetwork-reference';
import { printTable } from './table';
import { measure } from './measure';

const INPUTS = 130;
const HIDDEN = 128;
const GOAL_COLUMNS = [128, 129];


async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'min-seconds': { type: 'string', default: '3' } } });
  const seconds = Number(values['min-seconds']);
  await selectBackend('wasm', memoryLogger());
  const random = new SeededRandom(2);
  const batch = 32;
  // Image features, then GridWorld's goal: a one-hot of 2.
  const rows = (count: number) => {
    const values = new Float32Array(count * INPUTS).map(() => random.gaussian());
    for (let s = 0; s < count; s++) {
      const goal = random.int(2);
      values[s * INPUTS + GOAL_COLUMNS[0]] = 1 - goal;
      values[s * INPUTS + GOAL_COLUMNS[1]] = goal;
    }
    return values;
  };
  const input = rows(batch);
  const outputGradient = new Float32Array(batch * HIDDEN).map(() => random.gaussian());

  const encoders = [false, true].map((goalGradient) => {
    const { allocate, blocks, size } = sequentialAllocator();
    const encoder = new ConditionalEncoder(allocate, 'body', INPUTS, GOAL_COLUMNS, HIDDEN, 1, 1, goalGradient);
    const source = { parameters: new Float32Array(size()), gradient: new Float32Array(size()), version: 0 };
    encoder.initialize(source.parameters, new SeededRandom(1));
    return { encoder, blocks, source };
  });
  const training = encoders.map(({ encoder, source }) =>
    measure(
      () =>
        tf.tidy(() => {
          source.version++;
          encoder.forward(tf.tensor2d(input, [batch, INPUTS]), source, true);
          encoder.backward(tf.tensor2d(outputGradient, [batch, HIDDEN]), source, true);
        }),
      seconds,
      10,
      3,
    ),
  );

  const { blocks, source } = encoders[0];
  const variables = blocks.map((block) => tf.variable(tf.tensor(blockValues(source.parameters, block), [...block.shape])));
  const parameters = Object.fromEntries(blocks.map((block, i) => [block.name, variables[i] as tf.Tensor]));
  const loss = (): tf.Scalar => {
    const x = tf.tensor2d(input, [batch, INPUTS]);
    const output = swish(referenceHyperNetwork(x, tf.gather(x, GOAL_COLUMNS, 1), parameters, 'body.0', INPUTS, HIDDEN));
    return tf.sum(tf.mul(output, tf.tensor2d(outputGradient, [batch, HIDDEN])));
  };
  const autodiff = measure(
    () =>
      tf.tidy(() => {
        for (const gradient of Object.values(tf.variableGrads(loss).grads)) gradient.dataSync();
      }),
    seconds,
    10,
    3,
  );

  const agents = 9;
  const acting = rows(agents);
  const act = measure(() => tf.tidy(() => void encoders[0].encoder.forward(tf.tensor2d(acting, [agents, INPUTS]), source, false).dataSync()), seconds, 10, 3);
  printTable(
    'ConditionalEncoder at GridWorld\'s sizes (130 inputs, goal of 2, 1 x 128), wasm backend',
    ['pass', 'ms'],
    [
      ['forward + backward, batch 32, ours: weights generated per distinct goal (a vector goal)', training[0].toFixed(1)],
      ['forward + backward, batch 32, ours: weights generated per sample (an image goal)', training[1].toFixed(1)],
      ['forward + backward, batch 32, tfjs autodiff of upstream\'s formulation', autodiff.toFixed(1)],
      [`forward for acting, ${agents} agents`, act.toFixed(1)],
    ],
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
