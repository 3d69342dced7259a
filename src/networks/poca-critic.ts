/**
 * MA-POCA's centralized critic (upstream's POCAValueNetwork over its MultiAgentNetworkBody,
 * poca/optimizer_torch.py and torch_entities/networks.py), for the M members of an agent's group:
 *
 *   e_j       = member j's observations through the critic's ObservationEncoder
 *               (encoders/observation-encoder.ts: vector ones normalized by the critic's own
 *               normalizer, images through vis_encode_type's encoder, variable-length ones
 *               through their entity attention; goal signals are ordinary inputs here, as
 *               upstream's MultiAgentNetworkBody has no hypernetwork)
 *   g(e)      = EntityEmbedding obs_encoder: one Swish layer, e -> h
 *   f(e, a)   = EntityEmbedding obs_action_encoder: one Swish layer, (e | a) -> h, a the member's
 *               action (continuous values, then each branch one-hot)
 *   value     V(s)      = heads(M(L(RSA(g(e_self), g(e_mate_1), ...))), n)
 *   baseline  Q(s, a-i) = heads(M(L(RSA(g(e_self), f(e_mate_1, a_mate_1), ...))), n)
 *
 * RSA is the residual self-attention over the members present (absent groupmates are masked: no
 * member attends to them and the pooling leaves them out), L upstream's LinearEncoder of
 * num_layers Swish layers drawn KaimingHeNormal with gain sqrt(0.125 / h), and n the members
 * present scaled to [-1, 1] by the most ever seen (2 n / max - 1), a last input of the value
 * heads. M is the identity, or with network_settings.memory upstream's LSTM over sequences of
 * steps (rows sequence after sequence), the value pass and the baseline pass each from memories
 * of their own (upstream's critic and baseline memories). The baseline marginalizes the agent's
 * own action: its own entity is its observation alone.
 *
 * A groupmate is absent where its first observation value is NaN (the trajectories pad absent
 * groupmates' slots so, as upstream's buffers do); its observations count as zeros.
 *
 * Every member is encoded once per pass, the value and baseline passes sharing the encodings, so
 * an encoder's gradient is the sum of what each embedding hands back to its members.
 *
 * Both passes share every layer but the two embeddings, so one training pass runs them as one
 * batch: the B value rows, then the B baseline rows, through the attention, L and the heads; each
 * layer runs forward and backward once, and the shared ones' gradients are the two passes' sum.
 * The backward composes the layers' hand-written ones (dense.ts, entity-embedding.ts,
 * residual-self-attention.ts).
 *
 * The training pass is a reading pass (tensor-io.ts), so that the update thread runs it on WebGPU:
 * it reads the heads' output for the loss, and with memory what the LSTM's recurrence, in
 * JavaScript, needs: the linear encoder's output and the LSTM's input projection (with W_hh),
 * its output gradient, then its input gradient. Every layer, the LSTM and the attention
 * included, takes its weights from the ParameterSource, so that they stay on the GPU for a whole
 * update (device-parameters.ts).
 *
 * Blocks `critic.observation_encoder...` (images, attention), `critic.obs_encoder...`,
 * `critic.obs_action_encoder...`, `critic.self_attn.fc_*`, `critic.linear_encoder.<l>...`,
 * `critic.lstm...` (memory), `critic.value_heads.<signal>...`, in their own parameter vector.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import type { BehaviorSpec } from '../env/behavior-spec';
import { SeededRandom } from '../common/random';
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';
import { BodyInputLayout } from './encoders/body-input';
import { ObservationEncoder } from './encoders/observation-encoder';
import { Dense, DenseOutputPart } from './layers/dense';
import { EntityEmbedding, attentionGain } from './layers/entity-embedding';
import { ParameterBlock, ParameterSource, sequentialAllocator } from './layers/layer';
import { LinearEncoder } from './layers/linear-encoder';
import { Lstm } from './layers/lstm';
import { ResidualSelfAttention } from './layers/residual-self-attention';
import { RunningNormalizer } from './normalizer';
import { ReadingPass, gradientsSettled, runPass, scoped, tidyValues } from './tensor-io';
import { UnsupportedModelError } from './unsupported-model';

/**
 * A batch for the critic: `count` samples of the agent's own observations and of `slots`
 * groupmate slots each (slot after slot; an absent groupmate's observations NaN).
 */
export interface GroupBatch {
  readonly count: number;
  readonly slots: number;
  /** One array per observation: count x its size. */
  readonly observations: readonly Float32Array[];
  /** One array per observation: count x slots x its size. */
  readonly groupObservations: readonly Float32Array[];
}

/** A batch with the groupmates' actions, for the baselines. */
export interface GroupActionBatch extends GroupBatch {
  /** count x slots x continuous size */
  readonly groupContinuousActions: Float32Array;
  /** count x slots x number of branches */
  readonly groupDiscreteActions: Float32Array | Int32Array;
}

/** Per reward signal, in the order of `rewardSignals`, count values each. */
export interface CriticEstimates {
  readonly values: readonly Float32Array[];
  readonly baselines: readonly Float32Array[];
}

/** The memories of the two passes with memory: sequences x memorySize each ([h | c]). */
export interface PocaMemories {
  readonly value: Float32Array;
  readonly baseline: Float32Array;
}

/** A batch's rows are whole sequences of `length` steps, each from its row of the memories. */
export interface PocaSequences extends PocaMemories {
  readonly length: number;
}

/** The estimates over one agent's trajectory with memory (see estimateInSequences()). */
export interface SequenceEstimates extends CriticEstimates {
  /** Per step, the memories at the start of its sequence (steps x memorySize each; upstream's critic and baseline memories). */
  readonly stepMemories: PocaMemories;
  /** The memories after the last step. */
  readonly finalMemories: PocaMemories;
}

/** What a checkpoint records to recognize a critic of this architecture. */
export interface PocaCriticDescription {
  readonly observationSizes: readonly number[];
  readonly hiddenUnits: number;
  readonly numLayers: number;
  readonly normalize: boolean;
  readonly continuousSize: number;
  readonly discreteBranches: readonly number[];
  readonly rewardSignals: readonly string[];
  /** Present when images or variable-length observations are encoded: their encoder and shapes. */
  readonly encoded?: { readonly visEncodeType: string; readonly shapes: ReadonlyArray<readonly number[]> };
  /** Present with memory: network_settings.memory.memory_size. */
  readonly memorySize?: number;
}

/** The rows of one pass: the members' encodings, their actions, and which are absent. */
interface Members {
  /** count x members x layout.width (member 0 the agent itself). */
  readonly encodings: Float32Array;
  /** count x slots x action width; null for a value-only pass. */
  readonly actions: Float32Array | null;
  /** count x members, 1 where the member is absent. */
  readonly absent: Float32Array;
  /** count: each sample's members present, scaled to [-1, 1]. */
  readonly presence: Float32Array;
}

export class PocaCritic {
  readonly parameters: Float32Array;
  readonly gradient: Float32Array;
  readonly blocks: readonly ParameterBlock[];
  readonly normalizer: RunningNormalizer | null;
  readonly rewardSignals: readonly string[];
  readonly hiddenUnits: number;
  /** The most members present in any pass so far (upstream's _current_max_agents). */
  maxAgents = 1;

  private readonly layout: BodyInputLayout;
  private readonly actionWidth: number;
  private readonly observationEncoder: ObservationEncoder;
  private readonly obsEncoder: EntityEmbedding;
  private readonly obsActionEncoder: EntityEmbedding;
  private readonly attention: ResidualSelfAttention;
  private readonly linearEncoder: LinearEncoder;
  /** Upstream's LSTM after the linear encoder; null without memory. */
  private readonly memory: Lstm | null;
  private readonly heads: Dense;
  private version = 0;
  /** During an update on WebGPU: the parameters on the GPU (device-parameters.ts), which the training passes read. */
  private deviceParameters: tf.Tensor1D | null = null;

  constructor(
    readonly spec: BehaviorSpec,
    readonly network: NetworkSettings,
    rewardSignals: readonly string[],
    seed: number,
  ) {
    checkSupported(network);
    const h = network.hidden_units;
    this.hiddenUnits = h;
    this.rewardSignals = [...rewardSignals];
    this.layout = new BodyInputLayout(spec, h);
    this.normalizer = network.normalize ? new RunningNormalizer(this.layout.vectorWidth) : null;
    const { continuousSize, discreteBranches } = spec.actionSpec;
    this.actionWidth = continuousSize + discreteBranches.reduce((a, b) => a + b, 0);
    const encoding = this.layout.width;

    const { allocate, blocks, size } = sequentialAllocator();
    this.observationEncoder = new ObservationEncoder(allocate, 'critic.observation_encoder', this.layout, network.vis_encode_type);
    // Entity counts come with each pass: the group's members.
    this.obsEncoder = new EntityEmbedding(allocate, 'critic.obs_encoder', 0, encoding, 0, h);
    this.obsActionEncoder = new EntityEmbedding(allocate, 'critic.obs_action_encoder', 0, encoding + this.actionWidth, 0, h);
    this.attention = new ResidualSelfAttention(allocate, 'critic.self_attn', h, 0);
    this.linearEncoder = new LinearEncoder(allocate, 'critic.linear_encoder', h, h, network.num_layers, attentionGain(h));
    this.memory = network.memory === null ? null : new Lstm(allocate, 'critic.lstm', h, network.memory.memory_size);
    // The value heads read the encoding and the scaled member count.
    const parts = this.rewardSignals.map((name): DenseOutputPart => ({ name: `critic.value_heads.${name}`, size: 1, init: { kind: 'xavierUniform', gain: 1 } }));
    this.heads = new Dense(allocate, (this.memory?.hiddenSize ?? h) + 1, parts);
    this.blocks = blocks;
    this.parameters = new Float32Array(size());
    this.gradient = new Float32Array(size());
    const random = new SeededRandom(seed);
    for (const layer of [this.obsEncoder, this.obsActionEncoder, this.attention, this.linearEncoder, this.heads, this.observationEncoder]) {
      layer.initialize(this.parameters, random);
    }
    this.memory?.initialize(this.parameters, random);
  }

  /** Values in the memories of one pass of one sequence; 0 without memory. */
  get memorySize(): number {
    return this.memory?.memorySize ?? 0;
  }

  /** Tells the critic that `parameters` changed, so that the next pass uploads them again. */
  parametersChanged(): void {
    this.version++;
  }

  /** Training passes take their weights from `parameters` on the GPU (null: from `this.parameters` again). */
  useDeviceParameters(parameters: tf.Tensor1D | null): void {
    this.deviceParameters = parameters;
    this.version++;
  }

  /** Adds the agent's own observations to the critic's normalization (upstream normalizes on those alone). */
  updateNormalization(observations: readonly Float32Array[], count: number): void {
    if (this.normalizer === null || count === 0) return;
    this.normalizer.update(this.layout.vectorRows(observations, count), count);
  }

  /**
   * The value of each sample's group state (upstream's critic_pass), without keeping anything.
   * With memory, each sample takes one step from its row of `memories` (zeros when not given).
   */
  values(batch: GroupBatch, memories: Float32Array = new Float32Array(batch.count * this.memorySize)): Float32Array[] {
    return tidyValues(() => runPass(this.valuePass(batch, memories)));
  }

  /**
   * Values and baselines (upstream's critic_pass and baseline), without keeping anything; with
   * memory, over whole `sequences`, with the memories after each.
   */
  estimate(batch: GroupActionBatch, sequences?: PocaSequences): CriticEstimates & { readonly memories: PocaMemories } {
    const pass = tidyValues(() => runPass(this.estimatePass(batch, sequences)));
    return { ...this.estimates(pass.output, batch.count), memories: pass.memories };
  }

  /**
   * The estimates over one agent's `batch.count` consecutive steps with memory, as upstream's
   * _evaluate_by_sequence_team: from `initial`, sequence after sequence of `sequenceLength` steps
   * (the last one shorter), each pass starting from the memories its previous sequence ended with.
   */
  estimateInSequences(batch: GroupActionBatch, initial: PocaMemories, sequenceLength: number): SequenceEstimates {
    const n = batch.count;
    const size = this.memorySize;
    const signals = this.rewardSignals.length;
    const values = Array.from({ length: signals }, () => new Float32Array(n));
    const baselines = Array.from({ length: signals }, () => new Float32Array(n));
    const stepMemories = { value: new Float32Array(n * size), baseline: new Float32Array(n * size) };
    let memories = initial;
    for (let start = 0; start < n; start += sequenceLength) {
      const length = Math.min(sequenceLength, n - start);
      for (let t = start; t < start + length; t++) {
        stepMemories.value.set(memories.value, t * size);
        stepMemories.baseline.set(memories.baseline, t * size);
      }
      const pass = this.estimate(groupRows(batch, start, length), { length, ...memories });
      memories = pass.memories;
      for (let s = 0; s < signals; s++) {
        values[s].set(pass.values[s], start);
        baselines[s].set(pass.baselines[s], start);
      }
    }
    return { values, baselines, stepMemories, finalMemories: memories };
  }

  /**
   * One forward and backward pass: `loss` reads the estimates and adds the loss's gradient with
   * respect to each into `gradients` (same shapes, zero at first); returns its result and the
   * gradient with respect to `parameters` (the array is reused by the next call).
   */
  computeGradient<T>(
    batch: GroupActionBatch,
    loss: (estimates: CriticEstimates, gradients: CriticEstimates) => T,
    sequences?: PocaSequences,
  ): { gradient: Float32Array; loss: T } {
    return runPass(scoped(this.gradientPass(batch, loss, sequences)));
  }

  /**
   * computeGradient() as a reading pass (tensor-io.ts), for the backends that read asynchronously;
   * run it scoped(). With the parameters on the GPU (useDeviceParameters), the gradient blocks
   * wait there for DeviceParameters.step and the returned array is stale.
   */
  *gradientPass<T>(
    batch: GroupActionBatch,
    loss: (estimates: CriticEstimates, gradients: CriticEstimates) => T,
    sequences?: PocaSequences,
  ): ReadingPass<{ gradient: Float32Array; loss: T }> {
    const n = batch.count;
    const pass = yield* this.forward(batch, true, this.sequencesOf(batch, sequences));
    const output: Float32Array = yield pass.output;
    const outputGradient = new Float32Array(output.length);
    const gradients = this.estimates(new Float32Array(output.length), n);
    const value = loss(this.estimates(output, n), gradients);
    // Back from the per-signal arrays into the heads' rows: value rows first, then baseline rows.
    const signals = this.rewardSignals.length;
    for (let s = 0; s < signals; s++) {
      for (let i = 0; i < n; i++) {
        outputGradient[i * signals + s] = gradients.values[s][i];
        outputGradient[(n + i) * signals + s] = gradients.baselines[s][i];
      }
    }
    yield* this.backward(tf.tensor2d(outputGradient, [2 * n, signals]), n, batch.slots);
    if (this.deviceParameters === null) yield* gradientsSettled();
    return { gradient: this.gradient, loss: value };
  }

  describe(): PocaCriticDescription {
    return {
      observationSizes: [...this.layout.observationSizes],
      hiddenUnits: this.hiddenUnits,
      numLayers: this.network.num_layers,
      normalize: this.normalizer !== null,
      continuousSize: this.spec.actionSpec.continuousSize,
      discreteBranches: [...this.spec.actionSpec.discreteBranches],
      rewardSignals: [...this.rewardSignals],
      ...(this.layout.hasEncoders
        ? { encoded: { visEncodeType: this.network.vis_encode_type, shapes: this.spec.observationSpecs.map((obs) => [...obs.shape]) } }
        : {}),
      ...(this.memory === null ? {} : { memorySize: this.memory.memorySize }),
    };
  }

  /** Weights, normalization and the most members seen, for a checkpoint (names prefixed with `prefix`). */
  stateArrays(prefix: string): Array<[string, CheckpointArray]> {
    return [
      [`${prefix}parameters`, this.parameters],
      [`${prefix}current_max_agents`, new Float64Array([this.maxAgents])],
      ...(this.normalizer?.stateArrays() ?? []).map(([name, values]): [string, CheckpointArray] => [prefix + name, values]),
    ];
  }

  /** Restores stateArrays(prefix); refuses, naming the difference, a critic of another architecture. */
  loadStateArrays(prefix: string, description: PocaCriticDescription, arrays: ReadonlyMap<string, CheckpointArray>): void {
    const ours = this.describe();
    for (const key of Object.keys(ours) as Array<keyof PocaCriticDescription>) {
      if (JSON.stringify(description[key]) !== JSON.stringify(ours[key])) {
        throw new Error(
          `The checkpoint holds a different POCA critic: its ${key} is ${JSON.stringify(description[key])} and this one's ` +
            `${JSON.stringify(ours[key])}. Its weights cannot be loaded into this one.`,
        );
      }
    }
    this.parameters.set(requireCheckpointArray(arrays, `${prefix}parameters`, this.parameters.length));
    this.maxAgents = requireCheckpointArray(arrays, `${prefix}current_max_agents`, 1)[0];
    if (this.normalizer !== null) {
      const own = new Map<string, CheckpointArray>();
      for (const [name, values] of arrays) if (name.startsWith(prefix)) own.set(name.slice(prefix.length), values);
      this.normalizer.loadStateArrays(own);
    }
    this.parametersChanged();
  }

  /** The parameter block of this name (as listed in `blocks`). */
  block(name: string): ParameterBlock {
    const found = this.blocks.find((b) => b.name === name);
    if (found === undefined) throw new Error(`The POCA critic has no parameter block named ${name}.`);
    return found;
  }

  dispose(): void {
    for (const layer of [this.obsEncoder, this.obsActionEncoder, this.attention, this.linearEncoder, this.heads, this.observationEncoder]) layer.dispose();
  }

  private get source(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version, device: this.deviceParameters };
  }

  /**
   * The sequences a pass runs: those given, checked, or without memory the whole batch as one
   * sequence (no memories).
   */
  private sequencesOf(batch: GroupBatch, sequences: PocaSequences | undefined): PocaSequences {
    if (sequences === undefined) {
      if (this.memory !== null) throw new Error('A POCA critic with memory runs on whole sequences: give their memories.');
      return { length: batch.count, value: new Float32Array(0), baseline: new Float32Array(0) };
    }
    const expected = (batch.count / sequences.length) * this.memorySize;
    if (batch.count % sequences.length !== 0 || sequences.value.length !== expected || sequences.baseline.length !== expected) {
      throw new Error(
        `The POCA critic takes whole sequences of ${sequences.length} steps and ${this.memorySize} memories each; got ${batch.count} rows ` +
          `and ${sequences.value.length} and ${sequences.baseline.length} memories.`,
      );
    }
    return sequences;
  }

  /** The value of each sample's group state: the heads' value rows, one array per signal. */
  private *valuePass(batch: GroupBatch, memories: Float32Array): ReadingPass<Float32Array[]> {
    const members = yield* this.members(batch, null, false);
    const pooled = this.attention.forward(this.valueEntities(members, batch, false), tf.tensor2d(members.absent, [batch.count, batch.slots + 1]), this.source, false);
    const { output } = yield* this.headOutput(pooled, members.presence, false, { length: 1, value: memories, baseline: new Float32Array(0) });
    return this.perSignal(yield output, 0, batch.count);
  }

  /** forward()'s output read back, nothing kept. */
  private *estimatePass(batch: GroupActionBatch, sequences: PocaSequences | undefined): ReadingPass<{ output: Float32Array; memories: PocaMemories }> {
    const { output, memories } = yield* this.forward(batch, false, this.sequencesOf(batch, sequences));
    return { output: yield output, memories };
  }

  /** The heads' output [2 count, signals] (the value rows, then the baseline rows), and the memories after. */
  private *forward(batch: GroupActionBatch, keep: boolean, sequences: PocaSequences): ReadingPass<{ output: tf.Tensor2D; memories: PocaMemories }> {
    const { count: n, slots } = batch;
    const members = yield* this.members(batch, batch, keep);
    const valueEntities = this.valueEntities(members, batch, keep);
    const mates = tf.tensor3d(this.mateRowsWithActions(members, n, slots), [n, slots, this.layout.width + this.actionWidth]);
    const embeddedMates = this.obsActionEncoder.forward(null, mates, this.source, keep);
    const self = tf.slice(valueEntities, [0, 0, 0], [n, 1, -1]);
    const baselineEntities = tf.concat([self, embeddedMates], 1);
    const absent = tf.tensor2d(members.absent, [n, slots + 1]);
    const pooled = this.attention.forward(tf.concat([valueEntities, baselineEntities], 0), tf.concat([absent, absent], 0), this.source, keep);
    const presence = new Float32Array(2 * n);
    presence.set(members.presence);
    presence.set(members.presence, n);
    return yield* this.headOutput(pooled, presence, keep, sequences);
  }

  /** forward()'s backward from d loss / d heads' output: writes the gradient of every block. */
  private *backward(outputGradient: tf.Tensor2D, n: number, slots: number): ReadingPass<void> {
    const h = this.hiddenUnits;
    const source = this.source;
    const headInputGradient = this.heads.backward(outputGradient, source, true) as tf.Tensor2D;
    let encodedGradient = tf.slice(headInputGradient, [0, 0], [-1, this.memory?.hiddenSize ?? h]);
    if (this.memory !== null) {
      const { input } = yield* this.memory.backwardPass(yield encodedGradient, null, source, true);
      encodedGradient = tf.tensor2d(input!, [2 * n, h]);
    }
    const pooledGradient = this.linearEncoder.backward(encodedGradient, source, true)!;
    const entitiesGradient = this.attention.backward(pooledGradient as tf.Tensor2D, source, true)!;
    const valueGradient = tf.slice(entitiesGradient, [0, 0, 0], [n, -1, -1]);
    const baselineGradient = tf.slice(entitiesGradient, [n, 0, 0], [n, -1, -1]);
    // The agent's own embedding feeds both passes.
    const selfGradient = tf.add(tf.slice(valueGradient, [0, 0, 0], [n, 1, -1]), tf.slice(baselineGradient, [0, 0, 0], [n, 1, -1]));
    const embeddedGradient = tf.concat([selfGradient, tf.slice(valueGradient, [0, 1, 0], [n, slots, -1])], 1) as tf.Tensor3D;
    const mateGradient = tf.slice(baselineGradient, [0, 1, 0], [n, slots, -1]) as tf.Tensor3D;
    if (!this.observationEncoder.hasEncoders) {
      this.obsEncoder.backward(embeddedGradient, source, false);
      this.obsActionEncoder.backward(mateGradient, source, false);
      return;
    }
    // Each member's encoding feeds the value pass's embedding, a groupmate's the baseline pass's too.
    const width = this.layout.width;
    const memberGradient = this.obsEncoder.backwardToEntities(embeddedGradient, source);
    const mateEncodingGradient = tf.slice(this.obsActionEncoder.backwardToEntities(mateGradient, source), [0, 0, 0], [n, slots, width]);
    const encodingGradient = tf.add(memberGradient, tf.concat([tf.zeros([n, 1, width]), mateEncodingGradient], 1));
    this.observationEncoder.backward(tf.reshape(encodingGradient, [n * (slots + 1), width]), 'rows', source);
  }

  /** Every member's obs-only embedding [count, members, h]. */
  private valueEntities(members: Members, batch: GroupBatch, keep: boolean): tf.Tensor3D {
    const encodings = tf.tensor3d(members.encodings, [batch.count, batch.slots + 1, this.layout.width]);
    return this.obsEncoder.forward(null, encodings, this.source, keep);
  }

  /**
   * M(L(pooled)) beside the scaled member counts, through the value heads: [rows, signals]. With
   * memory, the rows are sequences of `sequences.length`, the value pass's (their memories
   * `sequences.value`) before the baseline pass's (`sequences.baseline`, none for a value-only pass).
   */
  private *headOutput(pooled: tf.Tensor2D, presence: Float32Array, keep: boolean, sequences: PocaSequences): ReadingPass<{ output: tf.Tensor2D; memories: PocaMemories }> {
    let encoded = this.linearEncoder.forward(pooled, this.source, keep) as tf.Tensor2D;
    let memories: PocaMemories = { value: new Float32Array(0), baseline: new Float32Array(0) };
    if (this.memory !== null) {
      const rows = presence.length;
      const start = new Float32Array(sequences.value.length + sequences.baseline.length);
      start.set(sequences.value);
      start.set(sequences.baseline, sequences.value.length);
      const recurred = yield* this.memory.forwardPass(yield encoded, start, rows / sequences.length, sequences.length, this.source, keep);
      encoded = tf.tensor2d(recurred.output, [rows, this.memory.hiddenSize]);
      const split = sequences.value.length;
      memories = { value: recurred.memories.slice(0, split), baseline: recurred.memories.slice(split) };
    }
    const input = tf.concat([encoded, tf.tensor2d(presence, [presence.length, 1])], 1);
    return { output: this.heads.forward(input, this.source, keep) as tf.Tensor2D, memories };
  }

  /** The groupmates' encodings beside their actions: count x slots x (encoding + action width). */
  private mateRowsWithActions(members: Members, n: number, slots: number): Float32Array {
    const e = this.layout.width;
    const a = this.actionWidth;
    const rows = new Float32Array(n * slots * (e + a));
    for (let i = 0; i < n; i++) {
      for (let m = 0; m < slots; m++) {
        const row = (i * slots + m) * (e + a);
        rows.set(members.encodings.subarray((i * (slots + 1) + m + 1) * e, (i * (slots + 1) + m + 2) * e), row);
        rows.set(members.actions!.subarray((i * slots + m) * a, (i * slots + m + 1) * a), row + e);
      }
    }
    return rows;
  }

  /**
   * The members of each sample: encodings, actions (when `actions` is given), absences and counts.
   * Inside a tfjs scope; with `keep`, the encoders keep what backward() needs.
   */
  private *members(batch: GroupBatch, actions: GroupActionBatch | null, keep: boolean): ReadingPass<Members> {
    const { count: n, slots } = batch;
    const memberCount = slots + 1;
    const sizes = this.layout.observationSizes;
    const absent = new Float32Array(n * memberCount);
    // Every member's observations, absent ones as zeros, as rows of member after member.
    const memberObs = sizes.map((size) => new Float32Array(n * memberCount * size));
    for (let i = 0; i < n; i++) {
      sizes.forEach((size, k) => memberObs[k].set(batch.observations[k].subarray(i * size, (i + 1) * size), i * memberCount * size));
      for (let m = 0; m < slots; m++) {
        const slot = i * slots + m;
        const missing = Number.isNaN(batch.groupObservations[0][slot * sizes[0]]);
        absent[i * memberCount + m + 1] = missing ? 1 : 0;
        if (missing) continue;
        sizes.forEach((size, k) => memberObs[k].set(batch.groupObservations[k].subarray(slot * size, (slot + 1) * size), (i * memberCount + m + 1) * size));
      }
    }
    const rows = this.layout.vectorRows(memberObs, n * memberCount);
    const vectorRows = this.normalizer === null ? rows : this.normalizer.normalizeRows(rows, n * memberCount);
    const encodings = yield* this.observationEncoder.encode(memberObs, vectorRows, n * memberCount, this.source, keep);
    const presence = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      let present = 0;
      for (let m = 0; m < memberCount; m++) present += 1 - absent[i * memberCount + m];
      presence[i] = present;
      this.maxAgents = Math.max(this.maxAgents, present);
    }
    for (let i = 0; i < n; i++) presence[i] = (presence[i] * 2) / this.maxAgents - 1;
    return { encodings, actions: actions === null ? null : this.flatActions(actions), absent, presence };
  }

  /** Each groupmate's action as the embedding takes it: continuous values, then each branch one-hot. */
  private flatActions(batch: GroupActionBatch): Float32Array {
    const { continuousSize, discreteBranches } = this.spec.actionSpec;
    const rows = batch.count * batch.slots;
    const flat = new Float32Array(rows * this.actionWidth);
    for (let r = 0; r < rows; r++) {
      const row = r * this.actionWidth;
      for (let c = 0; c < continuousSize; c++) flat[row + c] = batch.groupContinuousActions[r * continuousSize + c];
      let column = row + continuousSize;
      discreteBranches.forEach((size, b) => {
        flat[column + batch.groupDiscreteActions[r * discreteBranches.length + b]] = 1;
        column += size;
      });
    }
    return flat;
  }

  /** forward()'s rows (2 count x signals) split per signal: the values, then the baselines. */
  private estimates(output: Float32Array, n: number): CriticEstimates {
    return { values: this.perSignal(output, 0, n), baselines: this.perSignal(output, n, n) };
  }

  /** Rows first..first + n of the heads' output (rows x signals), one array per signal. */
  private perSignal(output: Float32Array, first: number, n: number): Float32Array[] {
    const signals = this.rewardSignals.length;
    return this.rewardSignals.map((_, s) => Float32Array.from({ length: n }, (_, i) => output[(first + i) * signals + s]));
  }
}

/** The attention's heads split hidden_units. */
function checkSupported(network: NetworkSettings): void {
  if (network.hidden_units % 4 !== 0) {
    throw new UnsupportedModelError(
      `network_settings.hidden_units is ${network.hidden_units}: POCA's critic attends with 4 heads of hidden_units / 4 ` +
        'values each, so it must be a multiple of 4.',
    );
  }
}

/** Rows first..first + count of a batch (views, no copies). */
function groupRows(batch: GroupActionBatch, first: number, count: number): GroupActionBatch {
  const rows = <T extends Float32Array | Int32Array>(values: T): T => {
    const width = values.length / batch.count;
    return values.subarray(first * width, (first + count) * width) as T;
  };
  return {
    count,
    slots: batch.slots,
    observations: batch.observations.map(rows),
    groupObservations: batch.groupObservations.map(rows),
    groupContinuousActions: rows(batch.groupContinuousActions),
    groupDiscreteActions: rows(batch.groupDiscreteActions),
  };
}
