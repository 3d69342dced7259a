import { discountedReturns, gae, lambdaReturns } from '../../src/trainers/advantages';

const f32 = (values: number[]) => Float32Array.from(values);

describe('by hand, with values float32 holds exactly', () => {
  // gamma = lambda = 0.5: every product below is exact, so these are the true values.
  const rewards = f32([1, 0, 1]);
  const values = f32([0.5, 0.25, 1]);

  it('discounts rewards from a bootstrap value', () => {
    // t2: 4 * 0.5 + 2 = 4; t1: 4 * 0.5 + 0 = 2; t0: 2 * 0.5 + 1 = 2
    expect(Array.from(discountedReturns(f32([1, 0, 2]), 0.5, 4))).toEqual([2, 2, 4]);
    expect(Array.from(discountedReturns(f32([1, 0, 2]), 0.5))).toEqual([1.5, 1, 2]);
  });

  it('bootstraps GAE from the value after the last step', () => {
    // deltas: 1 + 0.5 * 0.25 - 0.5 = 0.625, 0 + 0.5 * 1 - 0.25 = 0.25, 1 + 0.5 * 2 - 1 = 1
    // advantages, discounting by 0.25: 1, 0.25 + 0.25 = 0.5, 0.625 + 0.125 = 0.75
    const { advantages, returns } = gae(rewards, values, 2, 0.5, 0.5);
    expect(Array.from(advantages)).toEqual([0.75, 0.5, 1]);
    expect(Array.from(returns)).toEqual([1.25, 0.75, 2]);
  });

  it('bootstraps nothing when the episode ended', () => {
    // last delta: 1 + 0 - 1 = 0; then 0.25, then 0.625 + 0.25 * 0.25 = 0.6875
    const { advantages, returns } = gae(rewards, values, null, 0.5, 0.5);
    expect(Array.from(advantages)).toEqual([0.6875, 0.25, 0]);
    expect(Array.from(returns)).toEqual([1.1875, 0.5, 1]);
  });

  it('gives TD(lambda) returns', () => {
    // t2: 1 + 0.5 * 2 = 2; t1: 0.25 * 2 + 0 + 0.25 * 1 = 0.75; t0: 0.25 * 0.75 + 1 + 0.25 * 0.25 = 1.25
    expect(Array.from(lambdaReturns(rewards, values, 2, 0.5, 0.5))).toEqual([1.25, 0.75, 2]);
  });

  it('refuses values that do not match the rewards', () => {
    expect(() => gae(rewards, f32([1, 2]), 0, 0.99, 0.95)).toThrow(/3 rewards but 2 value estimates/);
  });

  it('handles an empty trajectory', () => {
    expect(gae(f32([]), f32([]), 1, 0.99, 0.95).advantages.length).toBe(0);
    expect(lambdaReturns(f32([]), f32([]), 1, 0.99, 0.95).length).toBe(0);
  });
});

describe("bit for bit as upstream's NumPy computation", () => {
  // Expected values: upstream's trainer_utils.py functions run with NumPy 1.24.2, fed as
  // ppo/trainer.py feeds them (the buffer's lists of float32 scalars; the critic's bootstrap a float32
  // array, or the Python float 0.0 after a true episode end). NumPy then computes the cut case in
  // float32 and the ended case in float64: a plain double or a plain float32 version fails one of them.
  const rewards = f32([0.1, -0.3, 0.7, 0.05, 1.3]);
  const values = f32([0.21, 0.33, -0.47, 0.59, 0.12]);

  it('GAE of a trajectory cut at time_horizon (float32 differences)', () => {
    const { advantages, returns } = gae(rewards, values, 0.77, 0.99, 0.95);
    expect(advantages).toEqual(
      f32([1.9074196815490723, 1.7976816892623901, 3.0760040283203125, 1.4055331945419312, 1.9422999620437622]),
    );
    expect(returns).toEqual(
      f32([2.117419719696045, 2.1276817321777344, 2.606003999710083, 1.9955332279205322, 2.062299966812134]),
    );
  });

  it('GAE of a trajectory that ended its episode (float64 throughout)', () => {
    const { advantages, returns } = gae(rewards, values, null, 0.99, 0.95);
    expect(advantages).toEqual(
      f32([1.3109873533248901, 1.1635165214538574, 2.401718854904175, 0.6885899901390076, 1.1799999475479126]),
    );
    expect(returns).toEqual(
      f32([1.5209872722625732, 1.4935165643692017, 1.9317188262939453, 1.2785899639129639, 1.2999999523162842]),
    );
  });

  it('discounted rewards and lambda returns', () => {
    expect(discountedReturns(rewards, 0.99, 0.5)).toEqual(
      f32([2.261854648590088, 2.1836917400360107, 2.508779525756836, 1.827049970626831, 1.7949999570846558]),
    );
    expect(lambdaReturns(rewards, values, 0.77, 0.99, 0.95)).toEqual(
      f32([2.117419481277466, 2.1276814937591553, 2.606003761291504, 1.9955331087112427, 2.062299966812134]),
    );
  });
});
