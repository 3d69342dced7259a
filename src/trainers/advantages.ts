/**
 * Returns and advantages over one trajectory, as upstream's trainer_utils.py (discount_rewards,
 * get_gae, lambda_return), to the bit: upstream runs these in NumPy 1.x, where a float32 array
 * meeting a Python float stays float32 but a float32 scalar meeting one becomes float64. So the
 * per-step sums happen in float32 or float64 depending on where they come from, the running sums
 * are float64, and every stored value is rounded to float32. The comments say which is which.
 */

/**
 * The discounted sum of future rewards at each step, `bootstrapValue` standing for what follows
 * the last step (upstream's discount_rewards).
 */
export function discountedReturns(rewards: Float32Array, gamma: number, bootstrapValue = 0): Float32Array {
  const out = new Float32Array(rewards.length);
  let running = bootstrapValue;
  for (let t = rewards.length - 1; t >= 0; t--) {
    running = running * gamma + rewards[t];
    out[t] = running;
  }
  return out;
}

export interface Advantages {
  /** The generalized advantage estimate of each step. */
  readonly advantages: Float32Array;
  /** advantage + value estimate: the value head's target (upstream's local_return). */
  readonly returns: Float32Array;
}

/**
 * Generalized advantage estimation (upstream's get_gae, and the returns PPO's trainer derives from it).
 * `values` are the critic's estimates at each step. `bootstrapValue` is the critic's estimate of
 * the observation after the last step, or null when the episode truly ended there (not when it was
 * interrupted by max steps, nor cut at time_horizon): nothing follows, and upstream then uses the
 * Python float 0.0, which turns its whole computation to float64.
 */
export function gae(
  rewards: Float32Array,
  values: Float32Array,
  bootstrapValue: number | null,
  gamma: number,
  lambda: number,
): Advantages {
  const n = rewards.length;
  if (values.length !== n) {
    throw new Error(`gae: ${n} rewards but ${values.length} value estimates.`);
  }
  const advantages = new Float32Array(n);
  const returns = new Float32Array(n);
  const f32 = Math.fround;
  const gamma32 = f32(gamma);
  const decay = gamma * lambda;
  let running = 0;
  for (let t = n - 1; t >= 0; t--) {
    let advantage: number;
    if (bootstrapValue === null) {
      const next = t + 1 < n ? values[t + 1] : 0;
      const delta = rewards[t] + gamma * next - values[t];
      running = running * decay + delta;
      advantage = running;
    } else {
      // The critic's float32 estimates keep the differences in float32.
      const next = t + 1 < n ? values[t + 1] : f32(bootstrapValue);
      const delta = f32(f32(rewards[t] + f32(gamma32 * next)) - values[t]);
      running = running * decay + delta;
      advantage = f32(running);
    }
    advantages[t] = advantage;
    returns[t] = advantage + values[t];
  }
  return { advantages, returns };
}

/**
 * TD(lambda) returns (upstream's lambda_return): each step's return mixes the next step's return
 * (weight lambda) with the next step's value estimate (weight 1 - lambda).
 */
export function lambdaReturns(
  rewards: Float32Array,
  values: Float32Array,
  bootstrapValue: number,
  gamma: number,
  lambda: number,
): Float32Array {
  const n = rewards.length;
  const out = new Float32Array(n);
  if (n === 0) return out;
  const f32 = Math.fround;
  out[n - 1] = rewards[n - 1] + f32(f32(gamma) * f32(bootstrapValue));
  const carried = gamma * lambda;
  const bootstrapped = (1 - lambda) * gamma;
  for (let t = n - 2; t >= 0; t--) {
    out[t] = carried * out[t + 1] + rewards[t] + bootstrapped * values[t + 1];
  }
  return out;
}
