/**
 * One of SAC's twin Q networks: upstream's ValueNetwork given the continuous actions as extra
 * inputs (sac/optimizer_torch.py PolicyValueNetwork, torch_entities/networks.py NetworkBody).
 *
 * It has a network body of its own: the vector observations (normalized with the policy's
 * statistics, as upstream copies the policy's normalizer into the Q networks before an update)
 * and one visual encoder per image (hidden_units wide, network_settings.vis_encode_type), side by
 * side in observation order, then the continuous actions after all of them, as NetworkBody
 * appends them to the observation encoding; then the MLP (src/networks/mlp.ts: Swish layers and
 * a linear head with one output per discrete action, or one, per reward signal).
 *
 * Its parameters are one flat vector that Adam updates: the MLP's first, in createMlp's layout
 * (so that a network without images has the layout and checkpoints it always had), then each
 * encoder's blocks, named encoders.<observation index>....
 *
 * A pass with images runs in the caller's tf.tidy scope: encode(..., keep = true) keeps what the
 * encoders' backward needs until that scope ends, and one encoding serves both of SAC's passes
 * (the stored actions and the policy's sampled ones), as both read the same observations.
 */
import * as tf from '@tensorflow/tfjs';
import type { NetworkSettings } from '../config/settings';
import type { SeededRandom } from '../common/random';
import type { BehaviorSpec } from '../env/behavior-spec';
import { BodyInputLayout } from './encoders/body-input';
import type { VisualEncoder } from './encoders/visual-encoder';
import { ParameterBlock, ParameterSource, sizeOf } from './layers/layer';
import { Mlp, MlpShape, createMlp, mlpParameterCount } from './mlp';
import { copyColumns } from './tensor-io';

export interface QNetworkSettings {
  readonly network: NetworkSettings;
  /** The continuous actions it takes after the observations. */
  readonly continuousActions: number;
  /** Outputs per sample: reward signals x (sum of branch sizes, or 1). */
  readonly outputs: number;
}

export class QNetwork {
  /** The MLP's parameters (createMlp's layout), then the encoders' blocks. */
  readonly parameters: Float32Array;
  /** d loss / d parameters after backward(), same layout. */
  readonly gradient: Float32Array;
  /** The encoders' parameter blocks, offsets into `parameters`. */
  readonly blocks: readonly ParameterBlock[];
  /** One per image, in observation order. */
  readonly encoders: readonly VisualEncoder[];
  /** The width of the body's input before the actions: vector values and encodings. */
  readonly encodedWidth: number;
  private readonly mlp: Mlp;
  private readonly continuousActions: number;
  /** Where each observation, vector or encoded image, goes in the body's input. */
  private readonly layout: BodyInputLayout;
  private version = 0;
  private passCount = 0;

  constructor(spec: BehaviorSpec, settings: QNetworkSettings, random: SeededRandom) {
    const hidden = settings.network.hidden_units;
    this.continuousActions = settings.continuousActions;
    this.layout = new BodyInputLayout(spec, hidden);
    this.encodedWidth = this.layout.width;

    const shape: MlpShape = {
      inputs: this.encodedWidth + settings.continuousActions,
      hiddenUnits: hidden,
      numLayers: settings.network.num_layers,
      outputs: settings.outputs,
    };
    // Lay the encoders' blocks out after the MLP's, then allocate the one vector.
    const blocks: ParameterBlock[] = [];
    const mlpSize = mlpParameterCount(shape);
    let size = mlpSize;
    const encoders = this.layout.createEncoders(
      (name, blockShape) => {
        const block = { name, offset: size, shape: [...blockShape] };
        blocks.push(block);
        size += sizeOf(blockShape);
        return block;
      },
      'encoders',
      settings.network.vis_encode_type,
    );
    this.parameters = new Float32Array(size);
    this.gradient = new Float32Array(size);
    this.mlp = createMlp(shape, random, {
      parameters: this.parameters.subarray(0, mlpSize),
      gradient: this.gradient.subarray(0, mlpSize),
    });
    for (const encoder of encoders) encoder.initialize(this.parameters, random);
    this.encoders = encoders;
    this.blocks = blocks;
  }

  /** Tells the network that `parameters` changed (the encoders keep their weights as tensors). */
  parametersChanged(): void {
    this.version++;
  }

  /**
   * The body's input without the actions (count x encodedWidth): `vectorRows` (count x the vector
   * observations' width, normalized) with each image's encoding in its place; `vectorRows` itself
   * when there are no images. With `keep`, the encoders keep what backward() needs.
   */
  encode(observations: readonly Float32Array[], vectorRows: Float32Array, count: number, keep: boolean): Float32Array {
    return this.layout.inputRows(this.encoders, observations, vectorRows, count, this.source, keep);
  }

  /** Q values (count x outputs) of encoded observations (from encode()) and their continuous actions (count x actions). */
  forward(encoded: Float32Array, actions: Float32Array, count: number): Float32Array {
    this.passCount = count;
    const C = this.continuousActions;
    if (C === 0) return this.mlp.forward(encoded, count);
    const width = this.encodedWidth;
    const rows = new Float32Array(count * (width + C));
    copyColumns(encoded, width, 0, rows, width + C, 0, width, count);
    copyColumns(actions, C, 0, rows, width + C, width, C, count);
    return this.mlp.forward(rows, count);
  }

  /**
   * Backpropagates d loss / d outputs through the last forward(): writes the MLP's parameter
   * gradient, and with `throughEncoders` the encoders' too (their encode() must have kept its
   * pass, in the same tf.tidy scope); returns d loss / d actions (count x actions).
   */
  backward(outputGradient: Float32Array, throughEncoders: boolean): Float32Array {
    const count = this.passCount;
    const inputGradient = this.mlp.backward(outputGradient);
    const width = this.mlp.shape.inputs;
    if (throughEncoders) {
      this.encoders.forEach((encoder, e) => {
        const gradient = new Float32Array(count * encoder.outputSize);
        copyColumns(inputGradient, width, this.layout.encodingColumns[e], gradient, encoder.outputSize, 0, encoder.outputSize, count);
        encoder.backward(tf.tensor2d(gradient, [count, encoder.outputSize]), this.source);
      });
    }
    const C = this.continuousActions;
    const actionGradient = new Float32Array(count * C);
    copyColumns(inputGradient, width, this.encodedWidth, actionGradient, C, 0, C, count);
    return actionGradient;
  }

  private get source(): ParameterSource {
    return { parameters: this.parameters, gradient: this.gradient, version: this.version };
  }
}
