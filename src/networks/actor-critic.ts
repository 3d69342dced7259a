/**
 * The PPO policy and value networks, as upstream's torch_entities (networks.py SimpleActor,
 * SharedActorCritic and ValueNetwork; NetworkBody; layers.py LinearEncoder; action_model.py;
 * decoders.py ValueHeads), for vector and visual observations.
 *
 * Each network body encodes each image with a visual encoder of its own (encoders/, chosen by
 * vis_encode_type, `hidden_units` wide), puts the encodings beside the (optionally normalized)
 * vector observations in observation order, then runs an MLP of `num_layers` layers of
 * `hidden_units` with Swish activations. The actor's head gives the
 * Gaussian means (log standard deviations are a separate learned vector) and the logits of each
 * discrete branch; each reward signal has a value head. With shared_critic the value heads sit
 * on the actor's body; otherwise the critic has a body of its own. SAC's actor (options
 * conditionalSigma and tanhSquash) adds a log_sigma head beside the means and squashes its
 * Gaussian samples with tanh; its critic body is SAC's value network V(s).
 *
 * How it runs fast. The parameters live in one Float32Array (Adam updates them in JavaScript);
 * tfjs does the matrix products. The wasm backend (XNNPACK) repacks the right operand of a
 * product whenever that operand is a new tensor, and runs products with transposeA/transposeB 5
 * to 10 times slower. So acting keeps batches row-major with the transposed weights on the right
 * (repacked once per parameter update), while training keeps activations feature-major
 * (features x samples), where every right operand has the short batch as one side and no
 * product needs a transpose flag. The gradient is derived by hand: the loss hands back its
 * gradient with respect to the head outputs, and each layer turns that into weight gradients
 * with two products and four elementwise ops; no autodiff tape is recorded.
 * Actor and critic run as two chains rather than one block-diagonal product: measured on wasm,
 * the doubled arithmetic of a block-diagonal 256 x 256 layer costs more than the ops it saves.
 *
 * tfjs may keep a typed array it is given instead of copying it (the cpu backend does), so an
 * array handed to tfjs during a pass is never rewritten before that pass ends.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import { ActionSpec, ActionTuple, BehaviorSpec, ObservationType } from '../env/behavior-spec';
import { SeededRandom } from '../common/random';
import {
  argmax,
  categoricalEntropy,
  categoricalLogProb,
  clipAction,
  gaussianEntropy,
  gaussianLogProb,
  maskedSoftmax,
  sampleCategorical,
} from './distributions';
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';
import { RunningNormalizer } from './normalizer';
import { clampLogSigma, squashedGaussianLogProb } from './squashed-gaussian';
import { denseForward } from './dense-forward';
import { copyTensorInto, transposeInto } from './tensor-io';
import { UnsupportedModelError } from './unsupported-model';
import type { VisualEncoder } from './encoders/visual-encoder';
import { BodyInputLayout, isVisual } from './encoders/body-input';
import type { GraphWriter, ParameterSource } from './layers/layer';
import { DenseInit, initializeLinearWeights } from './layers/dense';
import { swishBackward } from './layers/activations';

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
}

export { UnsupportedModelError };

/** One named block of the parameter vector. Weights are output x input, row-major, as in torch. */
export interface ParameterBlock {
  readonly name: string;
  readonly offset: number;
  readonly shape: readonly number[];
}

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
}

/** A batch of decisions. Row i of every array belongs to agent i. */
export interface ActOutput {
  /** The actions as sampled: what the buffer stores and the update learns from. */
  readonly action: ActionTuple;
  /** What the environment receives: continuous actions clipped as upstream's clip_action. */
  readonly envAction: ActionTuple;
  /** n x continuous size, and n x branches (the log probability of each branch's choice). */
  readonly logProbs: { readonly continuous: Float32Array; readonly discrete: Float32Array };
  /** The entropy of each agent's action distribution. */
  readonly entropy: Float32Array;
  /** Value estimates of each reward signal, when asked for. */
  readonly values?: Readonly<Record<string, Float32Array>>;
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

interface Layer {
  readonly weight: ParameterBlock;
  readonly bias: ParameterBlock;
  readonly inputs: number;
  /** The weight transposed (inputs x hidden), written whenever the parameters change. */
  readonly transposed: Float32Array;
}

/** One network body (encoders, then an MLP) with its head: the actor's, or the critic's. */
interface Body {
  /** The encoder of each visual observation, in observation order (upstream's processors). */
  readonly encoders: readonly VisualEncoder[];
  readonly layers: readonly Layer[];
  /** The head's weights (headRows x hidden) and biases are each contiguous from these offsets. */
  readonly headWeightOffset: number;
  readonly headBiasOffset: number;
  readonly headRows: number;
  /** Row of the head output where the value heads start; -1 when this body has none. */
  readonly valueRow: number;
  readonly headTransposed: Float32Array;
}

/**
 * A linear layer's parameters as tensors, in the two layouts the passes use: `weight` (out x in)
 * and `biasColumn` (out x 1) for feature-major products W h (training), `transposed` (in x out)
 * and `bias` (out) for row-major ones x W^T (acting, where the wasm backend packs the constant
 * right operand once per parameter version; the backward pass also takes W^T from here).
 */
interface LinearTensors {
  readonly weight: tf.Tensor2D;
  readonly biasColumn: tf.Tensor2D;
  readonly transposed: tf.Tensor2D;
  readonly bias: tf.Tensor1D;
}

interface WeightTensors {
  readonly version: number;
  readonly bodies: ReadonlyArray<{ readonly layers: readonly LinearTensors[]; readonly head: LinearTensors }>;
}
type BodyTensors = WeightTensors['bodies'][number];

/** The activations of one layer, kept for the backward pass. */
interface LayerPass {
  readonly input: tf.Tensor;
  readonly gate: tf.Tensor;
  readonly output: tf.Tensor;
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
  private readonly bodies: Body[];
  private readonly logStdBlock: ParameterBlock | null;
  /** Rows of the actor's head before the logits: the means, then the log_sigma head when conditional. */
  private readonly logitStart: number;
  private readonly branchOffsets: number[];
  private readonly logitRows: number;
  private readonly random: SeededRandom;
  private readonly gradient: Float32Array;
  private weights: WeightTensors | null = null;
  private version = 0;
  private inputRows = new Float32Array(0);
  private inputColumns = new Float32Array(0);

  constructor(spec: BehaviorSpec, readonly options: ActorCriticOptions) {
    checkSupported(spec, options);
    const { hidden_units: hidden, num_layers: numLayers } = options.network;
    this.actionSpec = spec.actionSpec;
    this.rewardSignals = [...options.rewardSignals];
    this.hiddenUnits = hidden;
    this.deterministic = options.network.deterministic;
    this.behaviorSpec = spec;
    this.layout = new BodyInputLayout(spec, hidden);
    this.inputSize = this.layout.width;
    this.vectorSize = this.layout.vectorWidth;
    this.normalizer = options.network.normalize ? new RunningNormalizer(this.vectorSize) : null;
    this.random = new SeededRandom(options.seed);

    const continuous = spec.actionSpec.continuousSize;
    const branches = spec.actionSpec.discreteBranches;
    this.branchOffsets = [];
    let logitRows = 0;
    for (const size of branches) {
      this.branchOffsets.push(logitRows);
      logitRows += size;
    }
    this.logitRows = logitRows;

    // Lay the blocks out so that each head's weights (and biases) are one contiguous matrix.
    const blocks: ParameterBlock[] = [];
    let size = 0;
    const add = (name: string, shape: number[]): ParameterBlock => {
      const block = { name, offset: size, shape };
      blocks.push(block);
      size += shape.reduce((a, b) => a * b, 1);
      return block;
    };
    const addBody = (prefix: string, headParts: Array<[string, number]>): Body => {
      const encoders = this.layout.createEncoders((name, shape) => add(name, [...shape]), `${prefix}.encoders`, options.network.vis_encode_type);
      const layers: Layer[] = [];
      for (let l = 0; l < numLayers; l++) {
        const inputs = l === 0 ? this.inputSize : hidden;
        const weight = add(`${prefix}.layers.${l}.weight`, [hidden, inputs]);
        const bias = add(`${prefix}.layers.${l}.bias`, [hidden]);
        layers.push({ weight, bias, inputs, transposed: new Float32Array(inputs * hidden) });
      }
      const headRows = headParts.reduce((total, [, rows]) => total + rows, 0);
      const weightStart = size;
      for (const [name, rows] of headParts) add(`${prefix}.${name}.weight`, [rows, hidden]);
      const biasStart = size;
      for (const [name, rows] of headParts) add(`${prefix}.${name}.bias`, [rows]);
      const valueName = headParts.findIndex(([name]) => name.startsWith('value_heads.'));
      return {
        encoders,
        layers,
        headWeightOffset: weightStart,
        headBiasOffset: biasStart,
        headRows,
        valueRow: valueName < 0 ? -1 : headParts.slice(0, valueName).reduce((t, [, rows]) => t + rows, 0),
        headTransposed: new Float32Array(hidden * headRows),
      };
    };
    const conditionalSigma = continuous > 0 && options.conditionalSigma === true;
    this.conditionalSigma = conditionalSigma;
    const actorParts: Array<[string, number]> = [];
    if (continuous > 0) actorParts.push(['mu', continuous]);
    if (conditionalSigma) actorParts.push(['log_sigma', continuous]);
    this.logitStart = conditionalSigma ? 2 * continuous : continuous;
    branches.forEach((branchSize, b) => actorParts.push([`branches.${b}`, branchSize]));
    const valueParts = this.rewardSignals.map((name): [string, number] => [`value_heads.${name}`, 1]);
    if (options.sharedCritic) {
      this.bodies = [addBody('actor', [...actorParts, ...valueParts])];
    } else {
      this.bodies = [addBody('actor', actorParts), addBody('critic', valueParts)];
    }
    this.logStdBlock = continuous > 0 && !conditionalSigma ? add('actor.log_sigma', [continuous]) : null;
    this.blocks = blocks;
    this.parameters = new Float32Array(size);
    this.gradient = new Float32Array(size);
    this.initialize();
  }

  /**
   * Initial weights as upstream's linear_layer calls give them; biases and log_sigma start at 0.
   * The visual encoders draw their own, after the bodies' and heads'.
   */
  private initialize(): void {
    for (const block of this.blocks) {
      if (!block.name.endsWith('.weight') || block.name.includes('.encoders.')) continue;
      const [outputs, inputs] = block.shape;
      const weights = this.parameters.subarray(block.offset, block.offset + outputs * inputs);
      // ValueHeads: XavierGlorotUniform with gain 1. Elsewhere KaimingHeNormal, with gain 1 in
      // the bodies (LinearEncoder), 0.2 for the Gaussian means and log_sigma head, 0.1 for the
      // branch logits.
      const gaussianHead = block.name === 'actor.mu.weight' || block.name === 'actor.log_sigma.weight';
      const init: DenseInit = block.name.includes('.value_heads.')
        ? { kind: 'xavierUniform', gain: 1 }
        : { kind: 'kaimingNormal', gain: gaussianHead ? 0.2 : block.name.startsWith('actor.branches.') ? 0.1 : 1 };
      initializeLinearWeights(weights, inputs, outputs, init, this.random);
    }
    for (const body of this.bodies) {
      for (const encoder of body.encoders) encoder.initialize(this.parameters, this.random);
    }
  }

  /** The parameters and gradient, as the layers of the encoders read and write them. */
  private get parameterSource(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version };
  }

  /** An image observation's exported input shape (channels, height, width); null for other observations. */
  imageInput(observation: number): [number, number, number] | null {
    const e = this.layout.visualObservations.indexOf(observation);
    if (e < 0) return null;
    const { channels, height, width } = this.bodies[0].encoders[e].layout;
    return [channels, height, width];
  }

  /** Writes the actor's encoder of an image observation into an exported graph; returns the encoding's name. */
  exportVisualEncoder(graph: GraphWriter, observation: number, input: string): string {
    const e = this.layout.visualObservations.indexOf(observation);
    if (e < 0) throw new Error(`Observation ${observation} is not an image.`);
    return this.bodies[0].encoders[e].exportOnnx(graph, input, this.parameters);
  }

  /** How many observations are images (each encoded by a visual encoder per body). */
  get visualObservationCount(): number {
    return this.layout.visualObservations.length;
  }

  /** Tells the model that `parameters` changed, so that the next pass uploads them again. */
  parametersChanged(): void {
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
   */
  act(
    observations: readonly Float32Array[],
    count: number,
    allowedActions?: ArrayLike<number> | null,
    options: { readonly values?: boolean } = {},
  ): ActOutput {
    const outputs = this.infer(observations, count, options.values ? this.bodies : [this.bodies[0]]);
    const actor = outputs[0];
    const width = this.bodies[0].headRows;
    const spec = this.actionSpec;
    const continuous = spec.continuousSize;
    const branches = spec.discreteBranches;
    const maskWidth = this.logitRows;
    if (allowedActions && allowedActions.length !== count * maskWidth) {
      throw new Error(`act() got an action mask of ${allowedActions.length} values for ${count} agents x ${maskWidth} actions.`);
    }
    const action = spec.emptyAction(count);
    const envContinuous = new Float32Array(count * continuous);
    const continuousLogProbs = new Float32Array(count * continuous);
    const discreteLogProbs = new Float32Array(count * branches.length);
    const entropy = new Float32Array(count);
    const conditionalSigma = this.conditionalSigma;
    const tanhSquash = this.options.tanhSquash === true;
    const sharedLogStd = this.logStd();

    const probs = new Float64Array(Math.max(1, ...branches));
    const allowed = new Float64Array(probs.length);
    for (let i = 0; i < count; i++) {
      const row = i * width;
      let continuousEntropy = 0;
      for (let j = 0; j < continuous; j++) {
        const mean = actor[row + j];
        const logStd = conditionalSigma ? clampLogSigma(actor[row + continuous + j]) : sharedLogStd[j];
        const k = i * continuous + j;
        continuousEntropy += gaussianEntropy(logStd) / continuous;
        const sample = this.deterministic ? mean : mean + Math.exp(logStd) * this.random.gaussian();
        if (tanhSquash) {
          action.continuous[k] = Math.tanh(sample);
          envContinuous[k] = action.continuous[k];
          continuousLogProbs[k] = squashedGaussianLogProb(sample, mean, logStd);
        } else {
          action.continuous[k] = sample;
          // From the stored float32 value, as upstream clips the action tensor.
          envContinuous[k] = clipAction(action.continuous[k]);
          continuousLogProbs[k] = gaussianLogProb(action.continuous[k], mean, logStd);
        }
      }
      let agentEntropy = continuousEntropy;
      for (let b = 0; b < branches.length; b++) {
        const size = branches[b];
        const first = this.logitStart + this.branchOffsets[b];
        for (let k = 0; k < size; k++) allowed[k] = allowedActions ? allowedActions[i * maskWidth + this.branchOffsets[b] + k] : 1;
        maskedSoftmax(actor.subarray(row + first, row + first + size), allowed, size, probs);
        const choice = this.deterministic ? argmax(probs, size) : sampleCategorical(probs, size, this.random.next());
        action.discrete[i * branches.length + b] = choice;
        discreteLogProbs[i * branches.length + b] = categoricalLogProb(probs, choice);
        agentEntropy += categoricalEntropy(probs, size);
      }
      entropy[i] = agentEntropy;
    }
    return {
      action,
      envAction: { continuous: envContinuous, discrete: action.discrete },
      logProbs: { continuous: continuousLogProbs, discrete: discreteLogProbs },
      entropy,
      ...(options.values ? { values: this.valuesOf(outputs[outputs.length - 1], count) } : {}),
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

  /** Value estimates of each reward signal (upstream's critic_pass); runs the critic only. */
  values(observations: readonly Float32Array[], count: number): Record<string, Float32Array> {
    const critic = this.bodies[this.bodies.length - 1];
    return this.valuesOf(this.infer(observations, count, [critic])[0], count);
  }

  /**
   * One forward and backward pass over a training batch: runs the networks, lets `loss` read the
   * head outputs and add the loss's gradient with respect to them, and returns what `loss`
   * returned with the gradient with respect to `parameters` (same layout; the array is reused by
   * the next call).
   */
  computeGradient<T>(
    observations: readonly Float32Array[],
    count: number,
    loss: (outputs: HeadOutputs, gradients: HeadGradients) => T,
  ): { gradient: Float32Array; loss: T } {
    const gradient = this.gradient;
    let value!: T;
    tf.tidy(() => {
      const vectorRows = this.normalizedInputs(observations, count);
      const weights = this.weightTensors();
      const rows = this.bodies.map((body) => this.bodyInputs(body, observations, count, vectorRows, true));
      // Bodies without encoders share one input: transposed and uploaded once.
      const rowTensors = new Map<Float32Array, tf.Tensor2D>();
      const columnTensors = new Map<Float32Array, tf.Tensor2D>();
      const passes = weights.bodies.map((bodyWeights, g) => {
        let columns = columnTensors.get(rows[g]);
        if (columns === undefined) {
          const scratch = rows[g] === vectorRows ? this.inputColumns : new Float32Array(count * this.inputSize);
          transposeInto(rows[g], count, this.inputSize, scratch);
          columns = tf.tensor2d(scratch.subarray(0, this.inputSize * count), [this.inputSize, count]);
          columnTensors.set(rows[g], columns);
          rowTensors.set(rows[g], tf.tensor2d(rows[g], [count, this.inputSize]));
        }
        return this.forwardBody(bodyWeights, columns);
      });
      const outputs = passes.map((pass, g) => this.readHead(this.bodies[g], pass.output, count));

      const outputGradients = this.bodies.map((body) => new Float32Array(body.headRows * count));
      const logStdGradient = new Float32Array(this.actionSpec.continuousSize);
      value = loss(this.headView(outputs, this.logStd(), count), this.headView(outputGradients, logStdGradient, count));

      this.bodies.forEach((body, g) => {
        const inputRows = rowTensors.get(rows[g])!;
        const inputGradient = this.backwardBody(body, weights.bodies[g], passes[g].layers, outputGradients[g], inputRows, count);
        if (inputGradient !== null) this.backwardEncoders(body, inputGradient);
      });
      if (this.logStdBlock !== null) gradient.set(logStdGradient, this.logStdBlock.offset);
    });
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
    };
  }

  /** Weights and normalization statistics, for a checkpoint. */
  stateArrays(): Map<string, CheckpointArray> {
    const arrays = new Map<string, CheckpointArray>([['parameters', this.parameters]]);
    if (this.normalizer !== null) {
      arrays.set('normalizer.mean', this.normalizer.mean);
      arrays.set('normalizer.variance', this.normalizer.variance);
      arrays.set('normalizer.steps', new Float64Array([this.normalizer.steps]));
    }
    return arrays;
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
    if (this.normalizer !== null) {
      this.normalizer.mean.set(requireCheckpointArray(arrays, 'normalizer.mean', this.vectorSize));
      this.normalizer.variance.set(requireCheckpointArray(arrays, 'normalizer.variance', this.vectorSize));
      this.normalizer.steps = requireCheckpointArray(arrays, 'normalizer.steps', 1)[0];
    }
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
    this.weights?.bodies.forEach((body) =>
      [...body.layers, body.head].forEach((t) => tf.dispose([t.weight, t.biasColumn, t.transposed, t.bias])),
    );
    this.weights = null;
  }

  private logStd(): Float32Array {
    const block = this.logStdBlock;
    return block === null ? new Float32Array(0) : this.parameters.subarray(block.offset, block.offset + block.shape[0]);
  }

  /**
   * Head outputs (bias included) of the given bodies for acting: row-major (count x head rows),
   * each layer a product x W^T with the bias fused in, then Swish.
   */
  private infer(observations: readonly Float32Array[], count: number, bodies: readonly Body[]): Float32Array[] {
    if (count === 0) {
      this.concatenate(observations, 0); // still checks that the observations fit
      return bodies.map(() => new Float32Array(0));
    }
    const vectorRows = this.normalizedInputs(observations, count);
    // Encoders run on tfjs; a vector-only model skips tidy's fixed cost (acting for a few agents is microseconds).
    const encode = () => bodies.map((body) => this.bodyInputs(body, observations, count, vectorRows, false));
    const inputs = this.layout.visualObservations.length > 0 ? tf.tidy(encode) : encode();
    const multiplyAdds = bodies.reduce((total, body) => total + this.multiplyAddsPerSample(body), 0) * count;
    if (multiplyAdds <= JAVASCRIPT_PASS_LIMIT) {
      return bodies.map((body, b) => this.inferInJavaScript(body, inputs[b], count));
    }
    return tf.tidy(() => {
      const weights = this.weightTensors();
      return bodies.map((body, b) => {
        const { layers, head } = weights.bodies[this.bodies.indexOf(body)];
        let hidden: tf.Tensor2D = tf.tensor2d(inputs[b], [count, this.inputSize]);
        for (const layer of layers) {
          const preActivation = tf.fused.matMul({ a: hidden, b: layer.transposed, bias: layer.bias });
          hidden = tf.mul(preActivation, tf.sigmoid(preActivation));
        }
        const output = new Float32Array(count * body.headRows);
        copyTensorInto(tf.fused.matMul({ a: hidden, b: head.transposed, bias: head.bias }), output);
        return output;
      });
    });
  }

  private multiplyAddsPerSample(body: Body): number {
    const layers = body.layers.reduce((total, layer) => total + layer.inputs * this.hiddenUnits, 0);
    return layers + this.hiddenUnits * body.headRows;
  }

  /** infer() for a small batch: the same pass as the tfjs one, computed in JavaScript. */
  private inferInJavaScript(body: Body, inputs: Float32Array, count: number): Float32Array {
    const p = this.parameters;
    let hidden = inputs;
    for (const layer of body.layers) {
      const output = new Float32Array(count * this.hiddenUnits);
      denseForward(hidden, count, layer.inputs, p, layer.weight.offset, layer.bias.offset, this.hiddenUnits, true, output);
      hidden = output;
    }
    const output = new Float32Array(count * body.headRows);
    denseForward(hidden, count, this.hiddenUnits, p, body.headWeightOffset, body.headBiasOffset, body.headRows, false, output);
    return output;
  }

  /** The training pass's forward: activations feature-major (features x samples). */
  private forwardBody(weights: BodyTensors, inputColumns: tf.Tensor2D): { layers: LayerPass[]; output: tf.Tensor } {
    const layers: LayerPass[] = [];
    let hidden: tf.Tensor = inputColumns;
    for (const { weight, biasColumn } of weights.layers) {
      const preActivation = tf.add(tf.matMul(weight, hidden), biasColumn);
      // Swish: x * sigmoid(x), as upstream's LinearEncoder.
      const gate = tf.sigmoid(preActivation);
      const output = tf.mul(preActivation, gate);
      layers.push({ input: hidden, gate, output });
      hidden = output;
    }
    return { layers, output: tf.matMul(weights.head.weight, hidden) };
  }

  /**
   * Backpropagates the head outputs' gradient through one body, writing the weight and bias
   * gradients into this.gradient. For a layer y = swish(W x + b) with upstream gradient dy:
   * dz = dy * swish'(z), dW = dz x^T, db = row sums of dz, dx = W^T dz.
   */
  private backwardBody(
    body: Body,
    weights: BodyTensors,
    layers: readonly LayerPass[],
    outputGradient: Float32Array,
    inputRows: tf.Tensor2D,
    count: number,
  ): tf.Tensor | null {
    const gradient = this.gradient;
    const hidden = this.hiddenUnits;
    const rows = body.headRows;
    const last = layers[layers.length - 1].output;

    // Head: dW = dOut h^T, computed as its transpose h dOut^T so that no activation is transposed.
    const outputGradientRows = new Float32Array(count * rows);
    transposeInto(outputGradient, rows, count, outputGradientRows);
    const headGradientT = tf.matMul(last, tf.tensor2d(outputGradientRows, [count, rows]));
    const headGradientScratch = new Float32Array(hidden * rows);
    copyTensorInto(headGradientT, headGradientScratch);
    transposeInto(headGradientScratch, hidden, rows, gradient, body.headWeightOffset);
    for (let r = 0; r < rows; r++) {
      let sum = 0;
      for (let i = 0; i < count; i++) sum += outputGradient[r * count + i];
      gradient[body.headBiasOffset + r] = sum;
    }
    let hiddenGradient = tf.matMul(weights.head.transposed, tf.tensor2d(outputGradient, [rows, count]));

    for (let l = layers.length - 1; l >= 0; l--) {
      const layer = body.layers[l];
      const { input, gate, output } = layers[l];
      const preGradient = swishBackward(hiddenGradient, gate, output);
      const inputsAsRows = l === 0 ? inputRows : tf.transpose(input);
      copyTensorInto(tf.matMul(preGradient, inputsAsRows), gradient, layer.weight.offset);
      copyTensorInto(tf.sum(preGradient, 1), gradient, layer.bias.offset);
      // Below the first layer, only the encoders need the gradient (features x samples).
      if (l > 0 || body.encoders.length > 0) hiddenGradient = tf.matMul(weights.layers[l].transposed, preGradient);
    }
    return body.encoders.length > 0 ? hiddenGradient : null;
  }

  /** Hands each encoder the gradient of its columns of the body's input (features x samples). */
  private backwardEncoders(body: Body, inputGradient: tf.Tensor): void {
    const count = inputGradient.shape[1]!;
    body.encoders.forEach((encoder, e) => {
      const rows = tf.slice(inputGradient, [this.layout.encodingColumns[e], 0], [encoder.outputSize, count]);
      encoder.backward(tf.transpose(rows) as tf.Tensor2D, this.parameterSource);
    });
  }

  /** A body's input rows (count x inputSize); see BodyInputLayout.inputRows. */
  private bodyInputs(body: Body, observations: readonly Float32Array[], count: number, vectorRows: Float32Array, keep: boolean): Float32Array {
    return this.layout.inputRows(body.encoders, observations, vectorRows, count, this.parameterSource, keep);
  }

  /** Reads a body's head output (feature-major) and adds its bias (cheaper here than a tensor op). */
  private readHead(body: Body, output: tf.Tensor, count: number): Float32Array {
    const values = new Float32Array(body.headRows * count);
    copyTensorInto(output, values);
    for (let r = 0; r < body.headRows; r++) {
      const bias = this.parameters[body.headBiasOffset + r];
      for (let i = 0; i < count; i++) values[r * count + i] += bias;
    }
    return values;
  }

  /** Splits per-body head arrays (feature-major) into the named parts (views, no copies). */
  private headView(perBody: Float32Array[], logStd: Float32Array, count: number): HeadOutputs {
    const continuous = this.actionSpec.continuousSize;
    const actor = perBody[0];
    const valueBody = this.bodies[this.bodies.length - 1];
    const valueArray = perBody[perBody.length - 1];
    return {
      count,
      means: actor.subarray(0, continuous * count),
      logStd: this.conditionalSigma ? actor.subarray(continuous * count, this.logitStart * count) : logStd,
      logits: actor.subarray(this.logitStart * count, (this.logitStart + this.logitRows) * count),
      values: this.rewardSignals.map((_, s) =>
        valueArray.subarray((valueBody.valueRow + s) * count, (valueBody.valueRow + s + 1) * count),
      ),
    };
  }

  /** The value estimates out of the value body's row-major head output. */
  private valuesOf(valueBodyOutput: Float32Array, count: number): Record<string, Float32Array> {
    const body = this.bodies[this.bodies.length - 1];
    return Object.fromEntries(
      this.rewardSignals.map((name, s) => {
        const values = new Float32Array(count);
        for (let i = 0; i < count; i++) values[i] = valueBodyOutput[i * body.headRows + body.valueRow + s];
        return [name, values];
      }),
    );
  }

  /** The weights as tensors, uploaded again only when the parameters changed. */
  private weightTensors(): WeightTensors {
    if (this.weights !== null && this.weights.version === this.version) return this.weights;
    this.dispose();
    const p = this.parameters;
    const linear = (weightOffset: number, biasOffset: number, outputs: number, inputs: number, transposed: Float32Array) => {
      const weights = p.subarray(weightOffset, weightOffset + outputs * inputs);
      const biases = p.subarray(biasOffset, biasOffset + outputs);
      transposeInto(weights, outputs, inputs, transposed);
      return {
        weight: tf.keep(tf.tensor2d(weights, [outputs, inputs])),
        biasColumn: tf.keep(tf.tensor2d(biases, [outputs, 1])),
        transposed: tf.keep(tf.tensor2d(transposed, [inputs, outputs])),
        bias: tf.keep(tf.tensor1d(biases)),
      };
    };
    this.weights = {
      version: this.version,
      bodies: this.bodies.map((body) => ({
        layers: body.layers.map((layer) =>
          linear(layer.weight.offset, layer.bias.offset, this.hiddenUnits, layer.inputs, layer.transposed),
        ),
        head: linear(body.headWeightOffset, body.headBiasOffset, body.headRows, this.hiddenUnits, body.headTransposed),
      })),
    };
    return this.weights;
  }

  /** The vector observations of `count` agents side by side, row-major (count x vectorSize), unnormalized. */
  private concatenate(observations: readonly Float32Array[], count: number): Float32Array {
    const sizes = this.layout.observationSizes;
    if (observations.length !== sizes.length) {
      throw new Error(`The model takes ${sizes.length} observations per agent but got ${observations.length}.`);
    }
    const width = this.vectorSize;
    if (this.inputRows.length < count * width) {
      this.inputRows = new Float32Array(count * width);
      this.inputColumns = new Float32Array(count * width);
    }
    const rows = this.inputRows.subarray(0, count * width);
    let column = 0;
    observations.forEach((obs, k) => {
      const size = sizes[k];
      if (obs.length !== count * size) {
        throw new Error(`Observation ${k} holds ${obs.length} values, not ${count} agents x ${size}.`);
      }
      if (this.layout.visualObservations.includes(k)) return;
      for (let i = 0; i < count; i++) {
        for (let f = 0; f < size; f++) rows[i * width + column + f] = obs[i * size + f];
      }
      column += size;
    });
    return rows;
  }

  /** The vector observations, row-major (count x vectorSize), normalized when configured. */
  private normalizedInputs(observations: readonly Float32Array[], count: number): Float32Array {
    const rows = this.concatenate(observations, count);
    const width = this.vectorSize;
    const normalizer = this.normalizer;
    if (normalizer !== null) {
      for (let i = 0; i < count; i++) {
        for (let f = 0; f < width; f++) rows[i * width + f] = normalizer.normalize(rows[i * width + f], f);
      }
    }
    return rows;
  }
}

/** Refuses, with the reason and the setting concerned, what these networks do not build yet. */
function checkSupported(spec: BehaviorSpec, options: ActorCriticOptions): void {
  const { network } = options;
  if (network.memory !== null) {
    throw new UnsupportedModelError(
      'network_settings.memory is set, but recurrent networks (LSTM memory) are not built yet: remove the memory section.',
    );
  }
  if (!(network.hidden_units >= 1 && network.num_layers >= 1)) {
    throw new UnsupportedModelError(
      `network_settings needs hidden_units >= 1 and num_layers >= 1 (got ${network.hidden_units} and ${network.num_layers}).`,
    );
  }
  if (options.rewardSignals.length === 0) {
    throw new UnsupportedModelError('The model needs at least one reward signal for its value heads.');
  }
  if (spec.observationSpecs.length === 0) {
    throw new UnsupportedModelError('The behavior has no observations: give its agents at least one sensor.');
  }
  spec.observationSpecs.forEach((obs, i) => {
    const label = obs.name ? `Observation ${i} (${obs.name})` : `Observation ${i}`;
    const shape = `[${obs.shape.join(', ')}]`;
    if (obs.shape.length === 2) {
      throw new UnsupportedModelError(
        `${label} has shape ${shape}: a variable-length observation. Its attention encoder is not built yet; only vector and visual observations are.`,
      );
    }
    if (obs.shape.length !== 1 && !isVisual(obs.shape)) {
      throw new UnsupportedModelError(`${label} has shape ${shape}, which no encoder takes.`);
    }
    if (obs.observationType === ObservationType.GOAL_SIGNAL && network.goal_conditioning_type === 'hyper') {
      throw new UnsupportedModelError(
        `${label} is a goal signal and network_settings.goal_conditioning_type is hyper: hypernetwork goal ` +
          'conditioning is not built yet (goal_conditioning_type: none feeds the goal as an ordinary input).',
      );
    }
  });
}

function describeDifference(theirs: ModelDescription, ours: ModelDescription): string {
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

