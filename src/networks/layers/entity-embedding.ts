/**
 * Upstream's EntityEmbedding (torch_entities/attention.py): each entity of a variable-length
 * observation ([entities, entity size], padded entities all zero), with the agent's own
 * encoding ("x_self") beside it when the body has other observations, through one Swish layer
 * of the attention's embedding size: upstream's LinearEncoder of 1 layer, its weights drawn from
 * a normal of std sqrt(0.125 / embedding size) (the T-Fixup scheme upstream cites), biases 0.
 *
 * Upstream runs the layer on the rows [count x entities, self size + entity size] that repeating
 * x_self beside every entity gives. With W = [W_self | W_entity] split by those columns,
 * [x_self, e] W^T = x_self W_self^T + e W_entity^T: the training passes take x_self's product once
 * per agent and add it to each of its entities' (at Sorter's sizes, 20 entities of 23 values
 * beside an x_self of 128, the product over the rows shrinks from 151 to 23 columns and no
 * repeated copy of x_self is made); x_self's gradient is the sum over its entities. The
 * entities are raw inputs (but in POCA's critic, see backwardToEntities()).
 *
 * Blocks `<name>.self_ent_encoder.seq_layers.0.weight` and `.bias`, as torch names upstream's.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { swishBackward } from './activations';
import { Dense, linearLayer } from './dense';
import { writeGradient } from '../tensor-io';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters } from './layer';

/** An embedding's traced pass: the map goes to x_self's gradient (null without x_self) and the entities'. */
export interface TracedEmbedding {
  readonly output: tf.Tensor3D;
  inputGradient(outputGradient: tf.Tensor3D): { readonly self: tf.Tensor2D | null; readonly entities: tf.Tensor3D };
}

/** Upstream's T-Fixup gain of the attention's layers: weights ~ N(0, 0.125 / embedding size). */
export function attentionGain(embeddingSize: number): number {
  return Math.sqrt(0.125 / embeddingSize);
}

/** What a forward pass with x_self left for the backward. */
interface KeptSplitPass {
  readonly self: tf.Tensor2D;
  /** The entities as rows [count x entities, entity size]. */
  readonly entityRows: tf.Tensor2D;
  /** Swish's gate and output, [count, entities, embedding]. */
  readonly gate: tf.Tensor3D;
  readonly output: tf.Tensor3D;
}

export class EntityEmbedding {
  readonly dense: Dense;
  readonly blocks: readonly ParameterBlock[];
  private kept: KeptSplitPass | null = null;

  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    /** Width of x_self (upstream's self_size; 0 when the body has no other observation). */
    readonly selfSize: number,
    readonly entitySize: number,
    /**
     * The observation's first dimension: entities per agent, padding included (what the export
     * repeats x_self over; a pass takes its entity count from its input, as POCA's critic, whose
     * entities are the group's members, needs).
     */
    readonly maxEntities: number,
    readonly embeddingSize: number,
  ) {
    const init = { kind: 'normal', gain: attentionGain(embeddingSize) } as const;
    this.dense = linearLayer(allocate, `${name}.self_ent_encoder.seq_layers.0`, selfSize + entitySize, embeddingSize, init, 'swish');
    this.blocks = this.dense.blocks;
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    this.dense.initialize(parameters, random);
  }

  /**
   * The embeddings [count, entities, embedding] of `entities` [count, entities, entity size],
   * each beside `self` [count, self size] (null without x_self).
   */
  forward(self: tf.Tensor2D | null, entities: tf.Tensor3D, source: ParameterSource, keep: boolean): tf.Tensor3D {
    const [count, n] = entities.shape;
    const d = this.embeddingSize;
    if (self === null) return tf.reshape(this.dense.forward(this.rowsOf(null, entities), source, keep), [count, n, d]);
    const { transposed, bias } = this.dense.weightsFor(source);
    const selfPart = tf.fused.matMul({ a: self, b: tf.slice(transposed, [0, 0], [this.selfSize, d]), bias });
    const entityRows = tf.reshape(entities, [count * n, this.entitySize]) as tf.Tensor2D;
    const entityPart = tf.matMul(entityRows, tf.slice(transposed, [this.selfSize, 0], [this.entitySize, d]));
    const z = tf.add(tf.reshape(entityPart, [count, n, d]), tf.reshape(selfPart, [count, 1, d]));
    const gate = tf.sigmoid(z) as tf.Tensor3D;
    const output = tf.mul(z, gate) as tf.Tensor3D;
    if (keep) this.kept = { self, entityRows, gate, output };
    return output;
  }

  /**
   * From d loss / d embeddings [count, entities, embedding], writes the weights' gradient;
   * returns d loss / d self [count, self size] when asked for and there is a self.
   */
  backward(outputGradient: tf.Tensor3D, source: ParameterSource, needSelf: boolean): tf.Tensor2D | null {
    const [count, n] = outputGradient.shape;
    const d = this.embeddingSize;
    if (this.selfSize === 0) {
      this.dense.backward(tf.reshape(outputGradient, [count * n, d]), source, false);
      return null;
    }
    if (this.kept === null) throw new Error("The entity embedding's backward needs a kept forward pass first.");
    const { self, entityRows, gate, output } = this.kept;
    const dz = swishBackward(outputGradient, gate, output);
    const selfGradient = tf.sum(dz, 1) as tf.Tensor2D;
    // dW^T, rows in W's column order (x_self's, then the entity's): x^T dz, whose left operands
    // (the inputs, 23 columns for Sorter's tiles) are cheaper to transpose than dz's 128.
    const weightGradient = tf.concat([tf.matMul(tf.transpose(self), selfGradient), tf.matMul(tf.transpose(entityRows), tf.reshape(dz, [count * n, d]))], 0);
    writeGradient(weightGradient, source.gradient, this.dense.weightOffset, true);
    writeGradient(tf.sum(selfGradient, 0), source.gradient, this.dense.biasOffset);
    if (!needSelf) return null;
    return tf.matMul(selfGradient, tf.slice(this.dense.weightsFor(source).weight, [0, 0], [d, this.selfSize])) as tf.Tensor2D;
  }

  /**
   * backward() for an embedding without x_self whose entities are encodings that learn (POCA's
   * critic embeds each member's encoded observations): writes the weights' gradient and returns
   * d loss / d entities [count, entities, entity size].
   */
  backwardToEntities(outputGradient: tf.Tensor3D, source: ParameterSource): tf.Tensor3D {
    const [count, n] = outputGradient.shape;
    const rows = tf.reshape(outputGradient, [count * n, this.embeddingSize]);
    const inputGradient = this.dense.backward(rows, source, true) as tf.Tensor2D;
    return tf.reshape(tf.slice(inputGradient, [0, this.selfSize], [-1, this.entitySize]), [count, n, this.entitySize]);
  }

  /**
   * forward() as a traced pass (layers/layer.ts), for GAIL's gradient penalty: the embeddings
   * and the map from their gradient to x_self's (null without x_self) and the entities'.
   */
  tracedPass(self: tf.Tensor2D | null, entities: tf.Tensor3D, parameters: TracedParameters): TracedEmbedding {
    const [count, n] = entities.shape;
    const dense = this.dense.tracedPass(this.rowsOf(self, entities), parameters);
    return {
      output: tf.reshape(dense.output, [count, n, this.embeddingSize]),
      inputGradient: (outputGradient) => {
        const rows = dense.inputGradient(tf.reshape(outputGradient, [count * n, this.embeddingSize]));
        const entityGradient = tf.reshape(tf.slice(rows, [0, this.selfSize], [-1, this.entitySize]), [count, n, this.entitySize]) as tf.Tensor3D;
        if (self === null) return { self: null, entities: entityGradient };
        const selfRows = tf.reshape(tf.slice(rows, [0, 0], [-1, this.selfSize]), [count, n, this.selfSize]);
        return { self: tf.sum(selfRows, 1) as tf.Tensor2D, entities: entityGradient };
      },
    };
  }

  /**
   * Its ONNX nodes: `entities` [batch, entities, entity size], beside `self` [batch, self size]
   * (null without x_self) repeated over the entities by a broadcast product with ones.
   */
  exportOnnx(graph: GraphWriter, self: string | null, entities: string, parameters: Float32Array): string {
    let input = entities;
    if (self !== null) {
      const column = graph.node('Unsqueeze', [self], `${this.name}.self_row`, { axes: { ints: [1] } });
      const ones = graph.floats(`${this.name}.entity_ones`, [1, this.maxEntities, 1], new Float32Array(this.maxEntities).fill(1));
      const repeated = graph.node('Mul', [column, ones], `${this.name}.self_repeated`);
      input = graph.node('Concat', [repeated, entities], `${this.name}.input`, { axis: { int: 2 } });
    }
    return this.dense.exportBatchedOnnx(graph, input, `${this.name}.self_ent_encoder.seq_layers.0`, parameters);
  }

  dispose(): void {
    this.dense.dispose();
  }

  /** [count x entities, self size + entity size]: x_self, then the entity, per row. */
  private rowsOf(self: tf.Tensor2D | null, entities: tf.Tensor3D): tf.Tensor2D {
    const [count, n] = entities.shape;
    let input: tf.Tensor3D = entities;
    if (self !== null) {
      const repeated = tf.tile(tf.reshape(self, [count, 1, this.selfSize]), [1, n, 1]) as tf.Tensor3D;
      input = tf.concat([repeated, entities], 2);
    }
    return tf.reshape(input, [count * n, this.selfSize + this.entitySize]);
  }
}
