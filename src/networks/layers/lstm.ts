/**
 * Upstream's LSTM memory module (torch_entities/layers.py LSTM and lstm_layer): one torch.nn.LSTM
 * layer of memory_size / 2 hidden units over sequences, batch first. Its memory is the hidden
 * state and the cell state side by side, [h | c], as upstream concatenates them.
 *
 * Parameters as torch names and lays them out: weight_ih (4H x in), weight_hh (4H x H), bias_ih
 * and bias_hh (4H), the gates in torch's order input, forget, cell, output. Initialized as
 * upstream's lstm_layer: each gate's block of each weight XavierGlorotUniform on its own, the
 * biases zero but the forget gate's, which starts at forget_bias (1) in both bias vectors.
 *
 * Forward through time and back (backpropagation through time, derived by hand), in two parts:
 * what does not depend on the recurrence (the input's projection W_ih x + b for every step, and
 * its gradients dW_ih and dx) as single tfjs products over all steps; the recurrence itself
 * (W_hh h step after step) in plain loops over typed arrays, where tfjs's fixed cost per op,
 * times the ops of every step, would outweigh the arithmetic (hidden 64 to 256, a few sequences
 * per minibatch). Measured at Hallway's sizes: see the issue note.
 *
 * Both kinds of training pass, by rows (forwardPass, backwardPass) and feature-major
 * (forwardColumns, backwardColumns), take their weights from a ParameterSource: from its GPU
 * vector during an update on WebGPU (device-parameters.ts), where W_hh comes down for the
 * recurrence in the read that brings the projection, and the backward reuses that copy.
 */
import * as tf from '@tensorflow/tfjs';
import type { SeededRandom } from '../../common/random';
import { ReadingPass, readTogether, runPass, scoped, transposeInto, writeGradient } from '../tensor-io';
import { initializeLinearWeights } from './dense';
import { GraphWriter, ParameterAllocator, ParameterBlock, ParameterSource, blockValues, deviceBlock } from './layer';

/** Upstream's forget_bias. */
export const FORGET_BIAS = 1;

/** What a kept forward pass left for the backward, per sequence step (batch x seq rows). */
interface KeptPass {
  readonly batch: number;
  readonly steps: number;
  /** The input: rows (rows x inputs) from forward(), feature-major (inputs x rows) from forwardColumns(). */
  readonly input: Float32Array | tf.Tensor2D;
  readonly initialMemories: Float32Array;
  /** W_hh (4H x H) as the forward read it: the backward runs through the same weights. */
  readonly recurrentWeight: Float32Array;
  /** The four gates after their activations, 4H per row: i, f, g, o. */
  readonly gates: Float32Array;
  /** The cell state after each step, and its tanh. */
  readonly cells: Float32Array;
  readonly cellTanh: Float32Array;
  /** The hidden state after each step (the output). */
  readonly hidden: Float32Array;
}

/** Where a pass takes its weights: the array, or the GPU vector when an update holds them there. */
export type LstmWeights = Pick<ParameterSource, 'parameters' | 'device'>;

export interface LstmOutput {
  /** The hidden state after every step, batch x steps x H. */
  readonly output: Float32Array;
  /** The memories after the last step, batch x 2H ([h | c]). */
  readonly memories: Float32Array;
}

export class Lstm {
  readonly hiddenSize: number;
  readonly weightIh: ParameterBlock;
  readonly weightHh: ParameterBlock;
  readonly biasIh: ParameterBlock;
  readonly biasHh: ParameterBlock;
  readonly blocks: readonly ParameterBlock[];
  private kept: KeptPass | null = null;

  constructor(
    allocate: ParameterAllocator,
    readonly name: string,
    readonly inputs: number,
    /** The memory's width: hidden state and cell state, H each. */
    readonly memorySize: number,
  ) {
    if (!(memorySize >= 2 && memorySize % 2 === 0)) {
      throw new Error(`An LSTM's memory holds its hidden and cell states, H values each: memory_size must be even (got ${memorySize}).`);
    }
    const h = memorySize / 2;
    this.hiddenSize = h;
    this.weightIh = allocate(`${name}.weight_ih`, [4 * h, inputs]);
    this.weightHh = allocate(`${name}.weight_hh`, [4 * h, h]);
    this.biasIh = allocate(`${name}.bias_ih`, [4 * h]);
    this.biasHh = allocate(`${name}.bias_hh`, [4 * h]);
    this.blocks = [this.weightIh, this.weightHh, this.biasIh, this.biasHh];
  }

  /** As upstream's lstm_layer: each gate block Xavier-uniform on its own; biases 0, the forget gate's forget_bias. */
  initialize(parameters: Float32Array, random: SeededRandom): void {
    const h = this.hiddenSize;
    for (const [block, columns] of [[this.weightIh, this.inputs], [this.weightHh, h]] as const) {
      const values = blockValues(parameters, block);
      for (let gate = 0; gate < 4; gate++) {
        initializeLinearWeights(values.subarray(gate * h * columns, (gate + 1) * h * columns), columns, h, { kind: 'xavierUniform', gain: 1 }, random);
      }
    }
    for (const block of [this.biasIh, this.biasHh]) {
      const values = blockValues(parameters, block).fill(0);
      values.fill(FORGET_BIAS, h, 2 * h);
    }
  }

  /**
   * Runs `batch` sequences of `steps` steps: `input` is batch x steps x inputs, `memories` the
   * initial [h | c] of each sequence (batch x 2H). With `keep`, remembers what backward() needs.
   */
  forward(input: Float32Array, memories: Float32Array, batch: number, steps: number, parameters: Float32Array, keep: boolean): LstmOutput {
    return runPass(scoped(this.forwardPass(input, memories, batch, steps, { parameters }, keep)));
  }

  /**
   * forward() as a reading pass (tensor-io.ts), its weights from `weights`: the input's
   * projection (rows x 4H) is read back for the recurrence; run it scoped().
   */
  *forwardPass(input: Float32Array, memories: Float32Array, batch: number, steps: number, weights: LstmWeights, keep: boolean): ReadingPass<LstmOutput> {
    this.checkSizes(input.length, memories, batch, steps);
    const x = tf.tensor2d(input, [batch * steps, this.inputs]);
    const projected = tf.fused.matMul({ a: x, b: this.inputWeightTransposed(weights), bias: this.projectionBias(weights) });
    const [projection, recurrentWeight] = yield* this.readWithRecurrentWeight(projected, weights);
    return this.recur(projection, input, memories, batch, steps, recurrentWeight, keep);
  }

  /**
   * forward() on a feature-major input (inputs x rows, rows = batch x steps, sequence after
   * sequence), as a reading pass (tensor-io.ts): the input's projection runs where the input
   * is and is read back once for the recurrence. Returns the output feature-major (H x rows).
   */
  *forwardColumns(input: tf.Tensor2D, memories: Float32Array, batch: number, steps: number, source: ParameterSource, keep: boolean): ReadingPass<tf.Tensor2D> {
    const rows = batch * steps;
    this.checkSizes(input.size, memories, batch, steps);
    const gates = 4 * this.hiddenSize;
    // (W_ih x + b)^T = W_ih X + b: a plain product of the feature-major input, no transpose.
    const projected = tf.add(tf.matMul(this.inputWeight(source), input), tf.reshape(this.projectionBias(source), [gates, 1]));
    const [projectionColumns, recurrentWeight] = yield* this.readWithRecurrentWeight(projected, source);
    const projection = new Float32Array(rows * gates);
    transposeInto(projectionColumns, gates, rows, projection);
    const { output } = this.recur(projection, input, memories, batch, steps, recurrentWeight, keep);
    return tf.tensor2d(columnsOf(output, rows, this.hiddenSize), [this.hiddenSize, rows]);
  }

  /**
   * Backpropagates through time from d loss / d output (batch x steps x H) and, when given,
   * d loss / d final memories (batch x 2H): writes the parameters' gradient into `gradient` and
   * returns d loss / d input (when `needInput`) and d loss / d initial memories. After forward().
   */
  backward(
    outputGradient: Float32Array,
    finalMemoryGradient: Float32Array | null,
    parameters: Float32Array,
    gradient: Float32Array,
    needInput: boolean,
  ): { input: Float32Array | null; memories: Float32Array } {
    return runPass(scoped(this.backwardPass(outputGradient, finalMemoryGradient, { parameters, gradient }, needInput)));
  }

  /**
   * backward() as a reading pass (tensor-io.ts), its weights from `source` (the gradient written
   * into `source.gradient`): the input's gradient is read back; run it scoped().
   */
  *backwardPass(
    outputGradient: Float32Array,
    finalMemoryGradient: Float32Array | null,
    source: LstmWeights & Pick<ParameterSource, 'gradient'>,
    needInput: boolean,
  ): ReadingPass<{ input: Float32Array | null; memories: Float32Array }> {
    const pass = this.keptPass();
    if (!(pass.input instanceof Float32Array)) throw new Error('The LSTM kept a feature-major pass: its backward is backwardColumns().');
    const { gradient } = source;
    const { gateGradients, memories } = this.throughTime(pass, outputGradient, finalMemoryGradient, gradient);
    const rows = pass.batch * pass.steps;
    const gates = 4 * this.hiddenSize;
    const dzT = this.parameterGradients(pass, gateGradients, gradient);
    // No product with a transpose flag (slow on wasm): dz^T is transposed in JavaScript.
    writeGradient(tf.matMul(dzT, tf.tensor2d(pass.input, [rows, this.inputs])), gradient, this.weightIh.offset);
    if (!needInput) return { input: null, memories };
    const dz = tf.tensor2d(gateGradients, [rows, gates]);
    const input: Float32Array = yield tf.matMul(dz, this.inputWeight(source));
    return { input, memories };
  }

  /**
   * forwardColumns()'s backward from d loss / d output, feature-major (H x rows), as a reading
   * pass: that gradient is read back once for the recurrence, and the rest stays where the
   * input is. Returns d loss / d input, feature-major (inputs x rows), when `needInput`.
   */
  *backwardColumns(outputGradient: tf.Tensor2D, source: ParameterSource, needInput: boolean): ReadingPass<tf.Tensor2D | null> {
    const pass = this.keptPass();
    if (pass.input instanceof Float32Array) throw new Error('The LSTM kept a pass by rows: its backward is backward().');
    const input = pass.input;
    const rows = pass.batch * pass.steps;
    const h = this.hiddenSize;
    const gradientRows = new Float32Array(rows * h);
    transposeInto(yield outputGradient, h, rows, gradientRows);
    const { gateGradients } = this.throughTime(pass, gradientRows, null, source.gradient);
    const dzT = this.parameterGradients(pass, gateGradients, source.gradient);
    // dW_ih^T = X dz (inputs x 4H), turned on its way into the gradient.
    writeGradient(tf.matMul(input, tf.tensor2d(gateGradients, [rows, 4 * h])), source.gradient, this.weightIh.offset, true);
    if (!needInput) return null;
    // dX = W_ih^T dz^T, feature-major like the input.
    return tf.matMul(this.inputWeightTransposed(source), dzT) as tf.Tensor2D;
  }

  private checkSizes(inputValues: number, memories: Float32Array, batch: number, steps: number): void {
    const { inputs, hiddenSize: h } = this;
    if (inputValues !== batch * steps * inputs || memories.length !== batch * 2 * h) {
      throw new Error(
        `The LSTM takes ${batch} x ${steps} x ${inputs} inputs and ${batch} x ${2 * h} memories; got ${inputValues} and ${memories.length} values.`,
      );
    }
  }

  private keptPass(): KeptPass {
    if (this.kept === null) throw new Error('The LSTM\'s backward needs a kept forward pass first.');
    return this.kept;
  }

  /** The recurrence over every step, from `projection` (W_ih x + b per row, rows x 4H). */
  private recur(
    projection: Float32Array,
    input: Float32Array | tf.Tensor2D,
    memories: Float32Array,
    batch: number,
    steps: number,
    recurrentWeight: Float32Array,
    keep: boolean,
  ): LstmOutput {
    const h = this.hiddenSize;
    const rows = batch * steps;
    const gates = new Float32Array(rows * 4 * h);
    const cells = new Float32Array(rows * h);
    const cellTanh = new Float32Array(rows * h);
    const hidden = new Float32Array(rows * h);
    const finalMemories = new Float32Array(batch * 2 * h);
    const z = new Float64Array(4 * h);
    for (let b = 0; b < batch; b++) {
      for (let t = 0; t < steps; t++) {
        const row = b * steps + t;
        const x = row * 4 * h;
        // The previous hidden and cell states: the initial memories at the first step.
        const previousHidden = t === 0 ? memories.subarray(b * 2 * h, b * 2 * h + h) : hidden.subarray((row - 1) * h, row * h);
        const previousCell = t === 0 ? memories.subarray(b * 2 * h + h, (b + 1) * 2 * h) : cells.subarray((row - 1) * h, row * h);
        multiplyMatrixVector(recurrentWeight, previousHidden, z, 4 * h, h);
        for (let k = 0; k < 4 * h; k++) z[k] += projection[x + k];
        const g4 = row * 4 * h;
        for (let j = 0; j < h; j++) {
          const i = sigmoid(z[j]);
          const f = sigmoid(z[h + j]);
          const g = Math.tanh(z[2 * h + j]);
          const o = sigmoid(z[3 * h + j]);
          gates[g4 + j] = i;
          gates[g4 + h + j] = f;
          gates[g4 + 2 * h + j] = g;
          gates[g4 + 3 * h + j] = o;
          const c = f * previousCell[j] + i * g;
          const tc = Math.tanh(c);
          cells[row * h + j] = c;
          cellTanh[row * h + j] = tc;
          hidden[row * h + j] = o * tc;
        }
      }
      const last = (b * steps + steps - 1) * h;
      finalMemories.set(hidden.subarray(last, last + h), b * 2 * h);
      finalMemories.set(cells.subarray(last, last + h), b * 2 * h + h);
    }
    if (keep) this.kept = { batch, steps, input, initialMemories: memories, recurrentWeight, gates, cells, cellTanh, hidden };
    return { output: hidden, memories: finalMemories };
  }

  /**
   * Backpropagation through time in plain loops: every step's gradient with respect to its
   * gates' pre-activations (rows x 4H), the biases' gradient written, and d loss / d initial
   * memories.
   */
  private throughTime(
    pass: KeptPass,
    outputGradient: Float32Array,
    finalMemoryGradient: Float32Array | null,
    gradient: Float32Array,
  ): { gateGradients: Float32Array; memories: Float32Array } {
    const { batch, steps, initialMemories, recurrentWeight, gates, cells, cellTanh } = pass;
    const h = this.hiddenSize;
    // W_hh transposed (H x 4H): each hidden unit's gradient is then one contiguous dot product.
    const wHhT = new Float32Array(4 * h * h);
    transposeInto(recurrentWeight, 4 * h, h, wHhT);
    const memoryGradient = new Float32Array(batch * 2 * h);
    const rows = batch * steps;
    const gateGradients = new Float32Array(rows * 4 * h);
    const dz = new Float32Array(4 * h);
    const dHidden = new Float64Array(h);
    const dCell = new Float64Array(h);
    for (let b = 0; b < batch; b++) {
      // From the final memories' gradient (zero when not given), back to the first step.
      for (let j = 0; j < h; j++) {
        dHidden[j] = finalMemoryGradient === null ? 0 : finalMemoryGradient[b * 2 * h + j];
        dCell[j] = finalMemoryGradient === null ? 0 : finalMemoryGradient[b * 2 * h + h + j];
      }
      for (let t = steps - 1; t >= 0; t--) {
        const row = b * steps + t;
        const g4 = row * 4 * h;
        const previousCell = t === 0 ? initialMemories.subarray(b * 2 * h + h, (b + 1) * 2 * h) : cells.subarray((row - 1) * h, row * h);
        for (let j = 0; j < h; j++) {
          const i = gates[g4 + j];
          const f = gates[g4 + h + j];
          const g = gates[g4 + 2 * h + j];
          const o = gates[g4 + 3 * h + j];
          const tc = cellTanh[row * h + j];
          const dh = dHidden[j] + outputGradient[row * h + j];
          const dc = dCell[j] + dh * o * (1 - tc * tc);
          dz[j] = dc * g * i * (1 - i);
          dz[h + j] = dc * previousCell[j] * f * (1 - f);
          dz[2 * h + j] = dc * i * (1 - g * g);
          dz[3 * h + j] = dh * tc * o * (1 - o);
          // The cell state's gradient one step back goes through the forget gate.
          dCell[j] = dc * f;
        }
        for (let k = 0; k < 4 * h; k++) gateGradients[g4 + k] = dz[k];
        multiplyMatrixVector(wHhT, dz, dHidden, h, 4 * h);
      }
      for (let j = 0; j < h; j++) {
        memoryGradient[b * 2 * h + j] = dHidden[j];
        memoryGradient[b * 2 * h + h + j] = dCell[j];
      }
    }
    // Both biases' gradient: the gates' gradients summed over every step.
    const dBIh = blockValues(gradient, this.biasIh).fill(0);
    for (let row = 0; row < rows; row++) {
      for (let k = 0; k < 4 * h; k++) dBIh[k] += gateGradients[row * 4 * h + k];
    }
    blockValues(gradient, this.biasHh).set(dBIh);
    return { gateGradients, memories: memoryGradient };
  }
  /**
   * dW_hh = dz^T h_prev into `gradient` (over all steps at once, like dW_ih); returns dz^T
   * (4H x rows), transposed in JavaScript: no product with a transpose flag (slow on wasm).
   */
  private parameterGradients(pass: KeptPass, gateGradients: Float32Array, gradient: Float32Array): tf.Tensor2D {
    const { batch, steps, initialMemories, hidden } = pass;
    const h = this.hiddenSize;
    const rows = batch * steps;
    const previousHidden = new Float32Array(rows * h);
    for (let b = 0; b < batch; b++) {
      previousHidden.set(initialMemories.subarray(b * 2 * h, b * 2 * h + h), b * steps * h);
      previousHidden.set(hidden.subarray(b * steps * h, ((b + 1) * steps - 1) * h), (b * steps + 1) * h);
    }
    const gateGradientsT = new Float32Array(4 * h * rows);
    transposeInto(gateGradients, rows, 4 * h, gateGradientsT);
    const dzT = tf.tensor2d(gateGradientsT, [4 * h, rows]);
    writeGradient(tf.matMul(dzT, tf.tensor2d(previousHidden, [rows, h])), gradient, this.weightHh.offset);
    return dzT;
  }

  /** b_ih + b_hh (4H): both biases add to every step's gates. */
  private projectionBias({ device, parameters }: LstmWeights): tf.Tensor1D {
    if (device) return tf.add(deviceBlock(device, this.biasIh), deviceBlock(device, this.biasHh));
    return tf.tensor1d(Float32Array.from(blockValues(parameters, this.biasIh), (v, k) => v + parameters[this.biasHh.offset + k]));
  }

  /** W_ih (4H x inputs). */
  private inputWeight({ device, parameters }: LstmWeights): tf.Tensor2D {
    return (device ? deviceBlock(device, this.weightIh) : tf.tensor2d(blockValues(parameters, this.weightIh), [4 * this.hiddenSize, this.inputs])) as tf.Tensor2D;
  }

  /** W_ih^T (inputs x 4H), turned where the weights are: no product with a transpose flag (slow on wasm). */
  private inputWeightTransposed(weights: LstmWeights): tf.Tensor2D {
    if (weights.device) return tf.transpose(this.inputWeight(weights));
    const gates = 4 * this.hiddenSize;
    const transposed = new Float32Array(this.inputs * gates);
    transposeInto(blockValues(weights.parameters, this.weightIh), gates, this.inputs, transposed);
    return tf.tensor2d(transposed, [this.inputs, gates]);
  }

  /** The input's projection read back with W_hh, which comes down in the same read when the weights are on the GPU. */
  private *readWithRecurrentWeight(projected: tf.Tensor, { device, parameters }: LstmWeights): ReadingPass<[Float32Array, Float32Array]> {
    if (!device) return [yield projected, blockValues(parameters, this.weightHh)];
    const [projection, recurrentWeight] = yield* readTogether([projected, deviceBlock(device, this.weightHh)]);
    return [projection, recurrentWeight];
  }

  /**
   * Its ONNX LSTM node: `input` [steps, batch, inputs] (sequence first, as ONNX runs it), the
   * initial states [1, batch, H] each. ONNX orders the gates input, output, forget, cell: the
   * weights are reordered from torch's input, forget, cell, output. Returns the names of Y
   * [steps, 1, batch, H] and of the final states [1, batch, H].
   */
  exportOnnx(
    graph: GraphWriter,
    input: string,
    initialHidden: string,
    initialCell: string,
    parameters: Float32Array,
  ): { output: string; hidden: string; cell: string } {
    const h = this.hiddenSize;
    const onnxOrder = (values: Float32Array, rowWidth: number): Float32Array => {
      const reordered = new Float32Array(values.length);
      // torch gate k (i, f, g, o) goes to ONNX position (i, o, f, c).
      [0, 2, 3, 1].forEach((position, gate) => reordered.set(values.subarray(gate * h * rowWidth, (gate + 1) * h * rowWidth), position * h * rowWidth));
      return reordered;
    };
    const w = graph.floats(`${this.name}.W`, [1, 4 * h, this.inputs], onnxOrder(blockValues(parameters, this.weightIh), this.inputs));
    const r = graph.floats(`${this.name}.R`, [1, 4 * h, h], onnxOrder(blockValues(parameters, this.weightHh), h));
    const biases = new Float32Array(8 * h);
    biases.set(onnxOrder(blockValues(parameters, this.biasIh), 1), 0);
    biases.set(onnxOrder(blockValues(parameters, this.biasHh), 1), 4 * h);
    const b = graph.floats(`${this.name}.B`, [1, 8 * h], biases);
    const [output, hidden, cell] = graph.nodeWithOutputs(
      'LSTM',
      [input, w, r, b, '', initialHidden, initialCell],
      [`${this.name}.Y`, `${this.name}.Y_h`, `${this.name}.Y_c`],
      { hidden_size: { int: h } },
    );
    return { output, hidden, cell };
  }
}

/**
 * out = M v for a rows x columns row-major M: the recurrence's hot loop. Four rows at a time, so
 * that each value of v is read once for four products (measured 1.5x the one-row dot product).
 */
function multiplyMatrixVector(matrix: Float32Array, vector: Float32Array, out: Float64Array, rows: number, columns: number): void {
  let r = 0;
  for (; r + 3 < rows; r += 4) {
    const a = r * columns;
    const b = a + columns;
    const c = b + columns;
    const d = c + columns;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    for (let j = 0; j < columns; j++) {
      const v = vector[j];
      s0 += matrix[a + j] * v;
      s1 += matrix[b + j] * v;
      s2 += matrix[c + j] * v;
      s3 += matrix[d + j] * v;
    }
    out[r] = s0;
    out[r + 1] = s1;
    out[r + 2] = s2;
    out[r + 3] = s3;
  }
  for (; r < rows; r++) {
    let s = 0;
    for (let j = 0; j < columns; j++) s += matrix[r * columns + j] * vector[j];
    out[r] = s;
  }
}

/** rows x width values as width x rows. */
function columnsOf(rowValues: Float32Array, rows: number, width: number): Float32Array {
  const columns = new Float32Array(width * rows);
  transposeInto(rowValues, rows, width, columns);
  return columns;
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
