/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The ONNX export of recurrent policies (network_settings.memory), as Unity's inference runs them:
 * recurrent_in [batch, 1, memory_size] holds each agent's [h | c], recurrent_out gives them back
 * after the step, and Unity feeds one step's recurrent_out to the next step's recurrent_in.
 * Carried that way through several steps, onnxruntime's deterministic actions and memories stay
 * those of our own forward pass (ActorCritic.act with the memories carried step to step).
 */
import * as ort from 'onnxruntime-node';
import { onnx } from 'onnx-proto';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec, ObservationType } from '../../src/env/behavior-spec';
import { readModelContract } from '../../src/export/onnx-contract';
import { exportPolicy } from '../../src/export/onnx-export';
import { ActorCritic } from '../../src/networks/actor-critic';
import { selectBackend } from '../../src/networks/backend';
import { behavior, network, observations, vectorObservation, visualObservation } from '../networks/model-fixtures';
import { policyFeeds, randomMasks } from './policy-inputs';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const MEMORY = { memory_size: 12, sequence_length: 4 };

interface Case {
  readonly label: string;
  readonly spec: BehaviorSpec;
  readonly normalize: boolean;
  /** SAC's actor: the log_sigma head and tanh squashing. */
  readonly sac?: boolean;
  readonly sharedCritic?: boolean;
}

const CASES: Case[] = [
  { label: 'continuous, 2 vector observations, normalized', spec: behavior([5, 3], ActionSpec.createContinuous(2)), normalize: true },
  { label: 'discrete, 2 branches, not normalized', spec: behavior([6], ActionSpec.createDiscrete([3, 2])), normalize: false },
  { label: 'hybrid, shared critic, normalized', spec: behavior([4], new ActionSpec(2, [4])), normalize: true, sharedCritic: true },
  { label: 'SAC actor, continuous', spec: behavior([5], ActionSpec.createContinuous(3)), normalize: true, sac: true },
  {
    label: 'an image and a vector, hybrid',
    spec: { observationSpecs: [visualObservation(2, 20, 20), vectorObservation(3)], actionSpec: new ActionSpec(1, [3]) },
    normalize: true,
  },
  {
    label: 'a goal signal conditioning the body through a hypernetwork, hybrid',
    spec: { observationSpecs: [vectorObservation(3), vectorObservation(2, ObservationType.GOAL_SIGNAL)], actionSpec: new ActionSpec(1, [3]) },
    normalize: true,
  },
];

function recurrentModel({ spec, normalize, sac, sharedCritic }: Case, seed: number): ActorCritic {
  const net = new ActorCritic(spec, {
    network: network({ normalize, deterministic: true, memory: MEMORY }),
    rewardSignals: ['extrinsic'],
    sharedCritic: sharedCritic ?? false,
    seed,
    conditionalSigma: sac ?? false,
    tanhSquash: sac ?? false,
  });
  const random = new SeededRandom(seed + 50);
  net.updateNormalization(observations(spec, 64, random), 64);
  // The LSTM's biases away from their start, so that each gate's place in the ONNX node matters.
  for (const name of ['actor.lstm.bias_ih', 'actor.lstm.bias_hh']) {
    const block = net.block(name);
    for (let k = 0; k < block.shape[0]; k++) net.parameters[block.offset + k] += 0.3 * random.gaussian();
  }
  net.parametersChanged();
  return net;
}

describe.each(CASES)('a recurrent policy run by onnxruntime step after step: $label', (testCase) => {
  it('gives the deterministic actions and the memories of our own forward pass', async () => {
    const { spec } = testCase;
    const net = recurrentModel(testCase, 3);
    const memorySize = MEMORY.memory_size;
    const branches = spec.actionSpec.discreteBranches;
    const continuous = spec.actionSpec.continuousSize;
    const count = 3;
    const random = new SeededRandom(9);
    const session = await ort.InferenceSession.create(exportPolicy(net, spec));
    try {
      // Each agent starts from memories of its own (not zeros), so that the [h | c] halves and
      // the agents' rows are told apart from the first step on.
      let ourMemories: Float32Array = new Float32Array(count * memorySize).map(() => 0.5 * random.gaussian());
      let onnxMemories = ourMemories.slice();
      for (let step = 0; step < 5; step++) {
        const obs = observations(spec, count, random);
        const masks = branches.length > 0 ? randomMasks(branches, count, random, 0.3) : null;
        const outputs = await session.run({
          ...policyFeeds(spec, obs, count, masks),
          recurrent_in: new ort.Tensor('float32', onnxMemories, [count, 1, memorySize]),
        });
        const ours = net.act(obs, count, masks, { memories: ourMemories });

        expect(outputs.memory_size.data).toEqual(Float32Array.of(memorySize));
        expect(outputs.recurrent_out.type).toBe('float32');
        expect(outputs.recurrent_out.dims).toEqual([count, 1, memorySize]);
        const memoriesAfter = outputs.recurrent_out.data as Float32Array;
        ours.memories!.forEach((value, i) => expect(Math.abs(memoriesAfter[i] - value)).toBeLessThan(1e-5));
        if (continuous > 0) {
          expect(outputs.deterministic_continuous_actions.dims).toEqual([count, continuous]);
          const deterministic = outputs.deterministic_continuous_actions.data as Float32Array;
          ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-5));
        }
        if (branches.length > 0) {
          expect(outputs.deterministic_discrete_actions.dims).toEqual([count, branches.length]);
          expect(Array.from(outputs.deterministic_discrete_actions.data as BigInt64Array, Number)).toEqual(Array.from(ours.action.discrete));
        }
        // As Unity does: each side's memories after this step are its next step's.
        onnxMemories = memoriesAfter.slice();
        ourMemories = ours.memories!;
      }
    } finally {
      await session.release();
    }
    net.dispose();
  });
});

describe('the recurrent model contract', () => {
  it('takes recurrent_in after the masks and gives recurrent_out last, [batch, 1, memory_size], with memory_size its constant', async () => {
    const spec = behavior([4, 6], new ActionSpec(2, [3, 2]));
    const net = recurrentModel({ label: '', spec, normalize: false }, 1);
    const bytes = exportPolicy(net, spec);
    const contract = readModelContract(bytes);
    const batch = null;
    expect(contract).toEqual({
      irVersion: 4,
      opsetVersion: 9,
      inputs: [
        { name: 'obs_0', dataType: 'float', shape: [batch, 4] },
        { name: 'obs_1', dataType: 'float', shape: [batch, 6] },
        { name: 'action_masks', dataType: 'float', shape: [batch, 5] },
        { name: 'recurrent_in', dataType: 'float', shape: [batch, 1, 12] },
      ],
      outputs: [
        { name: 'version_number', dataType: 'float', shape: [1] },
        { name: 'memory_size', dataType: 'float', shape: [1] },
        { name: 'continuous_actions', dataType: 'float', shape: [batch, 2] },
        { name: 'continuous_action_output_shape', dataType: 'float', shape: [1] },
        { name: 'deterministic_continuous_actions', dataType: 'float', shape: [batch, 2] },
        { name: 'discrete_actions', dataType: 'int64', shape: [batch, 2] },
        { name: 'discrete_action_output_shape', dataType: 'float', shape: [1, 2] },
        { name: 'deterministic_discrete_actions', dataType: 'int64', shape: [batch, 2] },
        { name: 'recurrent_out', dataType: 'float', shape: [batch, 1, 12] },
      ],
      constants: {
        version_number: [3],
        memory_size: [12],
        continuous_action_output_shape: [2],
        discrete_action_output_shape: [3, 2],
      },
    });
    // onnxruntime agrees on the names and their order.
    const session = await ort.InferenceSession.create(bytes);
    expect(session.inputNames).toEqual(['obs_0', 'obs_1', 'action_masks', 'recurrent_in']);
    expect(session.outputNames[session.outputNames.length - 1]).toBe('recurrent_out');
    await session.release();
    net.dispose();
  });

  it('has no action_masks with continuous actions only, recurrent_in right after the observations', () => {
    const spec = behavior([3], ActionSpec.createContinuous(1));
    const net = recurrentModel({ label: '', spec, normalize: true }, 2);
    const contract = readModelContract(exportPolicy(net, spec));
    expect(contract.inputs.map((input) => input.name)).toEqual(['obs_0', 'recurrent_in']);
    expect(contract.outputs.map((output) => output.name)).toEqual([
      'version_number',
      'memory_size',
      'continuous_actions',
      'continuous_action_output_shape',
      'deterministic_continuous_actions',
      'recurrent_out',
    ]);
    expect(contract.constants.memory_size).toEqual([12]);
    net.dispose();
  });

  it('uses only operators and attribute forms of opset 9', () => {
    const spec = behavior([4], new ActionSpec(1, [2]));
    const net = recurrentModel({ label: '', spec, normalize: true }, 4);
    const graph = onnx.ModelProto.decode(exportPolicy(net, spec)).graph as onnx.GraphProto;
    const recurrentNodes = graph.node.filter((node) => (node.output ?? []).some((output) => output.startsWith('actor.lstm') || output === 'recurrent_out'));
    expect(recurrentNodes.map((node) => node.opType)).toEqual(['Transpose', 'Slice', 'Slice', 'Unsqueeze', 'LSTM', 'Squeeze', 'Concat', 'Transpose']);
    // Slice, Squeeze and Unsqueeze take their axes as attributes before opsets 10 and 13: one input each.
    for (const node of recurrentNodes.filter((n) => ['Slice', 'Squeeze', 'Unsqueeze'].includes(n.opType ?? ''))) expect(node.input).toHaveLength(1);
    net.dispose();
  });
});
