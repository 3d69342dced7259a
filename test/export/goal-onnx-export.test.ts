/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The ONNX export of goal-conditioned policies (goal_conditioning_type hyper): the contract is
 * upstream's, the goal signal one more obs_<k> input; onnxruntime's deterministic actions are
 * those of our own forward pass, for a vector goal and for an image goal; the hypernetwork's
 * nodes use opset 9's operators and attribute forms. (With memory: recurrent-onnx-export.test.ts.)
 */
import * as ort from 'onnxruntime-node';
import { onnx } from 'onnx-proto';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import { readModelContract } from '../../src/export/onnx-contract';
import { exportPolicy } from '../../src/export/onnx-export';
import { selectBackend } from '../../src/networks/backend';
import { model, observations, vectorObservation, visualObservation } from '../networks/model-fixtures';
import { policyFeeds, randomMasks } from './policy-inputs';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const vectorGoal: BehaviorSpec = {
  observationSpecs: [vectorObservation(2, ObservationType.GOAL_SIGNAL), vectorObservation(5)],
  actionSpec: new ActionSpec(2, [3, 2]),
};
const imageGoal: BehaviorSpec = {
  observationSpecs: [vectorObservation(3), { ...visualObservation(3, 20, 22), observationType: ObservationType.GOAL_SIGNAL }],
  actionSpec: new ActionSpec(1, [4]),
};

describe.each([
  { label: 'a vector goal before a vector observation, 2 layers, normalized', spec: vectorGoal, layers: 2, normalize: true },
  { label: 'an image goal after a vector observation (simple encoder), 1 layer', spec: imageGoal, layers: 1, normalize: false },
])('onnxruntime runs a goal-conditioned policy: $label', ({ spec, layers, normalize }) => {
  it('gives the deterministic actions of our own forward pass', async () => {
    const net = model(spec, { network: { normalize, deterministic: true, num_layers: layers }, seed: 3 });
    expect(net.actorBody.goalConditioned).toBe(true);
    const random = new SeededRandom(5);
    const count = 7;
    const obs = observations(spec, count, random);
    net.updateNormalization(obs, count);
    // The hypernetwork's biases away from their zero start, so that each one's place in the graph matters.
    for (const block of net.blocks.filter((b) => b.name.startsWith('actor.') && b.name.endsWith('bias'))) {
      for (let k = 0; k < block.shape.reduce((a, b) => a * b, 1); k++) net.parameters[block.offset + k] += 0.1 * random.gaussian();
    }
    net.parametersChanged();
    const masks = randomMasks(spec.actionSpec.discreteBranches, count, random, 0.4);
    const session = await ort.InferenceSession.create(exportPolicy(net, spec));
    try {
      const outputs = await session.run(policyFeeds(spec, obs, count, masks));
      const ours = net.act(obs, count, masks);
      const deterministic = outputs.deterministic_continuous_actions.data as Float32Array;
      expect(deterministic).toHaveLength(ours.envAction.continuous.length);
      ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-4));
      expect(Array.from(outputs.deterministic_discrete_actions.data as BigInt64Array, Number)).toEqual(Array.from(ours.action.discrete));
    } finally {
      await session.release();
    }
    net.dispose();
  });
});

describe('the goal-conditioned model contract', () => {
  it('is that of the same behavior without conditioning: the goal is one more obs_<k>', () => {
    const hyper = readModelContract(exportPolicy(model(vectorGoal), vectorGoal));
    const none = readModelContract(exportPolicy(model(vectorGoal, { network: { goal_conditioning_type: 'none' } }), vectorGoal));
    expect(hyper).toEqual(none);
    expect(hyper.inputs.map((input) => `${input.name} ${JSON.stringify(input.shape)}`)).toEqual(['obs_0 [null,2]', 'obs_1 [null,5]', 'action_masks [null,5]']);
  });

  it('uses only operators and attribute forms of opset 9 in the hypernetwork', () => {
    const graph = onnx.ModelProto.decode(exportPolicy(model(vectorGoal, { network: { num_layers: 1 } }), vectorGoal)).graph as onnx.GraphProto;
    const nodes = graph.node.filter((node) => (node.output ?? []).some((output) => output.startsWith('actor.layers.')));
    expect(nodes.map((node) => node.opType)).toEqual([
      'MatMul', // the goal's columns picked out of the input
      ...['Gemm', 'Sigmoid', 'Mul', 'Gemm', 'Sigmoid', 'Mul'], // the MLP on the goal
      ...['ReduceMean', 'Sub', 'Mul', 'ReduceMean', 'Add', 'Sqrt', 'Div'], // LayerNorm
      ...['Unsqueeze', 'Unsqueeze', 'Mul', 'Flatten', 'Gemm', 'Gemm'], // the generated layer
      ...['Sigmoid', 'Mul'], // Swish
    ]);
    // Before opset 13, Unsqueeze and ReduceMean take their axes as attributes: one input each.
    for (const node of nodes.filter((n) => ['Unsqueeze', 'ReduceMean'].includes(n.opType ?? ''))) expect(node.input).toHaveLength(1);
  });
});
