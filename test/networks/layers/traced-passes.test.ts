/**
 * The layers' traced passes (TracedPass in src/networks/layers/layer.ts), which GAIL's gradient
 * penalty differentiates: each gives the output of its forward pass and, as its map from d/d
 * output to d/d input, the input gradient of its hand-written backward (tested against tfjs's
 * autodiff in layers.test.ts). The second derivatives, where a layer writes them as ops of its own
 * (convolution, max pooling), against central differences: the input gradient of a convolution is
 * bilinear in the output gradient and the weights, that of max pooling linear in the output
 * gradient, so that their differences are exact up to rounding. Max pooling's both forms (reading
 * its maxima in JavaScript, or on the device as WebGPU runs it) also against central differences
 * in the input, once and through a gradient penalty, on values without ties.
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

  it('MaxPool2d gives its forward\'s output and backward\'s input gradient', () => {
    const pool = new MaxPool2d([9, 8, 3], 3, 2);
    expectTracedMatchesBackward(pool, [], new Float32Array(0), [9, 8, 3], 2);
  });

  it('MaxPool2d on the device (WebGPU\'s form) gives the reading form\'s output and input gradient, ties going to the first maximum', () => {
    const pool = new MaxPool2d([9, 8, 3], 3, 2);
    const random = new SeededRandom(9);
    tf.tidy(() => {
      // Values in steps of 1: many windows hold their maximum twice or more.
      const x = tf.tensor4d(Float32Array.from({ length: 2 * 9 * 8 * 3 }, () => random.int(4)), [2, 9, 8, 3]);
      const dy = tf.tensor(randomArray(2 * sizeOf(pool.outputShape), random), [2, ...pool.outputShape]);
      const [reading, device] = [pool.tracedPass(x), pool.tracedPassOnDevice(x)];
      expect(device.output.dataSync()).toEqual(reading.output.dataSync());
      expect(device.inputGradient(dy).dataSync()).toEqual(reading.inputGradient(dy).dataSync());
    });
  });

  describe.each([
    ['reading', (pool: MaxPool2d, x: tf.Tensor4D) => pool.tracedPass(x)],
    ['on the device', (pool: MaxPool2d, x: tf.Tensor4D) => pool.tracedPassOnDevice(x)],
  ])('MaxPool2d\'s traced pass, %s', (_, tracedPass) => {
    const pool = new MaxPool2d([7, 7, 2], 3, 2);
    const inputShape: [number, number, number, number] = [2, 7, 7, 2];
    const outputShape = [2, ...pool.outputShape];
    const random = new SeededRandom(8);
    // Distinct values 0.05 apart in a random order: no ties, and no step of the differences below reorders a window.
    const keys = randomArray(sizeOf(inputShape), random);
    const x = new Float32Array(keys.length);
    [...keys.keys()].sort((i, j) => keys[i] - keys[j]).forEach((i, rank) => (x[i] = 0.05 * rank - 4.9));
    const dy = randomArray(sizeOf(outputShape), random);
    const v = randomArray(x.length, random);
    const a = randomArray(dy.length, random);
    const input = () => tf.tensor4d(x, inputShape);

    /** `analytic` (d loss / d values) against central differences of `loss`, exact up to rounding: the losses are quadratic between ties. */
    function expectCentralDifferences(values: Float32Array, analytic: Float32Array, loss: () => number): void {
      values.forEach((_, j) => {
        const numeric = centralDifference(values, j, 1e-2, loss);
        expect([j, Math.abs(numeric - analytic[j]) < 5e-3 * Math.max(1, Math.abs(analytic[j]))]).toEqual([j, true]);
      });
    }

    it('differentiates <v, dX(dY)> in dY', () => {
      const s = (gradient: tf.Tensor) => tf.sum(tf.mul(tracedPass(pool, input()).inputGradient(gradient), tf.tensor(v, inputShape))) as tf.Scalar;
      const analytic = tf.tidy(() => Float32Array.from(tf.grad(s)(tf.tensor(dy, outputShape)).dataSync()));
      expectCentralDifferences(dy, analytic, () => tf.tidy(() => s(tf.tensor(dy, outputShape)).dataSync()[0]));
    });

    it('has as first derivative in x its own map from d/d output to d/d input, as central differences', () => {
      // D = <a, y^2> / 2, whose gradient in x is dX(a y).
      const d = (images: tf.Tensor) => tf.div(tf.sum(tf.mul(tf.square(tracedPass(pool, images as tf.Tensor4D).output), tf.tensor(a, outputShape))), 2) as tf.Scalar;
      const analytic = tf.tidy(() => Float32Array.from(tf.grad(d)(input()).dataSync()));
      const mapped = tf.tidy(() => {
        const pass = tracedPass(pool, input());
        return Float32Array.from(pass.inputGradient(tf.mul(pass.output, tf.tensor(a, outputShape))).dataSync());
      });
      expectCloseToScale(mapped, analytic, 'dX(a y) against tfjs\'s gradient of D');
      expect(analytic.some((g) => g !== 0)).toBe(true);
      expectCentralDifferences(x, analytic, () => tf.tidy(() => d(input()).dataSync()[0]));
    });

    it('has as second derivative in x that of a gradient penalty |dX(a y)|^2, as central differences', () => {
      // Overlapping windows share their maxima: the squares mix the outputs' gradients.
      const penalty = (images: tf.Tensor) => {
        const pass = tracedPass(pool, images as tf.Tensor4D);
        return tf.sum(tf.square(pass.inputGradient(tf.mul(pass.output, tf.tensor(a, outputShape))))) as tf.Scalar;
      };
      const analytic = tf.tidy(() => Float32Array.from(tf.grad(penalty)(input()).dataSync()));
      expect(analytic.some((g) => g !== 0)).toBe(true);
      expectCentralDifferences(x, analytic, () => tf.tidy(() => penalty(input()).dataSync()[0]));
    });
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
