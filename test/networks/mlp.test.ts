/**
 * The MLP of SAC's Q networks: its backward pass against finite differences (parameters and
 * inputs), the tfjs version against the plain one, and the choice between them.
 */
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { selectBackend } from '../../src/networks/backend';
import { JsMlp, MlpShape, TensorMlp, createMlp } from '../../src/networks/mlp';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const SHAPE: MlpShape = { inputs: 5, hiddenUnits: 12, numLayers: 2, outputs: 3 };
const COUNT = 7;

/** A loss with a known gradient: sum of outputs times fixed weights. */
function weightedSum(outputs: Float32Array, weights: Float32Array): number {
  return outputs.reduce((total, value, k) => total + value * weights[k], 0);
}

describe('JsMlp', () => {
  it('backpropagates to its parameters and inputs as finite differences say', () => {
    const random = new SeededRandom(1);
    const net = new JsMlp(SHAPE, random);
    const inputs = new Float32Array(COUNT * SHAPE.inputs).map(() => random.gaussian());
    const weights = new Float32Array(COUNT * SHAPE.outputs).map(() => random.gaussian());
    net.forward(inputs, COUNT);
    const inputGradient = net.backward(weights);
    const parameterGradient = Float32Array.from(net.gradient);
    const h = 1e-2;
    const numeric = (values: Float32Array, index: number): number => {
      const original = values[index];
      values[index] = original + h;
      const up = weightedSum(net.forward(inputs, COUNT), weights);
      values[index] = original - h;
      const down = weightedSum(net.forward(inputs, COUNT), weights);
      values[index] = original;
      return (up - down) / (2 * h);
    };
    for (let index = 0; index < net.parameters.length; index += 7) {
      expect(numeric(net.parameters, index)).toBeCloseTo(parameterGradient[index], 2);
    }
    for (let index = 0; index < inputs.length; index += 3) expect(numeric(inputs, index)).toBeCloseTo(inputGradient[index], 2);
  });
});

describe('TensorMlp', () => {
  it('computes what JsMlp computes, forward and backward', () => {
    const plain = new JsMlp(SHAPE, new SeededRandom(2));
    const tensor = new TensorMlp(SHAPE, new SeededRandom(2));
    expect(tensor.parameters).toEqual(plain.parameters);
    const random = new SeededRandom(3);
    for (const count of [1, COUNT]) {
      const inputs = new Float32Array(count * SHAPE.inputs).map(() => random.gaussian());
      const outputGradient = new Float32Array(count * SHAPE.outputs).map(() => random.gaussian());
      const expected = plain.forward(inputs, count);
      const actual = tensor.forward(inputs, count);
      actual.forEach((value, k) => expect(value).toBeCloseTo(expected[k], 5));
      const expectedInputs = plain.backward(outputGradient);
      tensor.backward(outputGradient).forEach((value, k) => expect(value).toBeCloseTo(expectedInputs[k], 5));
      tensor.gradient.forEach((value, k) => expect(value).toBeCloseTo(plain.gradient[k], 4));
    }
  });
});

describe('createMlp', () => {
  it('runs small networks in plain loops and large ones with tfjs products', () => {
    expect(createMlp({ inputs: 2, hiddenUnits: 16, numLayers: 1, outputs: 1 }, new SeededRandom(1))).toBeInstanceOf(JsMlp);
    expect(createMlp({ inputs: 10, hiddenUnits: 64, numLayers: 2, outputs: 1 }, new SeededRandom(1))).toBeInstanceOf(TensorMlp);
  });
});
