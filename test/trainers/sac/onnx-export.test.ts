/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The ONNX export of a SAC actor (conditional sigma, tanh squash), run by onnxruntime: the
 * deterministic actions are tanh of the means, as our own act() gives them; the sampled ones are
 * tanh of a Gaussian whose standard deviation is the exp of the log_sigma head; the contract's
 * names and shapes are PPO's; an image goes through the actor's own visual encoder.
 */
import * as ort from 'onnxruntime-node';
import { memoryLogger } from '../../../src/common/logger';
import { SeededRandom } from '../../../src/common/random';
import { ActionSpec, BehaviorSpec } from '../../../src/env/behavior-spec';
import { exportPolicy } from '../../../src/export/onnx-export';
import { ActorCritic } from '../../../src/networks/actor-critic';
import { selectBackend } from '../../../src/networks/backend';
import { behavior, network, observations, vectorObservation, visualObservation } from '../../networks/model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function sacActor(spec: BehaviorSpec, normalize: boolean): ActorCritic {
  const net = new ActorCritic(spec, {
    network: network({ normalize, deterministic: true }),
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 4,
    conditionalSigma: true,
    tanhSquash: true,
  });
  net.updateNormalization(observations(spec, 64, new SeededRandom(5)), 64);
  return net;
}

async function run(bytes: Uint8Array, spec: BehaviorSpec, obs: Float32Array[], count: number): Promise<ort.InferenceSession.OnnxValueMapType> {
  const feeds: Record<string, ort.Tensor> = {};
  obs.forEach((values, k) => (feeds[`obs_${k}`] = new ort.Tensor('float32', values, [count, ...spec.observationSpecs[k].shape])));
  const branches = spec.actionSpec.discreteBranches;
  if (branches.length > 0) {
    const width = branches.reduce((a, b) => a + b, 0);
    feeds.action_masks = new ort.Tensor('float32', new Float32Array(count * width).fill(1), [count, width]);
  }
  const session = await ort.InferenceSession.create(bytes);
  try {
    return await session.run(feeds);
  } finally {
    await session.release();
  }
}

describe.each([
  ['two continuous actions, normalized', behavior([5, 2], ActionSpec.createContinuous(2)), true],
  ['hybrid actions, not normalized', behavior([4], new ActionSpec(1, [3])), false],
  [
    'a vector and an image, two continuous actions, normalized',
    { observationSpecs: [vectorObservation(3), visualObservation(2, 20, 20)], actionSpec: ActionSpec.createContinuous(2) },
    true,
  ],
])('the exported SAC actor: %s', (_, spec, normalize) => {
  const continuous = spec.actionSpec.continuousSize;

  it('gives the deterministic actions of our own act(): tanh of the means', async () => {
    const net = sacActor(spec, normalize);
    const count = 16;
    const obs = observations(spec, count, new SeededRandom(6));
    const outputs = await run(exportPolicy(net, spec), spec, obs, count);
    const ours = net.act(obs, count);
    expect(outputs.deterministic_continuous_actions.dims).toEqual([count, continuous]);
    const deterministic = outputs.deterministic_continuous_actions.data as Float32Array;
    ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-5));
    expect(Array.from(outputs.continuous_action_output_shape.data as Float32Array)).toEqual([continuous]);
    expect(Array.from(outputs.version_number.data as Float32Array)).toEqual([3]);
    if (spec.actionSpec.discreteBranches.length > 0) {
      expect(Array.from(outputs.deterministic_discrete_actions.data as BigInt64Array, Number)).toEqual(Array.from(ours.action.discrete));
    }
  });

  it('samples tanh(mu + sigma eps) with sigma from the log_sigma head', async () => {
    const net = sacActor(spec, normalize);
    // The log_sigma head fixed by its biases (-1 and -0.5), so that sigma is known.
    const head = net.block('actor.log_sigma.weight');
    net.parameters.fill(0, head.offset, head.offset + continuous * net.hiddenUnits);
    net.parameters.set([-1, -0.5].slice(0, continuous), net.block('actor.log_sigma.bias').offset);
    net.parametersChanged();
    const count = 4000;
    const one = observations(spec, 1, new SeededRandom(7));
    const obs = one.map((row) => {
      const repeated = new Float32Array(row.length * count);
      for (let i = 0; i < count; i++) repeated.set(row, i * row.length);
      return repeated;
    });
    const outputs = await run(exportPolicy(net, spec), spec, obs, count);
    const samples = outputs.continuous_actions.data as Float32Array;
    const means = outputs.deterministic_continuous_actions.data as Float32Array;
    for (let j = 0; j < continuous; j++) {
      const unsquashed = Array.from({ length: count }, (_, i) => Math.atanh(samples[i * continuous + j]));
      const mean = unsquashed.reduce((a, b) => a + b, 0) / count;
      const std = Math.sqrt(unsquashed.reduce((a, b) => a + (b - mean) ** 2, 0) / count);
      const expectedStd = Math.exp([-1, -0.5][j]);
      expect(Math.abs(mean - Math.atanh(means[j]))).toBeLessThan((5 * expectedStd) / Math.sqrt(count));
      expect(std / expectedStd).toBeGreaterThan(0.93);
      expect(std / expectedStd).toBeLessThan(1.07);
    }
  });
});
