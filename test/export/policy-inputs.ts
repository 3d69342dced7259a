/** What the ONNX tests feed an exported policy: random action masks and onnxruntime's inputs. */
import * as ort from 'onnxruntime-node';
import type { SeededRandom } from '../../src/common/random';
import type { BehaviorSpec } from '../../src/env/behavior-spec';

/** Masks of `count` agents: each action forbidden with probability `forbidden`, one per branch always allowed. */
export function randomMasks(branches: readonly number[], count: number, random: SeededRandom, forbidden: number): Float32Array {
  const width = branches.reduce((a, b) => a + b, 0);
  const masks = new Float32Array(count * width);
  for (let i = 0; i < count; i++) {
    let first = 0;
    for (const size of branches) {
      for (let k = 0; k < size; k++) masks[i * width + first + k] = random.next() < forbidden ? 0 : 1;
      masks[i * width + first + random.int(size)] = 1;
      first += size;
    }
  }
  return masks;
}

/** onnxruntime's inputs: obs_k (count x the observation's shape) and, when given, action_masks. */
export function policyFeeds(spec: BehaviorSpec, obs: readonly Float32Array[], count: number, masks: Float32Array | null): Record<string, ort.Tensor> {
  const inputs: Record<string, ort.Tensor> = {};
  obs.forEach((values, k) => {
    inputs[`obs_${k}`] = new ort.Tensor('float32', values, [count, ...spec.observationSpecs[k].shape]);
  });
  if (masks !== null) inputs.action_masks = new ort.Tensor('float32', masks, [count, masks.length / count]);
  return inputs;
}
