import * as tf from '@tensorflow/tfjs';
import { Adam, AdamTensors } from '../../src/networks/adam';

describe('Adam', () => {
  it('steps as torch.optim.Adam with its defaults (values worked out by hand)', () => {
    const adam = new Adam(1);
    const parameter = new Float32Array([1]);
    adam.apply(parameter, new Float32Array([0.5]), 0.1);
    // m = 0.1 * 0.5 = 0.05, v = 0.001 * 0.25; corrected: m = 0.5, v = 0.25, sqrt = 0.5.
    expect(parameter[0]).toBeCloseTo(1 - (0.1 * 0.5) / (0.5 + 1e-8), 6);
    adam.apply(parameter, new Float32Array([-1]), 0.1);
    // m = 0.9 * 0.05 - 0.1 = -0.055, v = 0.999 * 0.00025 + 0.001 = 0.00124975;
    // step size 0.1 / (1 - 0.81), denominator sqrt(v) / sqrt(1 - 0.999^2) + 1e-8.
    const expected = 0.9 - ((0.1 / 0.19) * -0.055) / (Math.sqrt(0.00124975) / Math.sqrt(1 - 0.998001) + 1e-8);
    expect(parameter[0]).toBeCloseTo(expected, 6);
    expect(adam.step).toBe(2);
    expect(adam.firstMoment[0]).toBeCloseTo(-0.055, 7);
    expect(adam.secondMoment[0]).toBeCloseTo(0.00124975, 9);
  });

  it('steps the same on tensors (the GPU form) as on arrays, step after step', () => {
    const arrays = new Adam(4);
    const onTensors = new Adam(4);
    const parameters = new Float32Array([0.3, -1.2, 2, 0]);
    // A copy: tfjs's cpu backend may keep the array it is given, which apply() rewrites.
    let state: AdamTensors = { parameters: tf.tensor1d(parameters.slice()), firstMoment: tf.zeros([4]), secondMoment: tf.zeros([4]) };
    const gradients = [
      [0.5, -2, 1e-4, 0],
      [-0.25, 3, -1e-4, 1],
      [0.125, 0.5, 2e-4, -1],
    ];
    for (const g of gradients) {
      arrays.apply(parameters, new Float32Array(g), 0.01);
      const gradient = tf.tensor1d(g);
      const next = onTensors.stepTensors(state, gradient, 0.01);
      tf.dispose([gradient, state.parameters, state.firstMoment, state.secondMoment]);
      state = next;
    }
    expect(onTensors.step).toBe(3);
    const close = (actual: tf.Tensor, expected: Float32Array) =>
      Array.from(actual.dataSync()).forEach((value, i) => expect(value).toBeCloseTo(expected[i], 6));
    close(state.parameters, parameters);
    close(state.firstMoment, arrays.firstMoment);
    close(state.secondMoment, arrays.secondMoment);
    tf.dispose([state.parameters, state.firstMoment, state.secondMoment]);
  });

  it('moves each parameter by about the learning rate on the first step, whatever the gradient scale', () => {
    const adam = new Adam(3);
    const parameters = new Float32Array([0, 0, 0]);
    adam.apply(parameters, new Float32Array([1e-3, -50, 0]), 0.01);
    expect(parameters[0]).toBeCloseTo(-0.01, 6);
    expect(parameters[1]).toBeCloseTo(0.01, 6);
    expect(parameters[2]).toBe(0);
  });

  it('saves its moments as named checkpoint arrays and restores them, refusing arrays of another size by name', () => {
    const saved = new Adam(2);
    saved.apply(new Float32Array(2), new Float32Array([0.5, -2]), 0.1);
    const arrays = new Map(saved.stateArrays('adam.q1'));
    expect([...arrays.keys()]).toEqual(['adam.q1.first_moment', 'adam.q1.second_moment']);
    const restored = new Adam(2);
    restored.loadStateArrays('adam.q1', arrays, saved.step);
    expect(restored.firstMoment).toEqual(saved.firstMoment);
    expect(restored.secondMoment).toEqual(saved.secondMoment);
    expect(restored.step).toBe(1);
    expect(() => new Adam(3).loadStateArrays('adam.q1', arrays, 1)).toThrow(
      "The checkpoint's adam.q1.first_moment has 2 values where 3 were expected.",
    );
  });
});
