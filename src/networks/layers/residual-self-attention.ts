/**
 * Upstream's ResidualSelfAttention with its MultiHeadAttention (torch_entities/attention.py, after
 * Baker et al. 2019, https://arxiv.org/pdf/1909.07528.pdf): over the embeddings of every entity
 * of an agent, E [entities, d], with m the mask (1 for a padded entity, which attends to nothing
 * and is attended by nobody),
 *
 *     U = LayerNorm(E)
 *     Q, K, V = U Wq^T + bq, U Wk^T + bk, U Wv^T + bv           (4 heads of d / 4 features)
 *     A_h = softmax((1 - m) Q_h K_h^T / sqrt(d) + m NEG_INF)      (over the keys; upstream
 *                                                                  scales by the whole d)
 *     Y = LayerNorm((A_1 V_1 | ... | A_4 V_4) Wo^T + bo + U)
 *     output = sum over unmasked entities of Y / (their count + 1e-7)
 *
 * Wq, Wk, Wv and Wo are d x d, drawn from a normal of std sqrt(0.125 / d) (T-Fixup), biases 0;
 * the LayerNorms have no parameters (layer-norm.ts).
 *
 * The backward is derived by hand (with tfjs's autodiff of the same ops, traced again in the
 * backward pass, a PPO minibatch of upstream's var-len test took 156 ms against 61 ms;
 * bench/attention.ts): the dense layers and LayerNorms run their own, and
 * with S = Q_h K_h^T, dA = dO V^T, dV = A^T dO, dz = A (dA - rowsum(dA A)),
 * dS = (1 - m) dz / sqrt(d), dQ = dS K, dK = dS^T Q. Checked against torch's autograd in
 * test/networks/layers/entity-attention.test.ts. tracedPass() writes the same formulas as ops
 * tfjs differentiates, for GAIL's gradient penalty (checked against upstream's in
 * test/trainers/reward-signals/gail-upstream.test.ts).
 *
 * Blocks `<name>.fc_q`, `.fc_k`, `.fc_v`, `.fc_out` (`.weight` [d, d], `.bias` [d]), as torch
 * names upstream's.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { Dense, linearLayer, transposeLast } from './dense';
import { attentionGain } from './entity-embedding';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, TracedPass } from './layer';
import { LayerNorm } from './layer-norm';

/** Upstream's MultiHeadAttention.NEG_INF: a masked key's score. */
export const ATTENTION_NEG_INF = -1e6;
/** Upstream's ResidualSelfAttention.EPSILON, in the pooling's denominator. */
export const POOLING_EPSILON = 1e-7;
/** Upstream's num_heads default, which its network bodies use. */
export const ATTENTION_HEADS = 4;

/** What a kept forward pass left for the backward, heads as [count, heads, entities, head size]. */
interface KeptPass {
  readonly query: tf.Tensor4D;
  readonly key: tf.Tensor4D;
  readonly value: tf.Tensor4D;
  /** The attention weights [count, heads, entities, entities]. */
  readonly weights: tf.Tensor4D;
  /** 1 - mask, as [count, 1, 1, entities]. */
  readonly keepRow: tf.Tensor4D;
  /** 1 - mask over the pooling's count, [count, entities, 1]. */
  readonly pooling: tf.Tensor3D;
}

export class ResidualSelfAttention {
  readonly blocks: readonly ParameterBlock[];
  readonly fcQ: Dense;
  readonly fcK: Dense;
  readonly fcV: Dense;
  readonly fcOut: Dense;
  readonly embeddingNorm: LayerNorm;
  readonly residualNorm: LayerNorm;
  readonly headSize: number;
  private kept: KeptPass | null = null;

  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    /** d: the entities' embedding size. */
    readonly embeddingSize: number,
    /** Entities per agent, all variable-length observations together (upstream's max_num_ent). */
    readonly maxEntities: number,
    readonly heads = ATTENTION_HEADS,
  ) {
    const init = { kind: 'normal', gain: attentionGain(embeddingSize) } as const;
    const layer = (label: string) => linearLayer(allocate, `${name}.${label}`, embeddingSize, embeddingSize, init);
    this.fcQ = layer('fc_q');
    this.fcK = layer('fc_k');
    this.fcV = layer('fc_v');
    this.fcOut = layer('fc_out');
    this.blocks = [this.fcQ, this.fcK, this.fcV, this.fcOut].flatMap((dense) => dense.blocks);
    this.embeddingNorm = new LayerNorm(embeddingSize);
    this.residualNorm = new LayerNorm(embeddingSize);
    this.headSize = Math.floor(embeddingSize / heads);
    if (this.headSize * heads !== embeddingSize) throw new Error(`The attention's embedding size ${embeddingSize} must be a multiple of its ${heads} heads.`);
  }

  initialize(parameters: Float32Array, random: SeededRandom): void {
    for (const dense of [this.fcQ, this.fcK, this.fcV, this.fcOut]) dense.initialize(parameters, random);
  }

  /** The pooled output [count, d] of the embeddings `input` [count, entities, d], `mask` [count, entities] 1 where padded. */
  forward(input: tf.Tensor3D, mask: tf.Tensor2D, source: ParameterSource, keep: boolean): tf.Tensor2D {
    const [count, n, d] = input.shape;
    const normalized = this.embeddingNorm.forward(tf.reshape(input, [count * n, d]), source, keep) as tf.Tensor2D;
    const query = this.heads4(this.fcQ.forward(normalized, source, keep), count);
    const key = this.heads4(this.fcK.forward(normalized, source, keep), count);
    const value = this.heads4(this.fcV.forward(normalized, source, keep), count);
    const { weights, keepRow, attended } = this.attend(query, key, value, mask);
    const residual = tf.add(this.fcOut.forward(attended, source, keep), normalized);
    const output = tf.reshape(this.residualNorm.forward(residual, source, keep), [count, n, d]);
    const pooling = poolingWeights(mask);
    if (keep) this.kept = { query, key, value, weights, keepRow, pooling };
    return tf.sum(tf.mul(output, pooling), 1);
  }

  /** From d loss / d output [count, d], writes the weights' gradient; returns d loss / d input when asked. */
  backward(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): tf.Tensor3D | null {
    if (this.kept === null) throw new Error('The attention\'s backward needs a kept forward pass first.');
    const { weights, pooling } = this.kept;
    const [count, , n] = weights.shape;
    const d = this.embeddingSize;
    const residualGradient = this.residualNorm.backward(pooledRowsGradient(outputGradient, pooling, n, d), source, true) as tf.Tensor2D;
    const attendedGradient = this.heads4(this.fcOut.backward(residualGradient, source, true)!, count);
    const heads = this.attendBackward(attendedGradient, this.kept);
    let normalizedGradient = residualGradient as tf.Tensor;
    for (const [dense, gradient] of [[this.fcQ, heads.query], [this.fcK, heads.key], [this.fcV, heads.value]] as const) {
      normalizedGradient = tf.add(normalizedGradient, dense.backward(this.rowsOf(gradient), source, true)!);
    }
    if (!needInput) return null;
    return tf.reshape(this.embeddingNorm.backward(normalizedGradient, source, true)!, [count, n, d]);
  }

  /**
   * forward() and backward()'s input gradient as a traced pass (layers/layer.ts), for GAIL's
   * gradient penalty: the same formulas, the weights given by `parameters`.
   */
  tracedPass(input: tf.Tensor3D, mask: tf.Tensor2D, parameters: TracedParameters): TracedPass<tf.Tensor2D, tf.Tensor3D> {
    const [count, n, d] = input.shape;
    const normalized = this.embeddingNorm.tracedPass(tf.reshape(input, [count * n, d]));
    const [fcQ, fcK, fcV] = [this.fcQ, this.fcK, this.fcV].map((dense) => dense.tracedPass(normalized.output as tf.Tensor2D, parameters));
    const query = this.heads4(fcQ.output, count);
    const key = this.heads4(fcK.output, count);
    const value = this.heads4(fcV.output, count);
    const { weights, keepRow, attended } = this.attend(query, key, value, mask);
    const fcOut = this.fcOut.tracedPass(attended, parameters);
    const residualNorm = this.residualNorm.tracedPass(tf.add(fcOut.output, normalized.output));
    const pooling = poolingWeights(mask);
    return {
      output: tf.sum(tf.mul(tf.reshape(residualNorm.output, [count, n, d]), pooling), 1),
      inputGradient: (dy) => {
        const residualGradient = residualNorm.inputGradient(pooledRowsGradient(dy, pooling, n, d)) as tf.Tensor2D;
        const heads = this.attendBackward(this.heads4(fcOut.inputGradient(residualGradient), count), { query, key, value, weights, keepRow });
        const normalizedGradient = tf.addN([
          residualGradient,
          fcQ.inputGradient(this.rowsOf(heads.query)),
          fcK.inputGradient(this.rowsOf(heads.key)),
          fcV.inputGradient(this.rowsOf(heads.value)),
        ]);
        return tf.reshape(normalized.inputGradient(normalizedGradient), [count, n, d]);
      },
    };
  }

  /** Each head's attention weights over the unmasked keys, and the heads' outputs side by side as rows [count x entities, d]. */
  private attend(query: tf.Tensor4D, key: tf.Tensor4D, value: tf.Tensor4D, mask: tf.Tensor2D): { weights: tf.Tensor4D; keepRow: tf.Tensor4D; attended: tf.Tensor2D } {
    const [count, , n] = query.shape;
    const keepRow = tf.sub(1, tf.reshape(mask, [count, 1, 1, n])) as tf.Tensor4D;
    const scores = tf.div(tf.matMul(query, transposeLast(key)), Math.sqrt(this.embeddingSize));
    const weights = tf.softmax(tf.add(tf.mul(keepRow, scores), tf.mul(tf.sub(1, keepRow), ATTENTION_NEG_INF))) as tf.Tensor4D;
    return { weights, keepRow, attended: this.rowsOf(tf.matMul(weights, value)) };
  }

  /** attend()'s backward: d/d the heads' queries, keys and values from d/d their outputs (see the formulas above). */
  private attendBackward(attendedGradient: tf.Tensor4D, { query, key, value, weights, keepRow }: Omit<KeptPass, 'pooling'>): { query: tf.Tensor; key: tf.Tensor; value: tf.Tensor } {
    const weightsGradient = tf.matMul(attendedGradient, transposeLast(value));
    const softmaxGradient = tf.mul(weights, tf.sub(weightsGradient, tf.sum(tf.mul(weightsGradient, weights), -1, true)));
    const scoresGradient = tf.mul(softmaxGradient, tf.div(keepRow, Math.sqrt(this.embeddingSize)));
    return {
      query: tf.matMul(scoresGradient, key),
      key: tf.matMul(transposeLast(scoresGradient), query),
      value: tf.matMul(transposeLast(weights), attendedGradient),
    };
  }

  /**
   * Its ONNX nodes after `input` [batch, entities, d] and `mask` [batch, entities]: each head's
   * scores from its slice of the features (no Reshape, whose shape opset 9 takes as an int64
   * input), then the heads side by side again.
   */
  exportOnnx(graph: GraphWriter, input: string, mask: string, parameters: Float32Array): string {
    const { name, headSize: s } = this;
    const normalized = this.embeddingNorm.exportOnnx(graph, input, `${name}.embedding_norm`);
    const query = this.fcQ.exportBatchedOnnx(graph, normalized, `${name}.fc_q`, parameters);
    const key = this.fcK.exportBatchedOnnx(graph, normalized, `${name}.fc_k`, parameters);
    const value = this.fcV.exportBatchedOnnx(graph, normalized, `${name}.fc_v`, parameters);
    const one = graph.floats(`${name}.one`, [], [1]);
    const maskRow = graph.node('Unsqueeze', [mask], `${name}.mask_row`, { axes: { ints: [1] } });
    const keepRow = graph.node('Sub', [one, maskRow], `${name}.keep_row`);
    const penalty = graph.node('Mul', [maskRow, graph.floats(`${name}.neg_inf`, [], [ATTENTION_NEG_INF])], `${name}.penalty`);
    const scale = graph.floats(`${name}.scale`, [], [Math.sqrt(this.embeddingSize)]);
    const heads = Array.from({ length: this.heads }, (_, h) => {
      const slice = (x: string, label: string) =>
        graph.node('Slice', [x], `${name}.head${h}.${label}`, { axes: { ints: [2] }, starts: { ints: [h * s] }, ends: { ints: [(h + 1) * s] } });
      const keyColumns = graph.node('Transpose', [slice(key, 'key')], `${name}.head${h}.key_columns`, { perm: { ints: [0, 2, 1] } });
      const scores = graph.node('MatMul', [slice(query, 'query'), keyColumns], `${name}.head${h}.scores`);
      const scaled = graph.node('Div', [scores, scale], `${name}.head${h}.scaled`);
      const masked = graph.node('Add', [graph.node('Mul', [scaled, keepRow], `${name}.head${h}.kept`), penalty], `${name}.head${h}.masked`);
      const weights = graph.node('Softmax', [masked], `${name}.head${h}.weights`, { axis: { int: 2 } });
      return graph.node('MatMul', [weights, slice(value, 'value')], `${name}.head${h}.attended`);
    });
    const attended = graph.node('Concat', heads, `${name}.attended`, { axis: { int: 2 } });
    const residual = graph.node('Add', [this.fcOut.exportBatchedOnnx(graph, attended, `${name}.fc_out`, parameters), normalized], `${name}.residual`);
    const output = this.residualNorm.exportOnnx(graph, residual, `${name}.residual_norm`);
    const keep = graph.node('Sub', [one, mask], `${name}.keep`);
    const keepColumn = graph.node('Unsqueeze', [keep], `${name}.keep_column`, { axes: { ints: [2] } });
    const sum = graph.node('ReduceSum', [graph.node('Mul', [output, keepColumn], `${name}.kept_output`)], `${name}.pooled_sum`, {
      axes: { ints: [1] },
      keepdims: { int: 0 },
    });
    const present = graph.node('ReduceSum', [keep], `${name}.present`, { axes: { ints: [1] }, keepdims: { int: 1 } });
    const denominator = graph.node('Add', [present, graph.floats(`${name}.epsilon`, [], [POOLING_EPSILON])], `${name}.denominator`);
    return graph.node('Div', [sum, denominator], `${name}.pooled`);
  }

  dispose(): void {
    for (const dense of [this.fcQ, this.fcK, this.fcV, this.fcOut]) dense.dispose();
  }

  /** Rows [count x entities, d] as heads [count, heads, entities, head size]. */
  private heads4(rows: tf.Tensor, count: number): tf.Tensor4D {
    return tf.transpose(tf.reshape(rows, [count, -1, this.heads, this.headSize]), [0, 2, 1, 3]);
  }

  /** Heads [count, heads, entities, head size] as rows [count x entities, d]. */
  private rowsOf(heads: tf.Tensor): tf.Tensor2D {
    return tf.reshape(tf.transpose(heads, [0, 2, 1, 3]), [-1, this.embeddingSize]);
  }
}

/** The pooling's weight of each entity, [count, entities, 1]: 1 / (entities present + eps) for a present one, 0 for padding. */
function poolingWeights(mask: tf.Tensor2D): tf.Tensor3D {
  const [count, n] = mask.shape;
  const present = tf.sub(1, mask);
  return tf.reshape(tf.div(present, tf.add(tf.sum(present, 1, true), POOLING_EPSILON)), [count, n, 1]);
}

/** d loss / d the residual norm's output rows [count x entities, d] from d loss / d the pooled output [count, d]. */
function pooledRowsGradient(outputGradient: tf.Tensor2D, pooling: tf.Tensor3D, n: number, d: number): tf.Tensor2D {
  const count = outputGradient.shape[0];
  return tf.reshape(tf.mul(tf.reshape(outputGradient, [count, 1, d]), pooling), [count * n, d]);
}
