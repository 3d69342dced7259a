/**
 * The layers' traced passes (TracedPass in src/networks/layers/layer.ts), which GAIL's gradient
 * penalty differentiates: each gives the output of its forward pass and, as its map from d/d
 * output to d/d input, the input gradient of its hand-written backward (tested against tfjs's
 * autodiff in layers.test.ts). The second derivatives, where a layer writes them as ops of its own
 * (convolution, max pooling), against central differences: the input gradient of a convolution is
 * bilinear in the output gradient and the weights, that of max pooling linear in the output
 * gradient, so that their differences are exact up to rounding.
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../../src/env/behavior-spec';
import { BodyInputLayout } from '../../../src/networks/encoders/body-input';
import { VisualEncoder } from '../../../src/networks/encoders/visual-encoder';
import type { EncoderType } from '../../../src/config/settings';
import { Conv2d, Conv2dShape } from '../../../src/networks/layers/conv2d';
import { Layer, ParameterBlock, blockValues, sizeOf } from '../../../src/networks/layers/layer';
import { MaxPool2d } from '../../../src/networks/layers/max-pool';
import { NetworkBody } from '../../../src/networks/network-body';
import { centralDifference } from '../../helpers/finite-differences';
import { parameterStore } from '../../helpers/parameter-store';
import { network, vectorObservation, visualObservation } from '../model-fixtures';
import { expectCloseToScale } from '../../helpers/expect-close';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const randomArray = (size: number, random: SeededRandom) => Float32Array.from({ length: size }, () => random.gaussian());


/** Each block's values as the tensor a traced pass reads. */
function tracedParameters(parameters: Float32Array, blocks: readonly ParameterBlock[]) {
  const tensors = new Map(blocks.map((block) => [block, tf.tensor(blockValues(parameters, block), [...block.shape])]));
  return (block: ParameterBlock) => tensors.get(block)!;
}

/** A layer's traced output and input gradient against its forward and backward, on `count` random inputs. */
function expectTracedMatchesBackward(layer: Layer, blocks: readonly ParameterBlock[], parameters: Float32Array, inputShape: readonly number[], count: number): void {
  const random = new SeededRandom(11);
  const input = randomArray(count * sizeOf(inputShape), random);
  const outputGradient = randomArray(count * sizeOf(layer.outputShape), random);
  const source = { parameters, gradient: new Float32Array(parameters.length), version: 0 };
  tf.tidy(() => {
    const x = tf.tensor(input, [count, ...inputShape]);
    const dy = tf.tensor(outputGradient, [count, ...layer.outputShape]);
    const output = layer.forward(x, source, true);
    const inputGradient = layer.backward(dy, source, true)!;
    const traced = layer.tracedPass(x, tracedParameters(parameters, blocks));
    expectCloseToScale(traced.output.dataSync(), output.dataSync(), 'output');
    expectCloseToScale(traced.inputGradient(dy).dataSync(), inputGradient.dataSync(), 'input gradient');
  });
}

const CONVOLUTIONS: Array<[string, Conv2dShape]> = [
  ['strided and unpadded (simple\'s first layer)', { input: [20, 22, 3], outChannels: 4, kernel: 8, stride: 4, padding: 0 }],
  ['stride 2 on odd sizes', { input: [11, 8, 3], outChannels: 5, kernel: 4, stride: 2, padding: 0 }],
  ['stride 3, padded, kernel smaller than the stride', { input: [10, 9, 2], outChannels: 3, kernel: 2, stride: 3, padding: 1 }],
  ['padded (resnet\'s)', { input: [7, 6, 2], outChannels: 3, kernel: 3, stride: 1, padding: 1 }],
];

describe('traced passes', () => {
  describe.each(CONVOLUTIONS)('Conv2d, %s', (_, shape) => {
    function conv() {
      const store = parameterStore();
      const layer = new Conv2d(store.allocate, 'conv', shape);
      const parameters = store.source().parameters;
      layer.initialize(parameters, new SeededRandom(3));
      return { layer, parameters, blocks: store.blocks };
    }

    it('gives its forward\'s output and its backward\'s input gradient', () => {
      const { layer, parameters, blocks } = conv();
      expectTracedMatchesBackward(layer, blocks, parameters, shape.input, 2);
    });

    it('differentiates <v, dX(dY, W)> in W, dY and (through the convolution) x as central differences do', () => {
      const { layer, parameters, blocks } = conv();
      const random = new SeededRandom(5);
      const count = 2;
      const x = randomArray(count * sizeOf(shape.input), random);
      const dy = randomArray(count * sizeOf(layer.outputShape), random);
      const v = randomArray(x.length, random);
      const u = randomArray(dy.length, random);
      // S = <v, dX(dY, W)> + <u, conv(x; W, b)>: both ops, every input of each.
      const s = (...inputs: tf.Tensor[]) => {
        const [xs, dys, weight, bias] = inputs;
        const theta = (block: ParameterBlock) => (block === layer.weight ? weight : bias);
        const pass = layer.tracedPass(xs, theta);
        return tf.add(tf.sum(tf.mul(pass.inputGradient(dys), tf.tensor(v, xs.shape))), tf.sum(tf.mul(pass.output, tf.tensor(u, dys.shape)))) as tf.Scalar;
      };
      const [weightBlock, biasBlock] = blocks;
      const values = [x, dy, blockValues(parameters, weightBlock).slice(), blockValues(parameters, biasBlock).slice()];
      const shapes = [[count, ...shape.input], [count, ...layer.outputShape], [...weightBlock.shape], [...biasBlock.shape]];
      const loss = () => tf.tidy(() => s(...values.map((value, i) => tf.tensor(value, shapes[i]))).dataSync()[0]);
      const gradients = tf.tidy(() => tf.grads(s)(values.map((value, i) => tf.tensor(value, shapes[i]))).map((g) => g.dataSync().slice()));
      values.forEach((value, i) => {
        const stride = Math.max(1, Math.floor(value.length / 25));
        for (let j = 0; j < value.length; j += stride) {
          const numeric = centralDifference(value, j, 1e-2, loss);
          expect(Math.abs(numeric - gradients[i][j])).toBeLessThan(2e-3 * Math.max(1, Math.abs(gradients[i][j])));
        }
      });
    });
  });

  it('MaxPool2d gives its forward\'s output and backward\'s input gradient, and differentiates <v, dX(dY)> in dY as central differences do', () => {
    const pool = new MaxPool2d([9, 8, 3], 3, 2);
    expectTracedMatchesBackward(pool, [], new Float32Array(0), [9, 8, 3], 2);
    const random = new SeededRandom(8);
    const x = tf.tensor(randomArray(2 * 9 * 8 * 3, random), [2, 9, 8, 3]);
    const dy = randomArray(2 * sizeOf(pool.outputShape), random);
    const v = tf.tensor(randomArray(2 * 9 * 8 * 3, random), [2, 9, 8, 3]);
    const s = (gradient: tf.Tensor) => tf.sum(tf.mul(pool.tracedPass(x).inputGradient(gradient), v)) as tf.Scalar;
    const shape = [2, ...pool.outputShape];
    const analytic = tf.tidy(() => tf.grad(s)(tf.tensor(dy, shape)).dataSync().slice());
    const loss = () => tf.tidy(() => s(tf.tensor(dy, shape)).dataSync()[0]);
    for (let j = 0; j < dy.length; j += 7) expect(centralDifference(dy, j, 1e-2, loss)).toBeCloseTo(analytic[j], 3);
  });

  describe.each([
    ['fully_connected', [3, 4, 4]],
    ['match3', [2, 5, 6]],
    ['simple', [3, 20, 20]],
    ['resnet', [2, 15, 15]],
    ['nature_cnn', [1, 36, 36]],
  ] as Array<[EncoderType, [number, number, number]]>)('the %s encoder', (type, [channels, height, width]) => {
    it('gives its forward\'s encoding and, in the image\'s own layout, the input gradient of its backward', () => {
      const store = parameterStore();
      const encoder = new VisualEncoder(store.allocate, 'encoder', visualObservation(channels, height, width), type, 6, 'Observation 0');
      const parameters = store.source().parameters;
      encoder.initialize(parameters, new SeededRandom(2));
      const random = new SeededRandom(4);
      const count = 2;
      const images = randomArray(count * channels * height * width, random);
      const encodingGradient = randomArray(count * 6, random);
      const source = { parameters, gradient: new Float32Array(parameters.length), version: 0 };
      tf.tidy(() => {
        const encoding = encoder.forward(images, count, source, true);
        // The backward's input gradient is channel last, as the layers run.
        const backward = tf.transpose(encoder.layers.backward(tf.tensor2d(encodingGradient, [count, 6]), source, true)!, [0, 3, 1, 2]);
        const traced = encoder.tracedPass(tf.tensor4d(images, [count, channels, height, width]), tracedParameters(parameters, store.blocks));
        expectCloseToScale(traced.output.dataSync(), encoding.dataSync(), 'encoding');
        expectCloseToScale(traced.inputGradient(tf.tensor2d(encodingGradient, [count, 6])).dataSync(), backward.dataSync(), 'input gradient');
      });
    });
  });

  it('a goal-conditioned body (image, goal signal, actions) gives d/d each observation as central differences of <dy, encoding> do', () => {
    const spec: BehaviorSpec = {
      observationSpecs: [visualObservation(2, 5, 6), vectorObservation(3), vectorObservation(2, ObservationType.GOAL_SIGNAL)],
      actionSpec: new ActionSpec(1, []),
    };
    const layout = new BodyInputLayout(spec, 5);
    const store = parameterStore();
    const body = new NetworkBody(store.allocate, 'body', layout, network({ hidden_units: 5, num_layers: 2, vis_encode_type: 'match3' }), 2);
    const parameters = store.source().parameters;
    const random = new SeededRandom(6);
    body.bodyEncoder.initialize(parameters, random);
    for (const encoder of body.encoders) encoder.initialize(parameters, random);
    expect(body.goalConditioned).toBe(true);
    const count = 2;
    const image = randomArray(count * 60, random);
    const rows = randomArray(count * (5 + 2), random);
    const dy = tf.tensor2d(randomArray(count * 5, random), [count, 5]);
    const theta = tracedParameters(parameters, store.blocks);
    const pass = (imageValues: Float32Array, rowValues: Float32Array) => body.tracedPass([tf.tensor4d(imageValues, [count, 2, 5, 6])], tf.tensor2d(rowValues, [count, 7]), theta);
    const loss = () => tf.tidy(() => tf.sum(tf.mul(pass(image, rows).output, dy)).dataSync()[0]);
    const analytic = tf.tidy(() => {
      const traced = pass(image, rows);
      return [0, 1, 2].map((k) => traced.observationGradient(dy, k).dataSync().slice());
    });
    // Central differences cross LeakyReLU's kink now and then: compared at the scale of the whole gradient.
    expectCloseToScale(Float32Array.from(image, (_, j) => centralDifference(image, j, 1e-3, loss)), analytic[0], 'image gradient', 3e-2);
    // Rows: observation 1's 3 values, then the goal's 2, then the actions.
    const numeric = Float32Array.from(rows, (_, j) => centralDifference(rows, j, 1e-3, loss));
    const pick = (from: number, width: number) => Float32Array.from({ length: count * width }, (_, j) => numeric[Math.floor(j / width) * 7 + from + (j % width)]);
    expectCloseToScale(pick(0, 3), analytic[1], 'vector gradient', 3e-2);
    expectCloseToScale(pick(3, 2), analytic[2], 'goal gradient', 3e-2);
  });
});
