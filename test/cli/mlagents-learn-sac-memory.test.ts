/**
 * Upstream's recurrent SAC acceptance case on SimpleGoal's memory variant (the goal shown for the
 * first observations only, so that only a policy with memory can reach it), over real gRPC, with
 * upstream's config, budget, threshold and seed (./upstream-cases.ts), judged as upstream judges.
 * The suite keeps the continuous case; `npx tsx bench/upstream.ts recurrent_sac` runs all three.
 */
import { runUpstreamCase, upstreamCase } from './upstream-cases';

describe("mlagents-learn on SimpleGoal: upstream's recurrent SAC case", () => {
  it('test_recurrent_sac[(1, 0)]', async () => {
    const c = upstreamCase('test_recurrent_sac[(1, 0)]');
    expect(await runUpstreamCase(c)).toBeGreaterThanOrEqual(c.threshold);
  }, 240000);
});
