/**
 * Upstream's recurrent PPO acceptance cases on SimpleGoal's memory variant (the goal shown for
 * the first observations only, so that only a policy with memory can reach it), over real gRPC,
 * with upstream's configs, budgets and thresholds (./upstream-cases.ts), judged as upstream judges.
 * The suite keeps a discrete and a hybrid case; `npm run bench:upstream -- recurrent` runs all.
 */
import { runUpstreamCase, upstreamCase } from './upstream-cases';

const SUBSET = ['test_recurrent_ppo[(0, 1)]', 'test_hybrid_recurrent_ppo'];

describe("mlagents-learn on SimpleGoal: upstream's recurrent PPO cases", () => {
  it.each(SUBSET)('%s', async (name) => {
    const c = upstreamCase(name);
    expect(await runUpstreamCase(c)).toBeGreaterThanOrEqual(c.threshold);
  }, 240000);
});
