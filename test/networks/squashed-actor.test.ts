/**
 * The SAC actor: ActorCritic with conditionalSigma (a log_sigma head, clamped to [-20, 2]) and
 * tanhSquash (actions tanh of the Gaussian sample, log probabilities corrected for it), as
 * upstream's SimpleActor(conditional_sigma=True, tanh_squash=True).
 */
import { memoryLogger } from '../../src/common/logger';
import { SeededRandom } from '../../src/common/random';
import { ActionSpec, BehaviorSpec } from '../../src/env/behavior-spec';
import { ActorCritic } from '../../src/networks/actor-critic';
import { selectBackend } from '../../src/networks/backend';
import { gaussianEntropy, gaussianLogProb } from '../../src/networks/distributions';
import { squashedGaussianLogProb, tanhLogDetJacobian } from '../../src/networks/squashed-gaussian';
import { behavior, network, observations } from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

function sacActor(spec: BehaviorSpec, deterministic = false): ActorCritic {
  return new ActorCritic(spec, {
    network: network({ deterministic }),
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 9,
    conditionalSigma: true,
    tanhSquash: true,
  });
}

/** The actor's head outputs of each agent (mu then log_sigma), from a deterministic twin's act(). */
function headOf(net: ActorCritic, obs: Float32Array[], count: number): { means: Float32Array; logStd: Float32Array } {
  const means = new Float32Array(count * net.actionSpec.continuousSize);
  const logStd = new Float32Array(means.length);
  net.computeGradient(obs, count, (outputs) => {
    const c = net.actionSpec.continuousSize;
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < c; j++) {
        means[i * c + j] = outputs.means[j * count + i];
        logStd[i * c + j] = outputs.logStd[j * count + i];
      }
    }
  });
  return { means, logStd };
}

describe('the SAC actor (conditional sigma, tanh squash)', () => {
  const spec = behavior([5], new ActionSpec(2, [3]));

  it('has a log_sigma head beside mu, initialized as mu, and no state-independent log_sigma', () => {
    const net = sacActor(spec);
    const names = net.blocks.map((b) => b.name);
    expect(names).toEqual(expect.arrayContaining(['actor.mu.weight', 'actor.log_sigma.weight', 'actor.log_sigma.bias', 'actor.branches.0.weight']));
    expect(net.block('actor.log_sigma.weight').shape).toEqual([2, 16]);
    expect(net.block('actor.log_sigma.bias').shape).toEqual([2]);
    // KaimingHeNormal with gain 0.2: std 0.2 / sqrt(16) = 0.05.
    const block = net.block('actor.log_sigma.weight');
    const weights = net.parameters.subarray(block.offset, block.offset + 32);
    const std = Math.sqrt(weights.reduce((a, w) => a + w * w, 0) / weights.length);
    expect(std).toBeGreaterThan(0.03);
    expect(std).toBeLessThan(0.07);
    // PPO's actor keeps its state-independent vector.
    const ppo = new ActorCritic(spec, { network: network(), rewardSignals: ['extrinsic'], sharedCritic: false, seed: 9 });
    expect(ppo.block('actor.log_sigma').shape).toEqual([2]);
  });

  it('acts with tanh(mu + sigma eps), sends the actions unclipped, and reports their squashed log probability', () => {
    const net = sacActor(spec);
    // Push the log_sigma head's bias up so that some samples land far out (tanh saturates, no clip at 1/3).
    const bias = net.block('actor.log_sigma.bias');
    net.parameters[bias.offset] = 1;
    net.parameters[bias.offset + 1] = -30; // clamped to -20: sigma almost 0
    net.parametersChanged();
    const count = 400;
    const obs = observations(spec, count, new SeededRandom(3));
    const head = headOf(net, obs, count);
    const out = net.act(obs, count);
    let beyondClip = 0;
    for (let i = 0; i < count; i++) {
      for (let j = 0; j < 2; j++) {
        const k = i * 2 + j;
        const a = out.action.continuous[k];
        expect(Math.abs(a)).toBeLessThanOrEqual(1);
        expect(out.envAction.continuous[k]).toBe(a);
        if (Math.abs(a) > 1 / 3 + 0.01) beyondClip++;
        const logStd = Math.min(2, Math.max(-20, head.logStd[k]));
        if (j === 1) expect(a).toBeCloseTo(Math.tanh(head.means[k]), 5);
        const u = Math.atanh(Math.min(a, 1 - 1e-7));
        if (Math.abs(a) < 0.99) expect(out.logProbs.continuous[k]).toBeCloseTo(squashedGaussianLogProb(u, head.means[k], logStd), 2);
      }
      const expectedEntropy = (gaussianEntropy(Math.min(2, head.logStd[i * 2])) + gaussianEntropy(-20)) / 2;
      expect(out.entropy[i]).toBeGreaterThan(expectedEntropy - 1e-3);
    }
    expect(beyondClip).toBeGreaterThan(100);
  });

  it('acts deterministically with tanh of the means', () => {
    const net = sacActor(spec, true);
    const obs = observations(spec, 5, new SeededRandom(4));
    const head = headOf(net, obs, 5);
    const out = net.act(obs, 5);
    for (let k = 0; k < 10; k++) expect(out.action.continuous[k]).toBeCloseTo(Math.tanh(head.means[k]), 6);
  });
});

describe('the squashed Gaussian', () => {
  it("log p(tanh u) is the Gaussian's at u minus log(1 - tanh(u)^2), also where tanh saturates", () => {
    for (const u of [-3, -0.5, 0, 0.7, 2.5]) {
      expect(tanhLogDetJacobian(u)).toBeCloseTo(Math.log(1 - Math.tanh(u) ** 2), 6);
      expect(squashedGaussianLogProb(u, 0.2, -0.3)).toBeCloseTo(gaussianLogProb(u, 0.2, -0.3) - Math.log(1 - Math.tanh(u) ** 2), 6);
    }
    expect(tanhLogDetJacobian(40)).toBeCloseTo(2 * (Math.LN2 - 40), 6);
    expect(Number.isFinite(squashedGaussianLogProb(-40, 0, 0))).toBe(true);
  });
});
