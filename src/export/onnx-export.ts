/**
 * Exports a trained policy as the ONNX model Unity's inference engine runs, with the contract of
 * upstream's export (torch_entities/model_serialization.py, and the export branch of
 * networks.py, action_model.py and distributions.py):
 *
 *   inputs   obs_0 .. obs_<n-1>  float [batch, size]       one per observation, in spec order
 *                                float [batch, C, H, W]    (an image, channel first)
 *                                float [batch, entities, size]   (a variable-length observation, padded entities zero)
 *            action_masks        float [batch, sum of branch sizes]   only with discrete actions
 *            recurrent_in        float [batch, 1, memory_size]   only with memory: [h | c] of each agent
 *   outputs  version_number      float [1]   3 (MLAgents2_0)
 *            memory_size         float [1]   network_settings.memory.memory_size; 0 without memory
 *            continuous_actions  float [batch, size]   sampled, clipped to [-3, 3] and divided by 3
 *            continuous_action_output_shape   float [1]   the continuous size
 *            deterministic_continuous_actions float [batch, size]   the means, clipped and scaled
 *            discrete_actions    int64 [batch, branches]   sampled from the masked softmax
 *            discrete_action_output_shape     float [1, branches]   each branch's size
 *            deterministic_discrete_actions   int64 [batch, branches]   each branch's argmax
 *            recurrent_out       float [batch, 1, memory_size]   only with memory: [h | c] after the step
 * The continuous outputs exist only with continuous actions, the discrete ones only with
 * discrete actions; opset 9, as upstream's SerializationSettings.onnx_opset. The memory tensors
 * are [batch, 1, memory_size] because Unity's RecurrentInputGenerator writes, and its memory
 * applier reads, element [agent, 0, j]; upstream's export traces them that way (its dummy
 * memories are [1, 1, memory_size], the batch dynamic).
 *
 * Everything the policy does between observations and actions lives in the graph, as in
 * upstream's: the running normalization (with its statistics frozen as constants), the actor's
 * network body (each of its layers writes its own nodes), with memory one step of its LSTM,
 * its heads, Gaussian sampling (RandomNormalLike), action clipping, masking of forbidden discrete
 * actions (logit * mask - 1e8 * (1 - mask)) and categorical sampling (Multinomial over the log
 * probabilities). The value heads are left out: inference needs only the actor, and the
 * memories are the actor's alone (upstream's export_memory_size), as Unity carries one set per agent.
 */
import * as fs from 'fs';
import * as path from 'path';
import { onnx } from 'onnx-proto';
import { writeFileWhole } from '../common/whole-files';
import type { ActorCritic } from '../networks/actor-critic';
import { ACTION_CLIP, MASK_PENALTY } from '../networks/distributions';
import { NORMALIZED_CLIP } from '../networks/normalizer';
import { LOG_SIGMA_MAX, LOG_SIGMA_MIN } from '../networks/squashed-gaussian';
import { BehaviorSpec, observationSize } from '../env/behavior-spec';
import { BATCH_DIMENSION, Dimension, OnnxGraphBuilder } from './onnx-graph';

/** The ONNX operator set of upstream's export. */
export const ONNX_OPSET = 9;
/** The IR version of the files upstream writes with that opset (torch 1.11). */
export const ONNX_IR_VERSION = 4;
/** Upstream's ModelVersionNumber of the models Unity's package 2.x reads (MLAgents2_0). */
export const MODEL_VERSION_NUMBER = 3;

/** Upstream's TensorNames: what Unity looks for in the model. */
export const TensorNames = {
  observation: (index: number) => `obs_${index}`,
  actionMasks: 'action_masks',
  versionNumber: 'version_number',
  memorySize: 'memory_size',
  recurrentIn: 'recurrent_in',
  recurrentOut: 'recurrent_out',
  continuousActions: 'continuous_actions',
  continuousActionOutputShape: 'continuous_action_output_shape',
  deterministicContinuousActions: 'deterministic_continuous_actions',
  discreteActions: 'discrete_actions',
  discreteActionOutputShape: 'discrete_action_output_shape',
  deterministicDiscreteActions: 'deterministic_discrete_actions',
} as const;

const { FLOAT, INT64 } = onnx.TensorProto.DataType;

/** The policy of `model` (built for `spec`) as the bytes of an ONNX model. */
export function exportPolicy(model: ActorCritic, spec: BehaviorSpec): Uint8Array {
  checkModelFitsSpec(model, spec);
  const graph = new OnnxGraphBuilder();
  const { continuousSize, discreteBranches } = spec.actionSpec;
  let encoded = encodedObservations(graph, model, spec);
  // Upstream's input order: the observations, action_masks, then recurrent_in.
  const masks =
    discreteBranches.length > 0
      ? graph.input(TensorNames.actionMasks, FLOAT, [BATCH_DIMENSION, discreteBranches.reduce((a, b) => a + b, 0)])
      : null;
  const memorySize = model.actorBody.memorySize;
  let memoriesAfter: string | null = null;
  if (memorySize > 0) ({ encoded, memoriesAfter } = memoryStep(graph, model, encoded));

  constantOutput(graph, TensorNames.versionNumber, [1], [MODEL_VERSION_NUMBER]);
  constantOutput(graph, TensorNames.memorySize, [1], [memorySize]);
  if (continuousSize > 0) continuousOutputs(graph, model, encoded, continuousSize);
  if (masks !== null) discreteOutputs(graph, model, encoded, discreteBranches, masks);
  if (memoriesAfter !== null) graph.output(memoriesAfter, FLOAT, [BATCH_DIMENSION, 1, memorySize]);

  const modelProto: onnx.IModelProto = {
    irVersion: ONNX_IR_VERSION,
    opsetImport: [{ domain: '', version: ONNX_OPSET }],
    producerName: 'mlagents-ts',
    graph: graph.graph('policy'),
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(modelProto)).finish();
}

/** Writes exportPolicy()'s model to `file`, creating its folder. */
export function writePolicyModel(file: string, model: ActorCritic, spec: BehaviorSpec): void {
  const bytes = exportPolicy(model, spec);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  writeFileWhole(file, bytes);
}

function checkModelFitsSpec(model: ActorCritic, spec: BehaviorSpec): void {
  const shapes = (s: BehaviorSpec) => JSON.stringify(s.observationSpecs.map((obs) => obs.shape));
  const values = (s: BehaviorSpec) => s.observationSpecs.reduce((total, obs) => total + observationSize(obs), 0);
  if (shapes(spec) !== shapes(model.behaviorSpec) || !spec.actionSpec.equals(model.actionSpec)) {
    throw new Error(
      `Cannot export the policy: the model takes ${values(model.behaviorSpec)} observation values and acts with ` +
        `${model.actionSpec}, but the behavior spec has ${values(spec)} observation values and ${spec.actionSpec}. ` +
        'Export a model with the behavior spec it was built for.',
    );
  }
}

/** A float constant as a graph output: an initializer passed on by an Identity node, as upstream's. */
function constantOutput(graph: OnnxGraphBuilder, name: string, shape: readonly number[], values: readonly number[]): void {
  graph.output(graph.node('Identity', [graph.floats(`${name}.value`, shape, values)], name), FLOAT, shape);
}

/**
 * The graph's observation inputs, each vector one normalized when the model normalizes (images
 * [batch, channels, height, width], variable-length observations [batch, entities, entity size],
 * as upstream's), through the actor's network body.
 */
function encodedObservations(graph: OnnxGraphBuilder, model: ActorCritic, spec: BehaviorSpec): string {
  const body = model.actorBody;
  const normalizer = model.normalizer;
  let first = 0;
  const inputs = spec.observationSpecs.map((obs, k) => {
    const image = body.imageInput(k);
    if (image !== null) return graph.input(TensorNames.observation(k), FLOAT, [BATCH_DIMENSION, ...image]);
    // Variable-length observations go in unnormalized, as upstream's entity embeddings take them.
    const entities = body.entityInput(k);
    if (entities !== null) return graph.input(TensorNames.observation(k), FLOAT, [BATCH_DIMENSION, ...entities]);
    const size = observationSize(obs);
    const input = graph.input(TensorNames.observation(k), FLOAT, [BATCH_DIMENSION, size]);
    const features = first;
    first += size;
    if (normalizer === null) return input;
    // The statistics are frozen into the model: (x - mean) / sqrt(variance / steps), clipped.
    const mean = normalizer.mean.subarray(features, features + size);
    const std = normalizer.variance.subarray(features, features + size).map((v) => Math.sqrt(v / normalizer.steps));
    const centered = graph.node('Sub', [input, graph.floats(`normalizer.${k}.mean`, [size], mean)], `obs_${k}.centered`);
    const scaled = graph.node('Div', [centered, graph.floats(`normalizer.${k}.std`, [size], std)], `obs_${k}.scaled`);
    return graph.node('Clip', [scaled], `obs_${k}.normalized`, {
      min: { float: -NORMALIZED_CLIP },
      max: { float: NORMALIZED_CLIP },
    });
  });
  return body.exportOnnx(graph, inputs, model.parameters);
}

/**
 * One step of the actor's LSTM on the LinearEncoder's output `encoding` [batch, hidden], from
 * recurrent_in [batch, 1, memory_size] ([h | c] per agent, as upstream's LSTM splits them):
 * returns the LSTM's output [batch, memory_size / 2] for the heads and recurrent_out, the
 * memories after the step in recurrent_in's layout. ONNX's LSTM runs sequence first, so the
 * batch moves to the second axis and back; opset 9's Slice, Squeeze and Unsqueeze take their
 * axes as attributes.
 */
function memoryStep(graph: OnnxGraphBuilder, model: ActorCritic, encoding: string): { encoded: string; memoriesAfter: string } {
  const lstm = model.actorBody.memory!;
  const h = lstm.hiddenSize;
  const name = lstm.name;
  const memories = graph.input(TensorNames.recurrentIn, FLOAT, [BATCH_DIMENSION, 1, lstm.memorySize]);
  const sequenceFirst = graph.node('Transpose', [memories], `${name}.memories_in`, { perm: { ints: [1, 0, 2] } });
  const half = (label: string, start: number) =>
    graph.node('Slice', [sequenceFirst], `${name}.${label}`, { axes: { ints: [2] }, starts: { ints: [start] }, ends: { ints: [start + h] } });
  const initialHidden = half('h0', 0);
  const initialCell = half('c0', h);
  // A sequence of one step: [1, batch, hidden].
  const steps = graph.node('Unsqueeze', [encoding], `${name}.input`, { axes: { ints: [0] } });
  const out = lstm.exportOnnx(graph, steps, initialHidden, initialCell, model.parameters);
  // Y is [steps = 1, directions = 1, batch, H].
  const encoded = graph.node('Squeeze', [out.output], `${name}.output`, { axes: { ints: [0, 1] } });
  const after = graph.node('Concat', [out.hidden, out.cell], `${name}.memories_out`, { axis: { int: 2 } });
  const memoriesAfter = graph.node('Transpose', [after], TensorNames.recurrentOut, { perm: { ints: [1, 0, 2] } });
  return { encoded, memoriesAfter };
}

/** One output part of the actor's head (actor.mu, actor.branches.<b>, ...) as its own Gemm. */
function head(graph: OnnxGraphBuilder, model: ActorCritic, part: string, encoded: string): string {
  return model.actorHead.exportPartOnnx(graph, encoded, part, model.parameters);
}

/** A parameter block of the model as a constant of the same name and shape. */
function parameterConstant(graph: OnnxGraphBuilder, model: ActorCritic, name: string, shape?: readonly number[]): string {
  const block = model.block(name);
  const size = block.shape.reduce((a, b) => a * b, 1);
  return graph.floats(name, shape ?? block.shape, model.parameters.subarray(block.offset, block.offset + size));
}

function continuousOutputs(graph: OnnxGraphBuilder, model: ActorCritic, encoded: string, size: number): void {
  const mean = head(graph, model, 'actor.mu', encoded);
  // PPO: the standard deviation does not depend on the state (one row, broadcast over the
  // batch). SAC (conditional sigma): a head of the body, clamped to [-20, 2] as upstream's.
  const logStd = model.conditionalSigma
    ? graph.node('Clip', [head(graph, model, 'actor.log_sigma', encoded)], 'actor.log_sigma.clamped', {
        min: { float: LOG_SIGMA_MIN },
        max: { float: LOG_SIGMA_MAX },
      })
    : parameterConstant(graph, model, 'actor.log_sigma', [1, size]);
  const std = graph.node('Exp', [logStd], 'actor.sigma');
  const noise = graph.node('RandomNormalLike', [mean], 'continuous.noise', { dtype: { int: FLOAT } });
  const sample = graph.node('Add', [mean, graph.node('Mul', [noise, std], 'continuous.scaled_noise')], 'continuous.sample');
  if (model.options.tanhSquash) {
    // SAC squashes with tanh instead of clipping (upstream's TanhGaussianDistInstance); the
    // deterministic action is tanh of the mean, as ActorCritic.act gives it.
    graph.output(graph.node('Tanh', [sample], TensorNames.continuousActions), FLOAT, [BATCH_DIMENSION, size]);
    constantOutput(graph, TensorNames.continuousActionOutputShape, [1], [size]);
    graph.output(graph.node('Tanh', [mean], TensorNames.deterministicContinuousActions), FLOAT, [BATCH_DIMENSION, size]);
    return;
  }
  const divisor = graph.floats('continuous.clip_divisor', [], [ACTION_CLIP]);
  const clipped = (value: string, output: string) =>
    graph.node(
      'Div',
      [graph.node('Clip', [value], `${output}.clipped`, { min: { float: -ACTION_CLIP }, max: { float: ACTION_CLIP } }), divisor],
      output,
    );

  graph.output(clipped(sample, TensorNames.continuousActions), FLOAT, [BATCH_DIMENSION, size]);
  constantOutput(graph, TensorNames.continuousActionOutputShape, [1], [size]);
  graph.output(clipped(mean, TensorNames.deterministicContinuousActions), FLOAT, [BATCH_DIMENSION, size]);
}

function discreteOutputs(graph: OnnxGraphBuilder, model: ActorCritic, encoded: string, branches: readonly number[], masks: string): void {
  const one = graph.floats('mask.one', [], [1]);
  const penalty = graph.floats('mask.penalty', [], [MASK_PENALTY]);
  const samples: string[] = [];
  const choices: string[] = [];
  let first = 0;
  branches.forEach((size, b) => {
    const name = `actor.branches.${b}`;
    const logits = head(graph, model, name, encoded);
    const allowed = graph.node('Slice', [masks], `${name}.allowed`, {
      axes: { ints: [1] },
      starts: { ints: [first] },
      ends: { ints: [first + size] },
    });
    first += size;
    // logit * allowed - 1e8 * (1 - allowed): a forbidden action's probability becomes 0.
    const kept = graph.node('Mul', [logits, allowed], `${name}.kept_logits`);
    const forbidden = graph.node('Sub', [one, allowed], `${name}.forbidden`);
    const pushedDown = graph.node('Mul', [forbidden, penalty], `${name}.penalty`);
    const masked = graph.node('Sub', [kept, pushedDown], `${name}.masked_logits`);
    const probs = graph.node('Softmax', [masked], `${name}.probs`, { axis: { int: 1 } });
    const logProbs = graph.node('Log', [probs], `${name}.log_probs`);
    const sampleAttributes = { dtype: { int: INT64 }, sample_size: { int: 1 } };
    samples.push(graph.node('Multinomial', [logProbs], `${name}.sample`, sampleAttributes));
    choices.push(graph.node('ArgMax', [probs], `${name}.argmax`, { axis: { int: 1 }, keepdims: { int: 1 } }));
  });

  const batchOfBranches: Dimension[] = [BATCH_DIMENSION, branches.length];
  graph.output(graph.node('Concat', samples, TensorNames.discreteActions, { axis: { int: 1 } }), INT64, batchOfBranches);
  constantOutput(graph, TensorNames.discreteActionOutputShape, [1, branches.length], branches);
  const deterministic = graph.node('Concat', choices, TensorNames.deterministicDiscreteActions, { axis: { int: 1 } });
  graph.output(deterministic, INT64, batchOfBranches);
}
