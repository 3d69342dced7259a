/**
 * The PPO policy and value networks, as upstream's torch_entities (networks.py SimpleActor,
 * SharedActorCritic and ValueNetwork; NetworkBody; layers.py LinearEncoder; conditioning.py;
 * action_model.py; decoders.py ValueHeads), for vector and visual observations and goal signals.
 *
 * Each of its networks is a NetworkBody (network-body.ts: a visual encoder per image beside the
 * normalized vector observations, then upstream's LinearEncoder of `num_layers` Swish layers, or
 * its ConditionalEncoder when a hypernetwork conditions the body on goal signals)
 * with one dense head whose output parts are upstream's heads: the action model's
 * (action-model.ts: the Gaussian's means, whose log standard deviations are a separate learned
 * vector, and the logits of each discrete branch), and a value head per reward signal. With
 * shared_critic the value heads sit on the actor's body; otherwise the critic has a body of its
 * own. SAC's actor (options conditionalSigma and
 * tanhSquash) adds a log_sigma head beside the means and squashes its Gaussian samples with
 * tanh; its critic body is SAC's value network V(s). With network_settings.memory each body ends
 * in an LSTM (upstream's), the heads read its output, and the caller carries the memories: the
 * agents' between decisions (act), the critic's over a trajectory (criticValuesInSequences), and
 * each training sequence's first ones (computeGradient's sequences).
 *
 * How it runs fast. The parameters live in one Float32Array (Adam updates them in JavaScript);
 * the layers run each pass the way that is fastest for it (layers/dense.ts): acting batch first,
 * in plain JavaScript for a few agents; training feature-major. The gradient is derived by hand:
 * the loss hands back its gradient with respect to the head outputs, and each layer turns that
 * into weight gradients; no autodiff tape is recorded. Actor and critic run as two chains rather
 * than one block-diagonal product: measured on wasm, the doubled arithmetic of a block-diagonal
 * 256 x 256 layer costs more than the ops it saves.
 *
 * tfjs may keep a typed array it is given instead of copying it (the cpu backend does), so an
 * array handed to tfjs during a pass is never rewritten before that pass ends.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../env/behavior-spec';
import { SeededRandom } from '../common/random';
import { ActionModel, SampledActions } from './action-model';
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';
import { RunningNormalizer } from './normalizer';
import { ReadingPass, gradientsSettled, passReadingNothing, readTogether, runPass, scoped, tensorValues, tidyValues, transposeInto, writeGradient } from './tensor-io';
import { UnsupportedModelError } from './unsupported-model';
import { BodyInputLayout, isVariableLength, isVisual, observationLabel } from './encoders/body-input';
import type { EntityObservation } from './encoders/entity-attention';
import { ParameterBlock, ParameterSource, deviceBlock, sequentialAllocator } from './layers/layer';
import { Dense, DenseOutputPart } from './layers/dense';
import { NetworkBody } from './network-body';

export interface ActorCriticOptions {
  readonly network: NetworkSettings;
  /** The reward signals, one value head each (upstream's stream names), e.g. ['extrinsic']. */
  readonly rewardSignals: readonly string[];
  /** One body for the policy and the value heads (PPO's shared_critic). */
  readonly sharedCritic: boolean;
  /** Seeds the initial weights and the sampling of actions. */
  readonly seed: number;
  /**
   * SAC's actor (upstream's conditional_sigma): the log standard deviations are a head of the
   * actor's body, clamped to [-20, 2], instead of a learned vector. Default false.
   */
  readonly conditionalSigma?: boolean;
  /**
   * SAC's actor (upstream's tanh_squash): continuous actions are tanh of the Gaussian sample, in
   * (-1, 1), sent to the environment unclipped, with the log probability corrected for the
   * squashing. Default false.
   */
  readonly tanhSquash?: boolean;
  /**
   * POCA's actor: the policy alone, without value heads nor a critic (POCA's critic is a network
   * of its own, poca-critic.ts); rewardSignals and sharedCritic are then unused. Default false.
   */
  readonly actorOnly?: boolean;
}

export { UnsupportedModelError };

/** The architecture of a model, as a checkpoint records it. */
export interface ModelDescription {
  readonly inputSize: number;
  readonly hiddenUnits: number;
  readonly numLayers: number;
  readonly sharedCritic: boolean;
  readonly normalize: boolean;
  readonly continuousSize: number;
  readonly discreteBranches: readonly number[];
  readonly rewardSignals: readonly string[];
  readonly blocks: ReadonlyArray<{ readonly name: string; readonly shape: readonly number[] }>;
  /**
   * Present when the behavior has images: each one's observation index, shape and encoder, and
   * the order its encoder flattens features in (channel first, as torch).
   */
  readonly visualObservations?: ReadonlyArray<{
    readonly observation: number;
    readonly shape: readonly number[];
    readonly encoder: string;
    readonly flatten: 'channel first';
  }>;
  /**
   * Present when the behavior has variable-length observations: each one's index and
   * [maxEntities, entitySize], encoded by the entity attention.
   */
  readonly variableLengthObservations?: ReadonlyArray<EntityObservation & { readonly encoder: 'attention' }>;
  /** Present when a hypernetwork conditions the bodies on goal signals: those observations. */
  readonly goalConditioning?: { readonly type: 'hyper'; readonly goalObservations: readonly number[] };
  /** Present for POCA's actor: the policy alone. */
  readonly actorOnly?: true;
}

/** A batch of decisions (see SampledActions), with value estimates when asked for. */
export interface ActOutput extends SampledActions {
  /** Value estimates of each reward signal. */
  readonly values?: Readonly<Record<string, Float32Array>>;
  /** With memory: each agent's memories after this decision (count x memorySize; upstream's memory_out). */
  readonly memories?: Float32Array;
}

/**
 * Recurrent training: the batch's rows are whole sequences of `length` steps, sequence after
 * sequence, and each network starts each sequence from its memories (sequences x memorySize):
 * the actor from `actor`, the critic, when it has its own body, from `critic`.
 */
export interface SequenceMemories {
  readonly length: number;
  readonly actor: Float32Array;
  readonly critic: Float32Array;
}

/** The critic's estimates over one agent's trajectory with memory (see criticValuesInSequences). */
export interface SequenceValues {
  readonly values: Record<string, Float32Array>;
  /** Per step, the critic's memories at the start of its sequence (steps x memorySize; upstream's critic memories). */
  readonly stepMemories: Float32Array;
  /** The critic's memories after the last step. */
  readonly finalMemories: Float32Array;
}

/**
 * The outputs of the heads for a training batch of `count` samples, feature-major: entry
 * (r, i) of an r-rows matrix is at r * count + i.
 */
export interface HeadOutputs {
  readonly count: number;
  /** continuous size x count */
  readonly means: Float32Array;
  /**
   * The log standard deviations: continuous size values (state independent), or, with
   * conditionalSigma, continuous size x count (the head's output, before the clamp)
   */
  readonly logStd: Float32Array;
  /** sum of branch sizes x count: each branch's logits, branch after branch */
  readonly logits: Float32Array;
  /** one array of count values per reward signal, in the order of `rewardSignals` */
  readonly values: readonly Float32Array[];
}

/** The loss's gradient with respect to each HeadOutputs array, same shapes; starts at zero. */
export interface HeadGradients {
  readonly means: Float32Array;
  readonly logStd: Float32Array;
  readonly logits: Float32Array;
  readonly values: readonly Float32Array[];
}

/** One network: its body, and its head (the action model's outputs and/or value heads as parts). */
interface Network {
  readonly body: NetworkBody;
  readonly head: Dense;
  /** Row of the head output where the value heads start; -1 when this network has none. */
  readonly valueRow: number;
  /** Its blocks' stretch of the parameter vector: [start, end). */
  readonly start: number;
  readonly end: number;
}

/**
 * Up to this many multiply-adds, a forward pass for acting runs in JavaScript rather than tfjs.
 * Measured on wasm (2-core VM): a tfjs pass costs 80 to 140 us whatever its size up to ~100k
 * multiply-adds; JavaScript costs about 1 to 1.5 ns per multiply-add (1D case: 26 us an action
 * instead of 178).
 */
const JAVASCRIPT_PASS_LIMIT = 50_000;

export class ActorCritic {
  /** All weights and biases, in `blocks` order. The optimizer updates it in place. */
  readonly parameters: Float32Array;
  readonly blocks: readonly ParameterBlock[];
  readonly normalizer: RunningNormalizer | null;
  /** The width of the bodies' input: the vector observations, then one encoding per image, in observation order. */
  readonly inputSize: number;
  /** Values in the vector observations side by side: what the normalizer sees. */
  readonly vectorSize: number;
  readonly hiddenUnits: number;
  readonly rewardSignals: readonly string[];
  readonly actionSpec: ActionSpec;
  readonly deterministic: boolean;
  /** The log standard deviations are a head of the actor (options.conditionalSigma, with continuous actions). */
  readonly conditionalSigma: boolean;

  /** Where each observation, vector or encoded image, goes in the bodies' input. */
  private readonly layout: BodyInputLayout;
  /** The behavior the model was built for. */
  readonly behaviorSpec: BehaviorSpec;
  /** The actor, then the critic unless it shares the actor's body. */
  private readonly networks: readonly Network[];
  private readonly logStdBlock: ParameterBlock | null;
  /** The actor head's parts and how its outputs become actions. */
  private readonly actionModel: ActionModel;
  private readonly random: SeededRandom;
  private readonly gradient: Float32Array;
  private version = 0;
  /** During an update on WebGPU: the parameters on the GPU (device-parameters.ts), which the training passes read. */
  private deviceParameters: tf.Tensor1D | null = null;
  private inputRows = new Float32Array(0);
  private inputColumns = new Float32Array(0);

  constructor(spec: BehaviorSpec, readonly options: ActorCriticOptions) {
    checkSupported(spec, options);
    const hidden = options.network.hidden_units;
    this.actionSpec = spec.actionSpec;
    this.rewardSignals = options.actorOnly ? [] : [...options.rewardSignals];
    this.hiddenUnits = hidden;
    this.deterministic = options.network.deterministic;
    this.behaviorSpec = spec;
    this.layout = new BodyInputLayout(spec, hidden);
    this.inputSize = this.layout.width;
    this.vectorSize = this.layout.vectorWidth;
    this.normalizer = options.network.normalize ? new RunningNormalizer(this.vectorSize) : null;
    this.random = new SeededRandom(options.seed);

    const continuous = spec.actionSpec.continuousSize;
    this.actionModel = new ActionModel(spec.actionSpec, {
      conditionalSigma: options.conditionalSigma === true,
      tanhSquash: options.tanhSquash === true,
      deterministic: this.deterministic,
    });
    this.conditionalSigma = this.actionModel.conditionalSigma;

    const { allocate, blocks, size: allocated } = sequentialAllocator();
    const addNetwork = (name: string, headParts: readonly DenseOutputPart[]): Network => {
      const start = allocated();
      const body = new NetworkBody(allocate, name, this.layout, options.network);
      const head = new Dense(allocate, body.outputSize, headParts.map((part) => ({ ...part, name: `${name}.${part.name}` })));
      const valuePart = head.parts.find((part) => part.name.startsWith(`${name}.value_heads.`));
      return { body, head, valueRow: valuePart?.row ?? -1, start, end: allocated() };
    };
    // The action model's heads, and the value heads drawn XavierGlorotUniform with gain 1.
    const actorParts = this.actionModel.heads;
    const valueParts = this.rewardSignals.map((name): DenseOutputPart => ({ name: `value_heads.${name}`, size: 1, init: { kind: 'xavierUniform', gain: 1 } }));
    if (options.actorOnly) {
      this.networks = [addNetwork('actor', actorParts)];
    } else if (options.sharedCritic) {
      this.networks = [addNetwork('actor', [...actorParts, ...valueParts])];
    } else {
      this.networks = [addNetwork('actor', actorParts), addNetwork('critic', valueParts)];
    }
    this.logStdBlock = continuous > 0 && !this.conditionalSigma ? allocate('actor.log_sigma', [continuous]) : null;
    this.blocks = blocks;
    this.parameters = new Float32Array(allocated());
    this.gradient = new Float32Array(allocated());
    // The dense layers draw first, network after network, then the visual encoders; biases and
    // log_sigma start at 0.
    for (const { body, head } of this.networks) {
      body.bodyEncoder.initialize(this.parameters, this.random);
      body.memory?.initialize(this.parameters, this.random);
      head.initialize(this.parameters, this.random);
    }
    for (const { body } of this.networks) body.initializeEncoders(this.parameters, this.random);
  }

  /** The parameters and gradient, as the layers read and write them. */
  private get parameterSource(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version, device: this.deviceParameters };
  }

  /** The actor's network body: what the exported policy runs. */
  get actorBody(): NetworkBody {
    return this.networks[0].body;
  }

  /** The actor's head: its parts are actor.mu, actor.log_sigma (conditional sigma), actor.branches.<b> and, shared, the value heads. */
  get actorHead(): Dense {
    return this.networks[0].head;
  }

  /** Values in each agent's memories (network_settings.memory.memory_size); 0 without memory. */
  get memorySize(): number {
    return this.networks[0].body.memorySize;
  }

  /** How many observations are images (each encoded by a visual encoder per body). */
  get visualObservationCount(): number {
    return this.layout.visualObservations.length;
  }

  /** Tells the model that `parameters` changed, so that the next pass uploads them again. */
  parametersChanged(): void {
    this.version++;
  }

  /** Training passes take their weights from `parameters` on the GPU (null: from `this.parameters` again); see device-parameters.ts. */
  useDeviceParameters(parameters: tf.Tensor1D | null): void {
    this.deviceParameters = parameters;
    this.version++;
  }

  /** Adds observations to the running normalization (upstream's update_normalization). */
  updateNormalization(observations: readonly Float32Array[], count: number): void {
    if (this.normalizer === null || count === 0) return;
    this.normalizer.update(this.concatenate(observations, count), count);
  }

  /**
   * Decides actions for `count` agents in one forward pass. `allowedActions` (count x sum of
   * branch sizes, 1 where the action is available; see allowedActions()) masks discrete actions.
   * Value estimates come only with `{ values: true }`: as upstream, training estimates values
   * over whole trajectories (values()), and a separate critic would double the cost of acting.
   * With memory, each agent decides from its `memories` (count x memorySize; zeros when not
   * given, as an agent's first decision) and the output holds its memories after.
   */
  act(
    observations: readonly Float32Array[],
    count: number,
    allowedActions?: ArrayLike<number> | null,
    options: { readonly values?: boolean; readonly memories?: Float32Array } = {},
  ): ActOutput {
    if (options.values && this.memorySize > 0) {
      throw new Error('With memory, the critic needs its own memories: estimate values with criticValuesInSequences().');
    }
    const networks = options.values ? this.networks : [this.networks[0]];
    const { outputs, memories } = this.infer(observations, count, networks, options.memories === undefined ? [] : [options.memories]);
    const width = this.networks[0].head.outputs;
    return {
      ...this.actionModel.sample(outputs[0], width, count, this.logStd(), allowedActions, this.random),
      ...(options.values ? { values: this.valuesOf(outputs[outputs.length - 1], count) } : {}),
      ...(memories[0] === null ? {} : { memories: memories[0] }),
    };
  }

  /**
   * What the networks take in for `count` agents: the observations side by side, normalized when
   * configured (row-major, count x inputSize; a new array). Other networks that share this
   * model's normalization (SAC's Q networks) read their inputs from here.
   */
  networkInputs(observations: readonly Float32Array[], count: number): Float32Array {
    return this.normalizedInputs(observations, count).slice();
  }

  /**
   * Value estimates of each reward signal (upstream's critic_pass); runs the critic only. With
   * memory, each of the `count` agents takes one step from its `memories` (zeros when not given).
   */
  values(observations: readonly Float32Array[], count: number, memories?: Float32Array): Record<string, Float32Array> {
    const critic = this.networks[this.networks.length - 1];
    return this.valuesOf(this.infer(observations, count, [critic], memories === undefined ? [] : [memories]).outputs[0], count);
  }

  /**
   * values() without memory as a reading pass (tensor-io.ts), for SAC's target in an update on
   * WebGPU: in plain loops when the batch is small, as acting does, else the head read back
   * once. Run it scoped().
   */
  *valuesPass(observations: readonly Float32Array[], count: number): ReadingPass<Record<string, Float32Array>> {
    const { body, head } = this.networks[this.networks.length - 1];
    if (body.memory !== null) throw new Error('With memory, the critic runs over sequences: estimate values with criticSequences().');
    const source = this.parameterSource;
    const rows = yield* body.encodeObservations(observations, this.normalizedInputs(observations, count), count, source, false);
    const p = this.parameters;
    if (count * (body.bodyEncoder.multiplyAdds + head.multiplyAdds) <= JAVASCRIPT_PASS_LIMIT) {
      return this.valuesOf(head.forwardInJavaScript(body.bodyEncoder.forwardInJavaScript(rows, count, p, false), count, p, false), count);
    }
    const encoding = body.bodyEncoder.forward(tf.tensor2d(rows, [count, this.inputSize]), source, false);
    return this.valuesOf(yield head.forward(encoding, source, false), count);
  }

  /**
   * The critic over one agent's `steps` consecutive steps with memory, as upstream's
   * _evaluate_by_sequence: from `initialMemories`, sequence after sequence of `sequenceLength`
   * steps (the last one shorter), each starting from the memories the one before ended with.
   */
  criticValuesInSequences(observations: readonly Float32Array[], steps: number, initialMemories: Float32Array, sequenceLength: number): SequenceValues {
    const size = this.memorySize;
    const values = this.rewardSignals.map(() => new Float32Array(steps));
    const stepMemories = new Float32Array(steps * size);
    let memories = initialMemories;
    for (let start = 0; start < steps; start += sequenceLength) {
      const length = Math.min(sequenceLength, steps - start);
      const part = observations.map((obs) => obs.subarray((obs.length / steps) * start, (obs.length / steps) * (start + length)));
      for (let t = 0; t < length; t++) stepMemories.set(memories, (start + t) * size);
      const pass = this.criticSequences(part, length, memories, length);
      memories = pass.memories;
      this.rewardSignals.forEach((name, s) => values[s].set(pass.values[name], start));
    }
    return {
      values: Object.fromEntries(this.rewardSignals.map((name, s) => [name, values[s]])),
      stepMemories,
      finalMemories: memories,
    };
  }

  /**
   * The critic with memory over `count` rows of whole sequences of `sequenceLength` steps,
   * sequence after sequence, each from its row of `memories` (sequences x memorySize); nothing is
   * kept for a backward pass (SAC's target network, and its next-value memories). Returns the
   * values and each sequence's memories after its last step.
   */
  criticSequences(
    observations: readonly Float32Array[],
    count: number,
    memories: Float32Array,
    sequenceLength: number,
  ): { values: Record<string, Float32Array>; memories: Float32Array } {
    return runPass(scoped(this.criticSequencesPass(observations, count, memories, sequenceLength)));
  }

  /**
   * criticSequences() as a reading pass (tensor-io.ts), for SAC's update with memory on WebGPU:
   * the body encoder's output and the LSTM's input projection are read back, for the recurrence
   * and the head in JavaScript.
   * Run it scoped().
   */
  *criticSequencesPass(
    observations: readonly Float32Array[],
    count: number,
    memories: Float32Array,
    sequenceLength: number,
  ): ReadingPass<{ values: Record<string, Float32Array>; memories: Float32Array }> {
    const { body, head } = this.networks[this.networks.length - 1];
    if (body.memory === null) throw new Error('criticSequences() runs a critic with memory; this one has none.');
    const source = this.parameterSource;
    const rows = yield* body.encodeObservations(observations, this.normalizedInputs(observations, count), count, source, false);
    const encoding: Float32Array = yield body.bodyEncoder.forward(tf.tensor2d(rows, [count, this.inputSize]), source, false);
    const recurred = yield* body.memory.forwardPass(encoding, memories, count / sequenceLength, sequenceLength, source, false);
    return { values: this.valuesOf(head.forwardInJavaScript(recurred.output, count, this.parameters, false), count), memories: recurred.memories };
  }

  /**
   * One forward and backward pass over a training batch: runs the networks, lets `loss` read the
   * head outputs and add the loss's gradient with respect to them, and returns what `loss`
   * returned with the gradient with respect to `parameters` (same layout; the array is reused by
   * the next call). With `actorOnly`, a separate critic is left out (its values come empty, its
   * gradient is 0): behavioral cloning's loss reads the actor alone.
   */
  computeGradient<T>(
    observations: readonly Float32Array[],
    count: number,
    loss: (outputs: HeadOutputs, gradients: HeadGradients) => T,
    sequences?: SequenceMemories,
    actorOnly = false,
  ): { gradient: Float32Array; loss: T } {
    return runPass(scoped(this.gradientPass(observations, count, (outputs, gradients) => passReadingNothing(() => loss(outputs, gradients)), sequences, actorOnly)));
  }

  /**
   * computeGradient() as a reading pass (tensor-io.ts), for the backends that read asynchronously;
   * run it scoped(). The loss is a reading pass too: SAC's runs the Q networks mid-pass. With the
   * parameters on the GPU (useDeviceParameters), the returned array holds only the blocks written
   * in JavaScript: the others wait on the GPU for DeviceParameters.step.
   */
  *gradientPass<T>(
    observations: readonly Float32Array[],
    count: number,
    loss: (outputs: HeadOutputs, gradients: HeadGradients) => ReadingPass<T>,
    sequences?: SequenceMemories,
    actorOnly = false,
  ): ReadingPass<{ gradient: Float32Array; loss: T }> {
    if (this.memorySize > 0 && sequences === undefined) {
      throw new Error('A model with memory trains on whole sequences: computeGradient() needs their memories.');
    }
    const gradient = this.gradient;
    const networks = actorOnly ? this.networks.slice(0, 1) : this.networks;
    const source = this.parameterSource;
    // The backward passes overwrite their own blocks only: the critic's would keep the last call's.
    if (networks.length < this.networks.length) {
      gradient.fill(0);
      // With the parameters on the GPU, its zeros are made there rather than sent up with the blocks written in JavaScript.
      if (source.device) for (const { start, end } of this.networks.slice(networks.length)) writeGradient(tf.fill([end - start], 0), gradient, start);
    }
    const vectorRows = this.normalizedInputs(observations, count);
    const rows: Float32Array[] = [];
    for (const { body } of networks) rows.push(yield* body.encodeObservations(observations, vectorRows, count, source, true));
    // Networks without encoders share one input: transposed and uploaded once.
    const rowTensors = new Map<Float32Array, tf.Tensor2D>();
    const columnTensors = new Map<Float32Array, tf.Tensor2D>();
    let outputs: Float32Array[] = [];
    const outputTensors: tf.Tensor2D[] = [];
    for (const [g, { body, head }] of networks.entries()) {
      let columns = columnTensors.get(rows[g]);
      if (columns === undefined) {
        const scratch = rows[g] === vectorRows ? this.inputColumns : new Float32Array(count * this.inputSize);
        transposeInto(rows[g], count, this.inputSize, scratch);
        columns = tf.tensor2d(scratch.subarray(0, this.inputSize * count), [this.inputSize, count]);
        columnTensors.set(rows[g], columns);
        rowTensors.set(rows[g], tf.tensor2d(rows[g], [count, this.inputSize]));
      }
      const encoding = body.bodyEncoder.forwardColumns(columns, source, true);
      const recurred = sequences === undefined ? encoding : yield* body.forwardMemoryColumns(encoding, g === 0 ? sequences.actor : sequences.critic, sequences.length, source, true);
      if (source.device) outputTensors.push(head.outputColumnsOnDevice(recurred, source, true));
      else outputs.push(yield* head.forwardOutputColumns(recurred, source, true));
    }
    let logStd = this.logStd();
    if (source.device) {
      // With the parameters on the GPU, what the loss reads comes down in one read: the heads and log_sigma.
      const logStdTensor = this.logStdBlock === null ? [] : [deviceBlock(source.device, this.logStdBlock)];
      const values = yield* readTogether([...outputTensors, ...logStdTensor]);
      outputs = values.slice(0, outputTensors.length);
      if (this.logStdBlock !== null) logStd = values[outputTensors.length];
    }

    const outputGradients = networks.map(({ head }) => new Float32Array(head.outputs * count));
    const logStdGradient = new Float32Array(this.actionSpec.continuousSize);
    const value = yield* loss(this.headView(outputs, logStd, count), this.headView(outputGradients, logStdGradient, count));

    for (const [g, { body, head }] of networks.entries()) {
      const encodingGradient = yield* body.backwardMemoryColumns(head.backwardOutputColumns(outputGradients[g], source, true)!, source);
      // Below the first layer, only the visual encoders and the attention need the gradient.
      const needInput = body.hasEncoders;
      const inputGradient = body.bodyEncoder.backwardColumns(encodingGradient, source, needInput, rowTensors.get(rows[g]));
      if (inputGradient !== null) body.backwardEncoders(inputGradient, 'columns', source);
    }
    if (this.logStdBlock !== null) gradient.set(logStdGradient, this.logStdBlock.offset);
    // With the parameters on the GPU, the gradient blocks stay there for Adam (DeviceParameters.step).
    if (this.deviceParameters === null) yield* gradientsSettled();
    return { gradient, loss: value };
  }

  /** What a checkpoint records to recognize weights of this architecture. */
  describe(): ModelDescription {
    return {
      inputSize: this.inputSize,
      hiddenUnits: this.hiddenUnits,
      numLayers: this.options.network.num_layers,
      sharedCritic: this.options.sharedCritic,
      normalize: this.normalizer !== null,
      continuousSize: this.actionSpec.continuousSize,
      discreteBranches: [...this.actionSpec.discreteBranches],
      rewardSignals: [...this.rewardSignals],
      blocks: this.blocks.map(({ name, shape }) => ({ name, shape: [...shape] })),
      ...(this.layout.visualObservations.length === 0
        ? {}
        : {
            visualObservations: this.layout.visualObservations.map((k) => ({
              observation: k,
              shape: [...this.behaviorSpec.observationSpecs[k].shape],
              encoder: this.options.network.vis_encode_type,
              flatten: 'channel first' as const,
            })),
          }),
      ...(this.layout.entityObservations.length === 0
        ? {}
        : { variableLengthObservations: this.layout.entityObservations.map((e) => ({ ...e, encoder: 'attention' as const })) }),
      ...(this.actorBody.goalConditioned ? { goalConditioning: { type: 'hyper' as const, goalObservations: [...this.layout.goalObservations] } } : {}),
      ...(this.options.actorOnly ? { actorOnly: true as const } : {}),
    };
  }

  /** Weights and normalization statistics, for a checkpoint. */
  stateArrays(): Map<string, CheckpointArray> {
    return new Map<string, CheckpointArray>([['parameters', this.parameters], ...(this.normalizer?.stateArrays() ?? [])]);
  }

  /** Restores stateArrays(); refuses, naming the difference, arrays of another architecture. */
  loadStateArrays(description: ModelDescription, arrays: ReadonlyMap<string, CheckpointArray>): void {
    const ours = JSON.stringify(this.describe());
    if (JSON.stringify(description) !== ours) {
      throw new Error(
        `The checkpoint holds a different network: ${describeDifference(description, this.describe())}. ` +
          'Its weights cannot be loaded into this one.',
      );
    }
    this.parameters.set(requireCheckpointArray(arrays, 'parameters', this.parameters.length));
    this.normalizer?.loadStateArrays(arrays);
    this.parametersChanged();
  }

  /** The parameter block of this name (as listed in `blocks`). */
  block(name: string): ParameterBlock {
    const found = this.blocks.find((b) => b.name === name);
    if (found === undefined) throw new Error(`This model has no parameter block named ${name}.`);
    return found;
  }

  /** Frees the tensors kept between passes. */
  dispose(): void {
    for (const { body, head } of this.networks) {
      body.dispose();
      head.dispose();
    }
  }

  private logStd(): Float32Array {
    const block = this.logStdBlock;
    return block === null ? new Float32Array(0) : this.parameters.subarray(block.offset, block.offset + block.shape[0]);
  }

  /**
   * Head outputs of the given networks for acting, batch first (count x head outputs): in
   * JavaScript for small batches, else with tfjs. A network with memory takes one step from its
   * entry of `memories` (count x memorySize; zeros when missing) and gives its memories after;
   * null for a network without.
   */
  private infer(
    observations: readonly Float32Array[],
    count: number,
    networks: readonly Network[],
    memories: readonly Float32Array[] = [],
  ): { outputs: Float32Array[]; memories: Array<Float32Array | null> } {
    const memoriesAfter: Array<Float32Array | null> = networks.map(() => null);
    const recur = (n: number, encoding: Float32Array): Float32Array => {
      const { body } = networks[n];
      if (body.memory === null) return encoding;
      const before = memories[n] ?? new Float32Array(count * body.memorySize);
      if (before.length !== count * body.memorySize) {
        throw new Error(`The memories hold ${before.length} values, not ${count} agents x ${body.memorySize}.`);
      }
      const stepped = body.stepMemory(encoding, before, count, this.parameters);
      memoriesAfter[n] = stepped.memories;
      return stepped.output;
    };
    if (count === 0) {
      this.concatenate(observations, 0); // still checks that the observations fit
      return { outputs: networks.map(() => new Float32Array(0)), memories: networks.map(({ body }) => (body.memory === null ? null : new Float32Array(0))) };
    }
    const source = this.parameterSource;
    const vectorRows = this.normalizedInputs(observations, count);
    // Encoders run on tfjs; a vector-only model skips tidy's fixed cost (acting for a few agents is microseconds).
    const encode = () => networks.map(({ body }) => runPass(body.encodeObservations(observations, vectorRows, count, source, false)));
    const inputs = this.layout.hasEncoders ? tidyValues(encode) : encode();
    const multiplyAdds = networks.reduce((total, { body, head }) => total + body.bodyEncoder.multiplyAdds + head.multiplyAdds, 0) * count;
    const p = this.parameters;
    if (multiplyAdds <= JAVASCRIPT_PASS_LIMIT) {
      const outputs = networks.map(({ body, head }, n) =>
        head.forwardInJavaScript(recur(n, body.bodyEncoder.forwardInJavaScript(inputs[n], count, p, false)), count, p, false),
      );
      return { outputs, memories: memoriesAfter };
    }
    const outputs = tidyValues(() =>
      networks.map(({ body, head }, n) => {
        let encoding = body.bodyEncoder.forward(tf.tensor2d(inputs[n], [count, this.inputSize]), source, false);
        if (body.memory !== null) encoding = tf.tensor2d(recur(n, tensorValues(encoding)), [count, body.outputSize]);
        return tensorValues(head.forward(encoding, source, false));
      }),
    );
    return { outputs, memories: memoriesAfter };
  }

  /** Splits per-network head arrays (feature-major) into the named parts (views, no copies). */
  /** The heads' outputs of the networks that ran (`perNetwork`): without the critic, no values. */
  private headView(perNetwork: Float32Array[], logStd: Float32Array, count: number): HeadOutputs {
    const continuous = this.actionSpec.continuousSize;
    const { logitStart, logitRows } = this.actionModel;
    const actor = perNetwork[0];
    const valueNetwork = this.networks[this.networks.length - 1];
    const valueArray = perNetwork.length === this.networks.length ? perNetwork[perNetwork.length - 1] : null;
    return {
      count,
      means: actor.subarray(0, continuous * count),
      logStd: this.conditionalSigma ? actor.subarray(continuous * count, logitStart * count) : logStd,
      logits: actor.subarray(logitStart * count, (logitStart + logitRows) * count),
      values:
        valueArray === null
          ? []
          : this.rewardSignals.map((_, s) => valueArray.subarray((valueNetwork.valueRow + s) * count, (valueNetwork.valueRow + s + 1) * count)),
    };
  }

  /** The value estimates out of the value body's row-major head output. */
  private valuesOf(valueNetworkOutput: Float32Array, count: number): Record<string, Float32Array> {
    const { head, valueRow } = this.networks[this.networks.length - 1];
    return Object.fromEntries(
      this.rewardSignals.map((name, s) => {
        const values = new Float32Array(count);
        for (let i = 0; i < count; i++) values[i] = valueNetworkOutput[i * head.outputs + valueRow + s];
        return [name, values];
      }),
    );
  }

  /** The vector observations of `count` agents side by side, row-major (count x vectorSize), unnormalized. */
  private concatenate(observations: readonly Float32Array[], count: number): Float32Array {
    const width = this.vectorSize;
    if (this.inputRows.length < count * width) {
      this.inputRows = new Float32Array(count * width);
      this.inputColumns = new Float32Array(count * width);
    }
    return this.layout.vectorRows(observations, count, this.inputRows.subarray(0, count * width));
  }

  /** The vector observations, row-major (count x vectorSize), normalized when configured. */
  private normalizedInputs(observations: readonly Float32Array[], count: number): Float32Array {
    const rows = this.concatenate(observations, count);
    return this.normalizer === null ? rows : this.normalizer.normalizeRows(rows, count);
  }
}

/** Refuses, with the reason and the setting concerned, what these networks do not build yet. */
function checkSupported(spec: BehaviorSpec, options: ActorCriticOptions): void {
  const { network } = options;
  if (!(network.hidden_units >= 1 && network.num_layers >= 1)) {
    throw new UnsupportedModelError(
      `network_settings needs hidden_units >= 1 and num_layers >= 1 (got ${network.hidden_units} and ${network.num_layers}).`,
    );
  }
  if (options.rewardSignals.length === 0 && !options.actorOnly) {
    throw new UnsupportedModelError('The model needs at least one reward signal for its value heads.');
  }
  if (spec.observationSpecs.length === 0) {
    throw new UnsupportedModelError('The behavior has no observations: give its agents at least one sensor.');
  }
  spec.observationSpecs.forEach((obs, i) => {
    const label = observationLabel(spec, i);
    const shape = `[${obs.shape.join(', ')}]`;
    if (obs.shape.length === 2 && !isVariableLength(obs)) {
      const properties = obs.dimensionProperty.map((p) => DimensionProperty[p] ?? p).join(', ');
      throw new UnsupportedModelError(
        `${label} has shape ${shape} with dimension properties [${properties}]: a rank-2 observation is taken only as ` +
          'a variable-length one, described [VARIABLE_SIZE, NONE] (as Unity\'s BufferSensor sends it).',
      );
    }
    if (obs.shape.length !== 1 && obs.shape.length !== 2 && !isVisual(obs.shape)) {
      throw new UnsupportedModelError(`${label} has shape ${shape}, which no encoder takes.`);
    }
  });
  const goals = spec.observationSpecs.map((obs, k) => ({ obs, k })).filter(({ obs }) => obs.observationType === ObservationType.GOAL_SIGNAL);
  const variableGoal = goals.find(({ obs }) => isVariableLength(obs));
  if (network.goal_conditioning_type === 'hyper' && variableGoal !== undefined && goals.some(({ obs }) => !isVariableLength(obs))) {
    // Upstream's hypernetwork reads the goals' encodings, which a variable-length observation does not have.
    throw new UnsupportedModelError(
      `${observationLabel(spec, variableGoal.k)} is a variable-length goal signal beside other goal signals: the ` +
        'hypernetwork cannot condition on it (upstream refuses it too). Set network_settings.goal_conditioning_type: none, ' +
        'or send it as an ordinary observation.',
    );
  }
}

function describeDifference(theirs: ModelDescription, ours: ModelDescription): string {
  if (JSON.stringify(theirs.goalConditioning) !== JSON.stringify(ours.goalConditioning)) {
    const conditioning = (model: ModelDescription) =>
      model.goalConditioning === undefined ? 'no hypernetwork' : `a hypernetwork on observations ${model.goalConditioning.goalObservations.join(', ')}`;
    return (
      `its bodies have ${conditioning(theirs)} and this one ${conditioning(ours)} ` +
      '(network_settings.goal_conditioning_type and the behavior\'s goal signals must be those the checkpoint was trained with)'
    );
  }
  if (JSON.stringify(theirs.variableLengthObservations) !== JSON.stringify(ours.variableLengthObservations)) {
    const attention = (model: ModelDescription) =>
      model.variableLengthObservations?.map((v) => `${v.observation} [${v.maxEntities}, ${v.entitySize}]`).join(', ') ?? 'none';
    return (
      `its variableLengthObservations are ${attention(theirs)} and this behavior's ${attention(ours)} ` +
      '(the entity attention is built for the variable-length observations the checkpoint was trained with)'
    );
  }
  for (const key of Object.keys(ours) as Array<keyof ModelDescription>) {
    const a = JSON.stringify(theirs[key]);
    const b = JSON.stringify(ours[key]);
    if (a !== b) return `${key} is ${a} in the checkpoint and ${b} here (${describeSpec('the checkpoint', theirs)}; ${describeSpec('this behavior', ours)})`;
  }
  return 'its description does not match';
}

function describeSpec(whose: string, model: ModelDescription): string {
  const branches = `[${model.discreteBranches.join(', ')}]`;
  const images = model.visualObservations?.map((v) => `[${v.shape.join(', ')}]`).join(', ');
  const observations = images ? `images ${images} and ${model.inputSize} network inputs` : `${model.inputSize} observation values`;
  return `${whose}: ${observations}, ${model.continuousSize} continuous actions, discrete branches ${branches}`;
}

