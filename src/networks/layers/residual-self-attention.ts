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
 * Backward: tfjs's autodiff over the same ops (tf.grads), the forward traced again in the
 * backward pass; the products' gradients go through tracedMatMul's explicit transposes.
 * bench/attention.ts times it against the rest of a PPO update.
 *
 * Blocks `<name>.fc_q`, `.fc_k`, `.fc_v`, `.fc_out` (`.weight` [d, d], `.bias` [d]), as torch
 * names upstream's.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { copyTensorInto } from '../tensor-io';
import { Dense, linearLayer, tracedMatMul, transposeLast } from './dense';
import { attentionGain } from './entity-embedding';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, TracedParameters, blockValues } from './layer';
import { LayerNorm } from './layer-norm';

/** Upstream's MultiHeadAttention.NEG_INF: a masked key's score. */
export const ATTENTION_NEG_INF = -1e6;
/** Upstream's ResidualSelfAttention.EPSILON, in the pooling's denominator. */
export const POOLING_EPSILON = 1e-7;
/** Upstream's num_heads default, which its network bodies use. */
export const ATTENTION_HEADS = 4;

/** What a kept forward pass left for the backward. */
interface KeptPass {
  readonly input: tf.Tensor3D;
  readonly mask: tf.Tensor2D;
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
  private tensors: { readonly version: number; readonly byBlock: Map<ParameterBlock, tf.Tensor> } | null = null;
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
    if (keep) this.kept = { input, mask };
    const { byBlock } = this.parameterTensors(source);
    return this.pass(input, mask, (block) => byBlock.get(block)!);
  }

  /** From d loss / d output [count, d], writes the weights' gradient; returns d loss / d input when asked. */
  backward(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): tf.Tensor3D | null {
    if (this.kept === null) throw new Error('The attention\'s backward needs a kept forward pass first.');
    const { input, mask } = this.kept;
    const blocks = this.blocks;
    const { byBlock } = this.parameterTensors(source);
    const traced = (x: tf.Tensor, ...weights: tf.Tensor[]) => this.pass(x as tf.Tensor3D, mask, (block) => weights[blocks.indexOf(block)]);
    const gradients = tf.grads(traced)([input, ...blocks.map((block) => byBlock.get(block)!)], outputGradient);
    blocks.forEach((block, b) => copyTensorInto(gradients[b + 1], source.gradient, block.offset));
    return needInput ? (gradients[0] as tf.Tensor3D) : null;
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
    if (this.tensors === null) return;
    tf.dispose([...this.tensors.byBlock.values()]);
    this.tensors = null;
  }

  /** The forward pass in tfjs ops, each block's values from `parameters`: what forward() runs and backward() differentiates. */
  private pass(input: tf.Tensor3D, mask: tf.Tensor2D, parameters: TracedParameters): tf.Tensor2D {
    const [count, n, d] = input.shape;
    const { heads: h, headSize: s } = this;
    const normalized = tf.reshape(this.embeddingNorm.forward(input, null, false), [count * n, d]) as tf.Tensor2D;
    // [count, heads, entities, head size], and the keys as [count, heads, head size, entities].
    const split = (dense: Dense) => tf.transpose(tf.reshape(dense.forwardTraced(normalized, parameters), [count, n, h, s]), [0, 2, 1, 3]);
    const query = split(this.fcQ);
    const key = transposeLast(split(this.fcK));
    const value = split(this.fcV);
    const keep = tf.sub(1, tf.reshape(mask, [count, 1, 1, n]));
    const scores = tf.div(tracedMatMul(query, key), Math.sqrt(d));
    const masked = tf.add(tf.mul(keep, scores), tf.mul(tf.sub(1, keep), ATTENTION_NEG_INF));
    const attended = tracedMatMul(tf.softmax(masked), value);
    const merged = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [count * n, d]) as tf.Tensor2D;
    const residual = tf.add(this.fcOut.forwardTraced(merged, parameters), normalized);
    const output = tf.reshape(this.residualNorm.forward(residual, null, false), [count, n, d]);
    const present = tf.sub(1, mask);
    const pooled = tf.sum(tf.mul(output, tf.reshape(present, [count, n, 1])), 1);
    return tf.div(pooled, tf.add(tf.sum(present, 1, true), POOLING_EPSILON));
  }

  /** The blocks as tensors, uploaded again only when the parameters changed. */
  private parameterTensors(source: ParameterSource): { readonly byBlock: Map<ParameterBlock, tf.Tensor> } {
    if (this.tensors !== null && this.tensors.version === source.version) return this.tensors;
    this.dispose();
    const byBlock = new Map(this.blocks.map((block) => [block, tf.keep(tf.tensor(blockValues(source.parameters, block), [...block.shape]))] as const));
    this.tensors = { version: source.version, byBlock };
    return this.tensors;
  }
}
