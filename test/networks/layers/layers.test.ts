/**
 * Each layer's hand-written backward pass against tfjs's autodiff of the same function: the
 * layers run on the wasm backend (as in training), the reference on the cpu backend, whose
 * kernels have every gradient (the wasm backend has no Conv2DBackpropFilter).
 */
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { selectBackend } from '../../../src/networks/backend';
import { LeakyRelu, Relu, Swish } from '../../../src/networks/layers/activations';
import { Conv2d } from '../../../src/networks/layers/conv2d';
import { linearLayer } from '../../../src/networks/layers/dense';
import { LinearEncoder } from '../../../src/networks/layers/linear-encoder';
import { Flatten } from '../../../src/networks/layers/flatten';
import { ConditionalEncoder } from '../../../src/networks/layers/conditional-encoder';
import { LayerNorm } from '../../../src/networks/layers/layer-norm';
import { Layer, ParameterAllocator, blockValues, sizeOf } from '../../../src/networks/layers/layer';
import { parameterStore } from '../../helpers/parameter-store';
import { MaxPool2d } from '../../../src/networks/layers/max-pool';
import { referenceHyperNetwork as hyperNetwork, referenceLayerNorm as layerNorm, swish } from '../../helpers/hypernetwork-reference';
import { Residual, Sequential } from '../../../src/networks/layers/sequential';
import { expectCloseToScale } from '../../helpers/expect-close';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function randomArray(size: number, random: SeededRandom): Float32Array {
  return Float32Array.from({ length: size }, () => random.gaussian());
}

/**
 * Runs `layer` forward and backward on wasm for a random input (`input`, when given) and output
 * gradient; then runs `reference(x, ...parameter tensors)` under tf.grads on cpu; compares the
 * input gradient and every parameter block's gradient.
 */
function expectGradientsMatch(
  build: (allocate: ParameterAllocator) => Layer,
  inputShape: number[],
  reference: (x: tf.Tensor, parameters: Record<string, tf.Tensor>) => tf.Tensor,
  givenInput?: Float32Array,
): void {
  const store = parameterStore();
  const layer = build(store.allocate);
  const source = store.source();
  const random = new SeededRandom(7);
  layer.initialize(source.parameters, random);
  // Biases start at zero in some layers: give them values so that their gradients are tested.
  for (const block of store.blocks) {
    if (block.name.endsWith('.bias')) blockValues(source.parameters, block).set(randomArray(sizeOf(block.shape), random).map((v) => 0.1 * v));
  }
  const input = givenInput ?? randomArray(sizeOf(inputShape), random);
  const outputShape = [inputShape[0], ...layer.outputShape];
  const outputGradient = randomArray(sizeOf(outputShape), random);

  const ours = tf.tidy(() => {
    const output = layer.forward(tf.tensor(input, inputShape), source, true);
    expect(output.shape).toEqual(outputShape);
    const inputGradient = layer.backward(tf.tensor(outputGradient, outputShape), source, true)!;
    return { output: output.dataSync().slice(), inputGradient: inputGradient.dataSync().slice() };
  });

  tf.setBackend('cpu');
  try {
    const names = store.blocks.map((b) => b.name);
    const expected = tf.tidy(() => {
      const tensors = store.blocks.map((b) => tf.tensor(blockValues(source.parameters, b), [...b.shape]));
      const f = (x: tf.Tensor, ...parameters: tf.Tensor[]) =>
        reference(x, Object.fromEntries(names.map((name, i) => [name, parameters[i]])));
      const x = tf.tensor(input, inputShape);
      const output = f(x, ...tensors).dataSync().slice();
      const gradients = tf.grads(f)([x, ...tensors], tf.tensor(outputGradient, outputShape)).map((g) => g.dataSync().slice());
      return { output, gradients };
    });
    expectCloseToScale(ours.output, expected.output, 'output');
    expectCloseToScale(ours.inputGradient, expected.gradients[0], 'input gradient');
    store.blocks.forEach((block, i) => {
      expectCloseToScale(blockValues(source.gradient, block), expected.gradients[i + 1], `${block.name} gradient`);
    });
  } finally {
    tf.setBackend('wasm');
  }
}


/** Our conv weight (out x k x k x in) as tf.conv2d's filter (k x k x in x out). */
function filterOf(weight: tf.Tensor): tf.Tensor4D {
  return tf.transpose(weight, [1, 2, 3, 0]) as tf.Tensor4D;
}

describe('layers: backward passes against tfjs autodiff', () => {
  it('Dense: x W^T + b', () => {
    expectGradientsMatch(
      (allocate) => linearLayer(allocate, 'dense', 6, 4, { kind: 'kaimingNormal', gain: 1.41 }),
      [5, 6],
      (x, p) => tf.add(tf.matMul(x, p['dense.weight'], false, true), p['dense.bias']),
    );
  });

  it('Dense with Swish fused: swish(x W^T + b), a layer of upstream\'s LinearEncoder', () => {
    expectGradientsMatch(
      (allocate) => linearLayer(allocate, 'dense', 6, 4, { kind: 'kaimingNormal', gain: 1 }, 'swish'),
      [5, 6],
      (x, p) => {
        const z = tf.add(tf.matMul(x, p['dense.weight'], false, true), p['dense.bias']);
        return tf.mul(z, tf.sigmoid(z));
      },
    );
  });

  it('Dense with a large weight matrix (300 x 256, the visual encoders\' size: the backward takes dz W another way)', () => {
    expectGradientsMatch(
      (allocate) => linearLayer(allocate, 'dense', 300, 256, { kind: 'kaimingNormal', gain: 1 }),
      [3, 300],
      (x, p) => tf.add(tf.matMul(x, p['dense.weight'], false, true), p['dense.bias']),
    );
  });

  it('LinearEncoder: two Swish layers', () => {
    expectGradientsMatch(
      (allocate) => new LinearEncoder(allocate, 'encoder', 6, 5, 2),
      [4, 6],
      (x, p) => {
        const swish = (z: tf.Tensor) => tf.mul(z, tf.sigmoid(z));
        const h = swish(tf.add(tf.matMul(x, p['encoder.0.weight'], false, true), p['encoder.0.bias']));
        return swish(tf.add(tf.matMul(h, p['encoder.1.weight'], false, true), p['encoder.1.bias']));
      },
    );
  });

  it('Conv2d, strided and unpadded (simple encoder\'s first layer)', () => {
    expectGradientsMatch(
      (allocate) => new Conv2d(allocate, 'conv', { input: [20, 22, 3], outChannels: 4, kernel: 8, stride: 4, padding: 0 }),
      [2, 20, 22, 3],
      (x, p) => tf.add(tf.conv2d(x as tf.Tensor4D, filterOf(p['conv.weight']), 4, 'valid'), p['conv.bias']),
    );
  });

  it('Conv2d, stride 2 on odd sizes (simple and nature_cnn\'s second layer)', () => {
    expectGradientsMatch(
      (allocate) => new Conv2d(allocate, 'conv', { input: [11, 8, 3], outChannels: 5, kernel: 4, stride: 2, padding: 0 }),
      [2, 11, 8, 3],
      (x, p) => tf.add(tf.conv2d(x as tf.Tensor4D, filterOf(p['conv.weight']), 2, 'valid'), p['conv.bias']),
    );
  });

  it('Conv2d, stride 3 with padding and a kernel smaller than the stride', () => {
    expectGradientsMatch(
      (allocate) => new Conv2d(allocate, 'conv', { input: [10, 9, 2], outChannels: 3, kernel: 2, stride: 3, padding: 1 }),
      [2, 10, 9, 2],
      (x, p) =>
        tf.add(tf.conv2d(tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]) as tf.Tensor4D, filterOf(p['conv.weight']), 3, 'valid'), p['conv.bias']),
    );
  });

  it('Conv2d, padded (resnet\'s 3x3 layers)', () => {
    expectGradientsMatch(
      (allocate) => new Conv2d(allocate, 'conv', { input: [7, 6, 2], outChannels: 3, kernel: 3, stride: 1, padding: 1 }),
      [3, 7, 6, 2],
      (x, p) => tf.add(tf.conv2d(x as tf.Tensor4D, filterOf(p['conv.weight']), 1, 'same'), p['conv.bias']),
    );
  });

  it('Conv2d, stride 1 unpadded (match3\'s layers)', () => {
    expectGradientsMatch(
      (allocate) => new Conv2d(allocate, 'conv', { input: [6, 5, 4], outChannels: 3, kernel: 3, stride: 1, padding: 0 }),
      [2, 6, 5, 4],
      (x, p) => tf.add(tf.conv2d(x as tf.Tensor4D, filterOf(p['conv.weight']), 1, 'valid'), p['conv.bias']),
    );
  });

  it.each([
    ['LeakyRelu', (shape: number[]) => new LeakyRelu(shape), (x: tf.Tensor) => tf.leakyRelu(x, 0.01)],
    ['Relu', (shape: number[]) => new Relu(shape), (x: tf.Tensor) => tf.relu(x)],
    ['Swish', (shape: number[]) => new Swish(shape), (x: tf.Tensor) => tf.mul(x, tf.sigmoid(x))],
  ])('%s', (_name, build, reference) => {
    expectGradientsMatch(() => build([4, 3]), [6, 4, 3], reference);
  });

  it('MaxPool2d 3x3 stride 2, activations, a residual block and flatten, composed', () => {
    const shape: [number, number, number] = [9, 8, 2];
    expectGradientsMatch(
      (allocate) => {
        const pool = new MaxPool2d(shape, 3, 2);
        const pooled = pool.outputShape;
        const conv = new Conv2d(allocate, 'block.conv', { input: pooled, outChannels: 2, kernel: 3, stride: 1, padding: 1 });
        return new Sequential([
          new LeakyRelu(shape),
          pool,
          new Residual(new Sequential([new Swish(pooled), conv])),
          new Relu(pooled),
          new Flatten(pooled),
        ]);
      },
      [2, 9, 8, 2],
      (x, p) => {
        const pooled = tf.maxPool(tf.leakyRelu(x, 0.01) as tf.Tensor4D, 3, 2, 'valid');
        const swish = tf.mul(pooled, tf.sigmoid(pooled));
        const conv = tf.add(tf.conv2d(swish as tf.Tensor4D, filterOf(p['block.conv.weight']), 1, 'same'), p['block.conv.bias']);
        // Flattened channel first, as torch flattens.
        return tf.transpose(tf.relu(tf.add(pooled, conv)), [0, 3, 1, 2]).reshape([2, -1]);
      },
    );
  });

  it('LayerNorm: (x - mean) / sqrt(variance + 1e-5) over each sample\'s features', () => {
    expectGradientsMatch(() => new LayerNorm(7), [5, 7], layerNorm);
  });

  it('ConditionalEncoder of one layer: a hypernetwork on goal columns 1 and 3 of the input, then Swish', () => {
    expectGradientsMatch(
      (allocate) => new ConditionalEncoder(allocate, 'body', 5, [1, 3], 4, 1),
      [6, 5],
      (x, p) => swish(hyperNetwork(x, tf.gather(x, [1, 3], 1), p, 'body.0', 5, 4)),
    );
  });

  it('ConditionalEncoder without the goal\'s gradient: one generated weight matrix per distinct goal, every block\'s gradient exact', () => {
    // 7 samples, 3 distinct goals (columns 1 and 3), repeated out of order.
    const random = new SeededRandom(3);
    const input = randomArray(7 * 5, random);
    const goals = [[1, 0], [0, 1], [1, 0], [0.5, 0.5], [0, 1], [1, 0], [0.5, 0.5]];
    goals.forEach(([a, b], s) => {
      input[s * 5 + 1] = a;
      input[s * 5 + 3] = b;
    });
    // The reference takes the goal as a constant: no gradient flows through it into the input.
    const goal = () => tf.tensor2d(goals);
    expectGradientsMatch(
      (allocate) => new ConditionalEncoder(allocate, 'body', 5, [1, 3], 4, 2, 1, false),
      [7, 5],
      (x, p) => swish(hyperNetwork(swish(tf.add(tf.matMul(x, p['body.0.weight'], false, true), p['body.0.bias'])), goal(), p, 'body.1', 4, 4)),
      input,
    );
  });

  it('ConditionalEncoder of three layers, the last two conditional: goal gradients from both reach the input', () => {
    expectGradientsMatch(
      (allocate) => new ConditionalEncoder(allocate, 'body', 4, [0], 3, 3, 2),
      [5, 4],
      (x, p) => {
        const goal = tf.gather(x, [0], 1);
        const first = swish(tf.add(tf.matMul(x, p['body.0.weight'], false, true), p['body.0.bias']));
        return swish(hyperNetwork(swish(hyperNetwork(first, goal, p, 'body.1', 3, 3)), goal, p, 'body.2', 3, 3));
      },
    );
  });
});
