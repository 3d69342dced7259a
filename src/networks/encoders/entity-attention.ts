/**
 * How upstream's ObservationEncoder encodes variable-length observations (torch_entities/
 * networks.py, utils.py create_input_processors and create_residual_self_attention): when a body
 * has any, the encodings of its other observations ("x_self", side by side in observation order)
 * go through the x_self encoder (one Swish layer of 128, T-Fixup normal weights); each
 * variable-length observation's entities are embedded beside that (layers/entity-embedding.ts);
 * all the entities, one observation's after another's, go through one residual self-attention
 * (layers/residual-self-attention.ts), which masks the padded ones (all values' squares summing
 * under 0.01: upstream's get_zero_entities_mask, on the raw values) and pools them into 128
 * values. Those come after the other observations' encodings in the body's input.
 *
 * A pass runs only the entity columns some agent of its batch fills: past the last entity present
 * in any agent's observation, every column is padding in all of them, and a padded entity changes
 * neither the output (masked keys weigh exactly 0, pooling leaves it out) nor any gradient, so
 * dropping those columns gives the same numbers. A curriculum's early lessons, with few entities of
 * many slots (Sorter: 2 tiles of 20), run that much faster. Unity's BufferSensor pads at the end.
 *
 * Blocks under `<body>.encoders.`: `<k>.self_ent_encoder...` for variable-length observation k,
 * `x_self_encoder.seq_layers.0...` and `rsa...`.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { Dense, linearLayer } from '../layers/dense';
import { EntityEmbedding, attentionGain } from '../layers/entity-embedding';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters } from '../layers/layer';
import { ResidualSelfAttention } from '../layers/residual-self-attention';

/** Upstream's ObservationEncoder.ATTENTION_EMBEDDING_SIZE: fixed, whatever hidden_units is. */
export const ATTENTION_EMBEDDING_SIZE = 128;
/** An entity whose values' squares sum under this is padding (upstream's get_zero_entities_mask). */
export const ZERO_ENTITY_THRESHOLD = 0.01;

/** One variable-length observation: its index and its [max entities, entity size]. */
export interface EntityObservation {
  readonly observation: number;
  readonly maxEntities: number;
  readonly entitySize: number;
}

/** The encoder's traced pass: the map goes to x_self's gradient (null without x_self) and each variable-length observation's. */
export interface TracedAttention {
  readonly output: tf.Tensor2D;
  inputGradient(outputGradient: tf.Tensor2D): { readonly self: tf.Tensor2D | null; readonly entities: readonly tf.Tensor3D[] };
}

/** What a kept forward pass left for the backward. */
interface KeptPass {
  readonly count: number;
  /** Entity columns the pass ran, per variable-length observation. */
  readonly columns: readonly number[];
}

export class EntityAttentionEncoder {
  /** Upstream's x_self_encoder; null when the body has no other observation. */
  readonly selfEncoder: Dense | null;
  readonly embeddings: readonly EntityEmbedding[];
  readonly attention: ResidualSelfAttention;
  readonly blocks: readonly ParameterBlock[];
  private kept: KeptPass | null = null;

  constructor(
    allocate: ParameterAllocator,
    /** `<body>.encoders` */
    readonly name: string,
    /** Values in x_self: the other observations' encodings (0 when there are none). */
    readonly selfSize: number,
    readonly observations: readonly EntityObservation[],
    /** The embedding and output size: upstream's fixed 128 (smaller in tests). */
    readonly outputSize = ATTENTION_EMBEDDING_SIZE,
  ) {
    const size = outputSize;
    const init = { kind: 'normal', gain: attentionGain(size) } as const;
    this.selfEncoder = selfSize > 0 ? linearLayer(allocate, `${name}.x_self_encoder.seq_layers.0`, selfSize, size, init, 'swish') : null;
    this.embeddings = observations.map(
      ({ observation, maxEntities, entitySize }) =>
        new EntityEmbedding(allocate, `${name}.${observation}`, selfSize > 0 ? size : 0, entitySize, maxEntities, size),
    );
    const entities = observations.reduce((total, o) => total + o.maxEntities, 0);
    this.attention = new ResidualSelfAttention(allocate, `${name}.rsa`, size, entities);
    this.blocks = [...(this.selfEncoder?.blocks ?? []), ...this.embeddings.flatMap((e) => e.blocks), ...this.attention.blocks];
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    this.selfEncoder?.initialize(parameters, random);
    for (const embedding of this.embeddings) embedding.initialize(parameters, random);
    this.attention.initialize(parameters, random);
  }

  /**
   * The attention's output [count, 128] from x_self `self` [count, selfSize] (null when
   * selfSize is 0) and every observation of the agents (the variable-length ones are read).
   */
  forward(self: tf.Tensor2D | null, observations: readonly Float32Array[], count: number, source: ParameterSource, keep: boolean): tf.Tensor2D {
    const encodedSelf = this.selfEncoder === null || self === null ? null : (this.selfEncoder.forward(self, source, keep) as tf.Tensor2D);
    const { entities, mask, columns } = this.entityInputs(observations, count);
    const embedded = entities.map((values, e) => this.embeddings[e].forward(encodedSelf, values, source, keep));
    if (keep) this.kept = { count, columns };
    return this.attention.forward(concatEntities(embedded), mask, source, keep);
  }

  /**
   * forward() as a traced pass (layers/layer.ts), for GAIL's gradient penalty: the output, and
   * the map from its gradient to x_self's (null without x_self) and each variable-length
   * observation's ([count, entities, entity size], in order).
   */
  tracedPass(self: tf.Tensor2D | null, observations: readonly Float32Array[], count: number, parameters: TracedParameters): TracedAttention {
    const selfPass = this.selfEncoder === null || self === null ? null : this.selfEncoder.tracedPass(self, parameters);
    const { entities, mask, columns } = this.entityInputs(observations, count);
    const embedded = entities.map((values, e) => this.embeddings[e].tracedPass(selfPass?.output ?? null, values, parameters));
    const attention = this.attention.tracedPass(concatEntities(embedded.map((pass) => pass.output)), mask, parameters);
    return {
      output: attention.output,
      inputGradient: (outputGradient) => {
        const embeddingGradient = attention.inputGradient(outputGradient);
        let first = 0;
        const gradients = embedded.map((pass, e) => {
          const part = tf.slice(embeddingGradient, [0, first, 0], [count, columns[e], -1]);
          first += columns[e];
          return pass.inputGradient(part);
        });
        // The columns left out hold padding alone, whose gradient is 0.
        const entityGradients = gradients.map(({ entities: gradient }, e) => {
          const { maxEntities } = this.observations[e];
          return columns[e] === maxEntities ? gradient : tf.pad(gradient, [[0, 0], [0, maxEntities - columns[e]], [0, 0]]);
        });
        if (selfPass === null) return { self: null, entities: entityGradients };
        const encodedSelfGradient = tf.addN(gradients.map((gradient) => gradient.self!)) as tf.Tensor2D;
        return { self: selfPass.inputGradient(encodedSelfGradient), entities: entityGradients };
      },
    };
  }

  /**
   * From d loss / d output [count, 128], writes the gradient of every block; returns d loss /
   * d x_self [count, selfSize] when asked for (null without x_self).
   */
  backward(outputGradient: tf.Tensor2D, source: ParameterSource, needSelf: boolean): tf.Tensor2D | null {
    if (this.kept === null) throw new Error('The attention encoder\'s backward needs a kept forward pass first.');
    const { count, columns } = this.kept;
    const wanted = this.selfEncoder !== null;
    const embeddingGradient = this.attention.backward(outputGradient, source, true)!;
    let selfGradient: tf.Tensor2D | null = null;
    let first = 0;
    this.observations.forEach((_, e) => {
      const part = tf.slice(embeddingGradient, [0, first, 0], [count, columns[e], -1]);
      first += columns[e];
      const gradient = this.embeddings[e].backward(part, source, wanted);
      if (gradient !== null) selfGradient = selfGradient === null ? gradient : (tf.add(selfGradient, gradient) as tf.Tensor2D);
    });
    if (this.selfEncoder === null || selfGradient === null) return null;
    return this.selfEncoder.backward(selfGradient, source, needSelf) as tf.Tensor2D | null;
  }

  /**
   * The entity columns a pass runs, as tensors [count, columns, entity size] per variable-length
   * observation, and their padding mask [count, all those columns].
   */
  private entityInputs(observations: readonly Float32Array[], count: number): { entities: tf.Tensor3D[]; mask: tf.Tensor2D; columns: number[] } {
    const padded = this.zeroEntityMask(observations, count);
    const columns = this.columnsInUse(padded, count);
    const entities = this.observations.map(({ observation, maxEntities, entitySize }, e) =>
      tf.tensor3d(leadingColumns(observations[observation], count, maxEntities, columns[e], entitySize), [count, columns[e], entitySize]),
    );
    const used = columns.reduce((total, c) => total + c, 0);
    return { entities, mask: tf.tensor2d(this.leadingMaskColumns(padded, count, columns), [count, used]), columns };
  }

  /** 1 for each padded entity (count x all entities, one observation's after another's). */
  zeroEntityMask(observations: readonly Float32Array[], count: number): Float32Array {
    const total = this.attention.maxEntities;
    const mask = new Float32Array(count * total);
    let first = 0;
    for (const { observation, maxEntities, entitySize } of this.observations) {
      const values = observations[observation];
      for (let i = 0; i < count; i++) {
        for (let j = 0; j < maxEntities; j++) {
          let squares = 0;
          const start = (i * maxEntities + j) * entitySize;
          for (let f = 0; f < entitySize; f++) squares += values[start + f] * values[start + f];
          mask[i * total + first + j] = squares < ZERO_ENTITY_THRESHOLD ? 1 : 0;
        }
      }
      first += maxEntities;
    }
    return mask;
  }

  /**
   * Per variable-length observation, how many leading entity columns hold an entity in some
   * agent of the batch (at least 1, so that a batch of padding alone still runs).
   */
  private columnsInUse(padded: Float32Array, count: number): number[] {
    const total = this.attention.maxEntities;
    let first = 0;
    return this.observations.map(({ maxEntities }) => {
      let used = 1;
      for (let i = 0; i < count; i++) {
        for (let j = maxEntities - 1; j >= used; j--) {
          if (padded[i * total + first + j] === 0) {
            used = j + 1;
            break;
          }
        }
      }
      first += maxEntities;
      return used;
    });
  }

  /** The padding mask's columns that a pass runs: each observation's leading `columns`. */
  private leadingMaskColumns(padded: Float32Array, count: number, columns: readonly number[]): Float32Array {
    const total = this.attention.maxEntities;
    const used = columns.reduce((sum, c) => sum + c, 0);
    if (used === total) return padded;
    const mask = new Float32Array(count * used);
    for (let i = 0; i < count; i++) {
      let from = i * total;
      let to = i * used;
      this.observations.forEach(({ maxEntities }, e) => {
        mask.set(padded.subarray(from, from + columns[e]), to);
        from += maxEntities;
        to += columns[e];
      });
    }
    return mask;
  }

  /**
   * Its ONNX nodes: `self` [batch, selfSize] (null without x_self) and `observations` by index
   * (the variable-length ones [batch, entities, entity size]); returns the output [batch, 128].
   */
  exportOnnx(graph: GraphWriter, self: string | null, observations: readonly string[], parameters: Float32Array): string {
    const encodedSelf = this.selfEncoder === null || self === null ? null : this.selfEncoder.exportOnnx(graph, self, `${this.name}.x_self_encoder`, parameters);
    const threshold = graph.floats(`${this.name}.zero_entity_threshold`, [], [ZERO_ENTITY_THRESHOLD]);
    const embedded: string[] = [];
    const masks: string[] = [];
    this.observations.forEach(({ observation }, e) => {
      const input = observations[observation];
      embedded.push(this.embeddings[e].exportOnnx(graph, encodedSelf, input, parameters));
      const label = `${this.name}.${observation}`;
      const squares = graph.node('ReduceSum', [graph.node('Mul', [input, input], `${label}.squared`)], `${label}.squares`, {
        axes: { ints: [2] },
        keepdims: { int: 0 },
      });
      const padded = graph.node('Less', [squares, threshold], `${label}.padded`);
      masks.push(graph.node('Cast', [padded], `${label}.mask`, { to: { int: 1 } }));
    });
    const concat = (parts: string[], label: string, axis: number) =>
      parts.length === 1 ? parts[0] : graph.node('Concat', parts, `${this.name}.${label}`, { axis: { int: axis } });
    return this.attention.exportOnnx(graph, concat(embedded, 'entities', 1), concat(masks, 'mask', 1), parameters);
  }

  dispose(): void {
    this.selfEncoder?.dispose();
    for (const embedding of this.embeddings) embedding.dispose();
    this.attention.dispose();
  }
}

/** The embeddings of every variable-length observation, one's entities after another's. */
function concatEntities(embedded: readonly tf.Tensor3D[]): tf.Tensor3D {
  return embedded.length === 1 ? embedded[0] : tf.concat([...embedded], 1);
}

/** The first `columns` of each agent's `maxEntities` entities ([count, maxEntities, size] in, [count, columns, size] out). */
function leadingColumns(values: Float32Array, count: number, maxEntities: number, columns: number, size: number): Float32Array {
  if (columns === maxEntities) return values;
  const out = new Float32Array(count * columns * size);
  for (let i = 0; i < count; i++) out.set(values.subarray(i * maxEntities * size, (i * maxEntities + columns) * size), i * columns * size);
  return out;
}
