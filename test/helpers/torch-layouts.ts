/** Weights between torch's layouts and ours, for the tests against upstream's recorded fixtures. */
import type { ParameterBlock } from '../../src/networks/layers/layer';

/**
 * Between torch's layouts and ours: a convolution's weight is out x in x k x k there, out x k x
 * k x in here; the hypernetwork's last weight [I O, H] there, [H, I, O] here. `toOurs` false
 * goes the other way.
 */
export function converted(block: ParameterBlock, values: ArrayLike<number>, toOurs: boolean): Float32Array {
  const result = new Float32Array(values.length);
  if (block.shape.length === 4) {
    const [out, k, , channels] = block.shape;
    for (let o = 0; o < out; o++) {
      for (let y = 0; y < k; y++) {
        for (let x = 0; x < k; x++) {
          for (let c = 0; c < channels; c++) {
            const ours = ((o * k + y) * k + x) * channels + c;
            const theirs = ((o * channels + c) * k + y) * k + x;
            if (toOurs) result[ours] = values[theirs];
            else result[theirs] = values[ours];
          }
        }
      }
    }
    return result;
  }
  if (block.shape.length === 3) {
    const [h, inputs, outputs] = block.shape;
    for (let k = 0; k < h; k++) {
      for (let j = 0; j < inputs * outputs; j++) {
        if (toOurs) result[k * inputs * outputs + j] = values[j * h + k];
        else result[j * h + k] = values[k * inputs * outputs + j];
      }
    }
    return result;
  }
  result.set(Array.from(values));
  return result;
}

/** Upstream's name (POCAValueNetwork) for a block of our POCA critic (its LinearEncoder puts an activation after each layer: our layer l is its module 2l). */
export function pocaCriticTorchName(block: string): string {
  return block
    .replace(/^critic\.observation_encoder\.(\d+)\./, 'network_body.observation_encoder.processors.$1.')
    .replace(/^critic\.observation_encoder\./, 'network_body.observation_encoder.')
    .replace(/^critic\.(obs_encoder|obs_action_encoder|self_attn)\./, 'network_body.$1.')
    .replace(/^critic\.linear_encoder\.(\d+)\./, (_, l: string) => `network_body.linear_encoder.seq_layers.${2 * Number(l)}.`)
    .replace(/^critic\.lstm\.(weight_ih|weight_hh|bias_ih|bias_hh)$/, 'network_body.lstm.lstm.$1_l0')
    .replace(/^critic\.value_heads\./, 'value_heads.value_heads.');
}

/**
 * Upstream's name for a block of our actor-critic (SimpleActor, ValueNetwork) or of a Q network's
 * body and head: the body's first layer, the LSTM, the actor's heads, the value heads.
 */
export function actorCriticTorchName(block: string): string {
  return block
    .replace(/^(actor|critic|body)\.layers\.0\./, 'network_body._body_endoder.seq_layers.0.')
    .replace(/^(actor|critic|body)\.lstm\.(weight_ih|weight_hh|bias_ih|bias_hh)$/, 'network_body.lstm.lstm.$2_l0')
    .replace(/^actor\.(mu|log_sigma)\./, 'action_model._continuous_distribution.$1.')
    .replace(/^actor\.branches\./, 'action_model._discrete_distribution.branches.')
    .replace(/^critic\.value_heads\./, 'value_heads.value_heads.')
    .replace(/^head\./, 'value_heads.value_heads.extrinsic.');
}
