/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * The ONNX export of policies: onnxruntime runs every exported model; its deterministic outputs
 * match our own forward pass (ActorCritic.act with network_settings.deterministic) and its
 * sampled outputs have the right shapes, ranges and distributions, with masks honored. The
 * contract (names, types, shapes, constants) matches the models Unity's trainer exported, read
 * with the same reader, when ../shared/reference is present.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ort from 'onnxruntime-node';
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec } from '../../src/env/behavior-spec';
import { readModelContract } from '../../src/export/onnx-contract';
import { exportPolicy, writePolicyModel } from '../../src/export/onnx-export';
import { ActorCritic } from '../../src/networks/actor-critic';
import { selectBackend } from '../../src/networks/backend';
import { maskedSoftmax } from '../../src/networks/distributions';
import { tempDir } from '../helpers/paths';
import { policyFeeds, randomMasks } from './policy-inputs';
import { behavior, model, observations, vectorObservation, visualObservation } from '../networks/model-fixtures';
import type { EncoderType } from '../../src/config/settings';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

interface Case {
  readonly label: string;
  readonly observationSizes: number[];
  readonly actions: ActionSpec;
  readonly normalize: boolean;
}

const testCase = (label: string, observationSizes: number[], actions: ActionSpec, normalize: boolean): Case => ({
  label,
  observationSizes,
  actions,
  normalize,
});
const CASES: Case[] = [
  testCase('continuous, 1 observation, not normalized', [6], ActionSpec.createContinuous(3), false),
  testCase('continuous, 2 observations, normalized', [5, 3], ActionSpec.createContinuous(2), true),
  testCase('discrete, 3 branches, 1 observation, normalized', [7], ActionSpec.createDiscrete([3, 4, 2]), true),
  testCase('discrete, 2 branches, 2 observations, not normalized', [4, 3], ActionSpec.createDiscrete([5, 2]), false),
  testCase('hybrid, 1 observation, not normalized', [5], new ActionSpec(1, [4]), false),
  testCase('hybrid, 2 observations, normalized', [4, 6], new ActionSpec(2, [3, 2]), true),
];

/** A deterministic model with trained-looking state: normalization statistics and log_sigma not at their start. */
function trainedModel(spec: BehaviorSpec, normalize: boolean, seed: number): ActorCritic {
  const net = model(spec, { network: { normalize, deterministic: true }, seed });
  const random = new SeededRandom(seed + 100);
  net.updateNormalization(observations(spec, 64, random), 64);
  if (spec.actionSpec.continuousSize > 0) {
    const logSigma = net.block('actor.log_sigma');
    for (let j = 0; j < logSigma.shape[0]; j++) net.parameters[logSigma.offset + j] = -1.5 + 0.25 * j;
    net.parametersChanged();
  }
  return net;
}

async function run(bytes: Uint8Array, inputs: Record<string, ort.Tensor>): Promise<ort.InferenceSession.OnnxValueMapType> {
  const session = await ort.InferenceSession.create(bytes);
  try {
    return await session.run(inputs);
  } finally {
    await session.release();
  }
}

function floats(tensor: ort.Tensor): Float32Array {
  expect(tensor.type).toBe('float32');
  return tensor.data as Float32Array;
}

function integers(tensor: ort.Tensor): number[] {
  expect(tensor.type).toBe('int64');
  return Array.from(tensor.data as BigInt64Array, Number);
}

describe.each(CASES)('onnxruntime runs the exported policy: $label', ({ observationSizes, actions, normalize }) => {
  const spec = behavior(observationSizes, actions);
  const branches = actions.discreteBranches;
  const continuous = actions.continuousSize;

  it('gives the deterministic actions of our own forward pass', async () => {
    const net = trainedModel(spec, normalize, 7);
    const random = new SeededRandom(11);
    const count = 32;
    const obs = observations(spec, count, random);
    // Far outliers in the first agent's row: normalization clips them to +-5 in both.
    obs[0].fill(60, 0, 2);
    const masks = branches.length > 0 ? randomMasks(branches, count, random, 0.4) : null;

    const outputs = await run(exportPolicy(net, spec), policyFeeds(spec, obs, count, masks));
    const ours = net.act(obs, count, masks);

    expect(floats(outputs.version_number)).toEqual(Float32Array.of(3));
    expect(floats(outputs.memory_size)).toEqual(Float32Array.of(0));
    if (continuous > 0) {
      const deterministic = floats(outputs.deterministic_continuous_actions);
      expect(outputs.deterministic_continuous_actions.dims).toEqual([count, continuous]);
      ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-5));
      expect(floats(outputs.continuous_action_output_shape)).toEqual(Float32Array.of(continuous));
    }
    if (branches.length > 0) {
      expect(outputs.deterministic_discrete_actions.dims).toEqual([count, branches.length]);
      expect(integers(outputs.deterministic_discrete_actions)).toEqual(Array.from(ours.action.discrete));
      expect(outputs.discrete_action_output_shape.dims).toEqual([1, branches.length]);
      expect(floats(outputs.discrete_action_output_shape)).toEqual(Float32Array.from(branches));
    }
    net.dispose();
  });

  it('samples actions with the policy distribution, within range, never a forbidden one', async () => {
    const net = trainedModel(spec, normalize, 8);
    // Branch logits fixed by their biases, the highest first, so that the distribution is known.
    const logits = branches.map((size) => Float64Array.from({ length: size }, (_, k) => 1 - 0.5 * k));
    branches.forEach((size, b) => {
      const weight = net.block(`actor.branches.${b}.weight`);
      net.parameters.fill(0, weight.offset, weight.offset + size * net.hiddenUnits);
      net.parameters.set(logits[b], net.block(`actor.branches.${b}.bias`).offset);
    });
    net.parametersChanged();

    const count = 4000;
    const one = observations(spec, 1, new SeededRandom(12));
    const obs = one.map((row) => {
      const repeated = new Float32Array(row.length * count);
      for (let i = 0; i < count; i++) repeated.set(row, i * row.length);
      return repeated;
    });
    // Every agent forbids each branch's most likely action.
    const maskRow = branches.flatMap((size) => Array.from({ length: size }, (_, k) => (k === 0 ? 0 : 1)));
    const masks =
      branches.length > 0 ? new Float32Array(count * maskRow.length).map((_, i) => maskRow[i % maskRow.length]) : null;

    const outputs = await run(exportPolicy(net, spec), policyFeeds(spec, obs, count, masks));

    if (continuous > 0) {
      expect(outputs.continuous_actions.dims).toEqual([count, continuous]);
      const samples = floats(outputs.continuous_actions);
      const means = floats(outputs.deterministic_continuous_actions);
      const logSigma = net.block('actor.log_sigma').offset;
      for (let j = 0; j < continuous; j++) {
        const column = Array.from({ length: count }, (_, i) => samples[i * continuous + j]);
        expect(Math.min(...column)).toBeGreaterThanOrEqual(-1);
        expect(Math.max(...column)).toBeLessThanOrEqual(1);
        const mean = column.reduce((a, b) => a + b, 0) / count;
        const std = Math.sqrt(column.reduce((a, b) => a + (b - mean) ** 2, 0) / count);
        // The means sit well inside the clip range, so the scaled Gaussian is not distorted.
        const expectedStd = Math.exp(net.parameters[logSigma + j]) / 3;
        expect(Math.abs(mean - means[j])).toBeLessThan((5 * expectedStd) / Math.sqrt(count));
        expect(std / expectedStd).toBeGreaterThan(0.93);
        expect(std / expectedStd).toBeLessThan(1.07);
      }
    }
    if (branches.length > 0) {
      expect(outputs.discrete_actions.dims).toEqual([count, branches.length]);
      const choices = integers(outputs.discrete_actions);
      // The deterministic choice skips the forbidden favourite for the next best.
      expect(integers(outputs.deterministic_discrete_actions).slice(0, branches.length)).toEqual(branches.map(() => 1));
      branches.forEach((size, b) => {
        const probs = new Float64Array(size);
        maskedSoftmax(logits[b], maskRow.slice(branches.slice(0, b).reduce((a, c) => a + c, 0)), size, probs);
        const counts = new Array<number>(size).fill(0);
        for (let i = 0; i < count; i++) counts[choices[i * branches.length + b]]++;
        expect(counts[0]).toBe(0);
        expect(counts.reduce((a, c) => a + c, 0)).toBe(count);
        counts.forEach((n, k) => expect(Math.abs(n / count - probs[k])).toBeLessThan(0.04));
      });
    }
    net.dispose();
  });
});

/** Images, one per encoder kind, channel first as Unity sends them, beside a vector observation. */
const VISUAL_CASES: Array<{ encoder: EncoderType; image: [number, number, number] }> = [
  { encoder: 'simple', image: [3, 24, 20] },
  { encoder: 'nature_cnn', image: [1, 36, 38] },
  { encoder: 'resnet', image: [2, 16, 15] },
  { encoder: 'match3', image: [5, 5, 6] },
  { encoder: 'fully_connected', image: [3, 4, 5] },
];

describe.each(VISUAL_CASES)('onnxruntime runs an exported visual policy: $encoder on $image', ({ encoder, image }) => {
  it('takes obs_k as [batch, C, H, W] and gives the deterministic actions of our own forward pass', async () => {
    const spec: BehaviorSpec = {
      observationSpecs: [visualObservation(...image), vectorObservation(3)],
      actionSpec: new ActionSpec(2, [3]),
    };
    const net = model(spec, { network: { normalize: true, deterministic: true, vis_encode_type: encoder }, seed: 3 });
    const random = new SeededRandom(5);
    const count = 6;
    const obs = observations(spec, count, random);
    net.updateNormalization(obs, count);
    const masks = randomMasks([3], count, random, 0.4);
    const inputs: Record<string, ort.Tensor> = {
      obs_0: new ort.Tensor('float32', obs[0], [count, ...image]),
      obs_1: new ort.Tensor('float32', obs[1], [count, 3]),
      action_masks: new ort.Tensor('float32', masks, [count, 3]),
    };
    const outputs = await run(exportPolicy(net, spec), inputs);
    const ours = net.act(obs, count, masks);
    const deterministic = floats(outputs.deterministic_continuous_actions);
    ours.envAction.continuous.forEach((value, i) => expect(Math.abs(deterministic[i] - value)).toBeLessThan(1e-4));
    expect(integers(outputs.deterministic_discrete_actions)).toEqual(Array.from(ours.action.discrete));
    net.dispose();
  });
});

describe('the model contract', () => {
  it('has upstream names, types, dynamic batch, constants and opset for hybrid actions and 2 observations', () => {
    const spec = behavior([4, 6], new ActionSpec(2, [3, 2]));
    const contract = readModelContract(exportPolicy(model(spec), spec));
    const batch = null;
    expect(contract).toEqual({
      irVersion: 4,
      opsetVersion: 9,
      inputs: [
        { name: 'obs_0', dataType: 'float', shape: [batch, 4] },
        { name: 'obs_1', dataType: 'float', shape: [batch, 6] },
        { name: 'action_masks', dataType: 'float', shape: [batch, 5] },
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
      ],
      constants: {
        version_number: [3],
        memory_size: [0],
        continuous_action_output_shape: [2],
        discrete_action_output_shape: [3, 2],
      },
    });
  });

  it('writes the model to a file in a new folder, which onnxruntime loads', async () => {
    const spec = behavior([3], ActionSpec.createDiscrete([2]));
    const net = model(spec);
    const file = path.join(tempDir('onnx-export'), 'results', 'run', 'Behavior', 'Behavior-100.onnx');
    writePolicyModel(file, net, spec);
    const session = await ort.InferenceSession.create(file);
    expect(session.inputNames).toEqual(['obs_0', 'action_masks']);
    await session.release();
    expect(readModelContract(fs.readFileSync(file))).toEqual(readModelContract(exportPolicy(net, spec)));
  });

  it('refuses a behavior spec the model was not built for, and bytes that are no ONNX model', () => {
    const net = model(behavior([3], ActionSpec.createContinuous(2)));
    expect(() => exportPolicy(net, behavior([3], ActionSpec.createDiscrete([2])))).toThrow(
      'Cannot export the policy: the model takes 3 observation values and acts with ' +
        'ActionSpec(continuous: 2, discrete branches: []), but the behavior spec has 3 observation values and ActionSpec(continuous: 0, discrete branches: [2]).',
    );
    expect(() => readModelContract(Uint8Array.of(0x0a, 0xff), 'broken.onnx')).toThrow('broken.onnx is not an ONNX model');
  });
});

/** Models exported by Unity's trainer (ml-agents, torch 1.11), for the example scenes' behaviors. */
const REFERENCE_MODELS = path.resolve(__dirname, '../../../shared/reference/models');

describe('the contract matches Unity-exported models', () => {
  if (!fs.existsSync(REFERENCE_MODELS)) {
    console.log(`skipped: ../shared/reference not present (looked for ${REFERENCE_MODELS})`);
    it.skip('skipped: ../shared/reference not present', () => undefined);
    return;
  }
  const references: Array<{ file: string; spec: BehaviorSpec; normalize: boolean }> = [
    { file: '3DBall.onnx', spec: behavior([8], ActionSpec.createContinuous(2)), normalize: true },
    { file: 'Basic.onnx', spec: behavior([20], ActionSpec.createDiscrete([3])), normalize: false },
  ];
  it.each(references)('$file', ({ file, spec, normalize }) => {
    const reference = readModelContract(fs.readFileSync(path.join(REFERENCE_MODELS, file)), file);
    const ours = readModelContract(exportPolicy(model(spec, { network: { normalize } }), spec));
    expect(ours).toEqual(reference);
  });
});
