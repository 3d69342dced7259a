/**
 * The contract every kind of layer keeps, so that a network is a composition of layers and a new
 * kind of layer is one new file.
 *
 * A layer owns:
 *  - its parameter blocks, declared once through a ParameterAllocator into the network's one flat
 *    parameter vector (Adam updates that vector in place; a layer never copies it);
 *  - their initial values, as upstream's torch_entities give them;
 *  - a forward pass over a batch (batch first; images NHWC, the layout tfjs convolves in);
 *  - a backward pass: from the gradient of the loss with respect to its output, it writes the
 *    gradient with respect to its parameters into the network's flat gradient vector, and returns
 *    the gradient with respect to its input (or null when nobody needs it: the first layer);
 *  - its part of the exported ONNX graph.
 *
 * A forward pass keeps what its backward needs in the layer itself, as tensors that live until
 * the caller's tf.tidy scope ends: forward and backward of one training pass run in one scope.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';

/** One named block of the flat parameter vector (row-major, in the shape it is declared with). */
export interface ParameterBlock {
  readonly name: string;
  readonly offset: number;
  readonly shape: readonly number[];
}

/** Hands out blocks of the network's parameter vector, in declaration order. */
export type ParameterAllocator = (name: string, shape: readonly number[]) => ParameterBlock;

/**
 * The parameter and gradient vectors a layer reads and writes. `version` changes whenever the
 * parameters do, so that a layer can keep its weights as tensors between passes.
 */
export interface ParameterSource {
  readonly parameters: Float32Array;
  readonly gradient: Float32Array;
  readonly version: number;
  /**
   * During an update on WebGPU (device-parameters.ts): the parameters as one GPU vector, which a
   * layer slices its weights from. `parameters` is then stale until the update ends.
   */
  readonly device?: tf.Tensor1D | null;
}

/** A block's values sliced from the GPU parameter vector, in the block's shape. */
export function deviceBlock(device: tf.Tensor1D, block: ParameterBlock): tf.Tensor {
  return tf.reshape(tf.slice(device, block.offset, sizeOf(block.shape)), [...block.shape]);
}

/** A block's values as a tensor of its shape, for passes tfjs differentiates itself (tracedPass). */
export type TracedParameters = (block: ParameterBlock) => tf.Tensor;

/**
 * A traced pass, for losses that hold a gradient of the network themselves (GAIL's gradient
 * penalty) and are still differentiated by tfjs: the output, and the map from d/d output to
 * d/d input, both as ops tfjs differentiates with respect to the traced parameters. tfjs's
 * nested tf.grad cannot stand in for the map: it loses the paths through the tensors its inner
 * pass saves (measured against finite differences, it is wrong).
 */
export interface TracedPass<Out extends tf.Tensor = tf.Tensor, In extends tf.Tensor = Out> {
  readonly output: Out;
  inputGradient(outputGradient: Out): In;
}

/** What a layer writes its ONNX nodes through (OnnxGraphBuilder in src/export has this shape). */
export interface GraphWriter {
  floats(name: string, shape: readonly number[], values: ArrayLike<number>): string;
  node(opType: string, inputs: readonly string[], output: string, attributes?: GraphAttributes): string;
  nodeWithOutputs(opType: string, inputs: readonly string[], outputs: readonly string[], attributes?: GraphAttributes): string[];
}

/** A node's attributes, by name. */
export type GraphAttributes = Record<string, { readonly int: number } | { readonly float: number } | { readonly ints: readonly number[] }>;

/**
 * ONNX runs images channel first (NCHW) where tfjs runs them channel last (NHWC); a layer's
 * export takes and gives its tensors in the layout named here.
 */
export type OnnxLayout = 'NCHW' | 'flat';

export interface Layer {
  /** The output's shape per sample ([features], or [height, width, channels] for images). */
  readonly outputShape: readonly number[];
  /** The parameter blocks this layer (and the layers inside it) owns. */
  readonly blocks: readonly ParameterBlock[];
  /** Writes its initial parameter values. */
  initialize(parameters: Float32Array, random: SeededRandom): void;
  /** The output for a batch; with `keep`, remembers what backward() needs. */
  forward(input: tf.Tensor, source: ParameterSource, keep: boolean): tf.Tensor;
  /**
   * From d loss / d output (same shape as the last kept forward's output), writes d loss / d
   * parameters into `source.gradient` and returns d loss / d input, or null when `needInput` is false.
   */
  backward(outputGradient: tf.Tensor, source: ParameterSource, needInput: boolean): tf.Tensor | null;
  /** Its output as a traced pass (TracedPass), each block's values given by `parameters`. */
  tracedPass(input: tf.Tensor, parameters: TracedParameters): TracedPass;
  /** Writes its ONNX nodes after `input`, named from `name`; returns its output's name. */
  exportOnnx(graph: GraphWriter, input: string, name: string, parameters: Float32Array): string;
}

/** The values of a block, as a view of the parameter vector. */
export function blockValues(parameters: Float32Array, block: ParameterBlock): Float32Array {
  const size = block.shape.reduce((a, b) => a * b, 1);
  return parameters.subarray(block.offset, block.offset + size);
}

/** Elements per sample of a shape. */
export function sizeOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Values in the blocks `build` allocates (it builds a throwaway module to count them). */
export function countParameters(build: (allocate: ParameterAllocator) => unknown): number {
  let total = 0;
  build((name, shape) => {
    total += sizeOf(shape);
    return { name, offset: 0, shape: [...shape] };
  });
  return total;
}

/** Blocks laid one after another in a parameter vector of `size()` values (call it once every block is handed out). */
export function sequentialAllocator(): { readonly allocate: ParameterAllocator; readonly blocks: ParameterBlock[]; size(): number } {
  const blocks: ParameterBlock[] = [];
  let size = 0;
  return {
    blocks,
    allocate: (name, shape) => {
      const block = { name, offset: size, shape: [...shape] };
      blocks.push(block);
      size += sizeOf(shape);
      return block;
    },
    size: () => size,
  };
}
