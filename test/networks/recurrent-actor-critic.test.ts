/**
 * The actor-critic with network_settings.memory: an LSTM after each body, memories carried by the
 * caller while acting, whole sequences from their initial memories while training.
 */
import { memoryLogger } from '../../src/common/logger';
import { ActionSpec } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { categoricalLogProb, maskedSoftmax } from '../../src/networks/distributions';
import { blockValues } from '../../src/networks/layers/layer';
import { SeededRandom } from '../../src/common/random';
import { centralDifference } from '../helpers/finite-differences';
import { behavior, headLoss, model, observations } from './model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const MEMORY = { sequence_length: 4, memory_size: 10 };
const spec = behavior([3, 2], new ActionSpec(2, [3]));

function recurrentModel(sharedCritic = false) {
  return model(spec, { network: { hidden_units: 8, num_layers: 1, memory: MEMORY }, sharedCritic });
}

function randomMemories(count: number, size: number, random: SeededRandom): Float32Array {
  return new Float32Array(count * size).map(() => 0.5 * random.gaussian());
}

describe('a recurrent actor-critic', () => {
  it('puts an LSTM of memory_size / 2 units after each body, its heads on the LSTM output', () => {
    const net = recurrentModel();
    expect(net.memorySize).toBe(10);
    const shapes = Object.fromEntries(net.blocks.map((b) => [b.name, b.shape]));
    expect(shapes['actor.lstm.weight_ih']).toEqual([20, 8]);
    expect(shapes['actor.lstm.weight_hh']).toEqual([20, 5]);
    expect(shapes['critic.lstm.bias_hh']).toEqual([20]);
    expect(shapes['actor.mu.weight']).toEqual([2, 5]);
    expect(shapes['critic.value_heads.extrinsic.weight']).toEqual([1, 5]);
    // Upstream's forget bias: 1 in both bias vectors, the other gates 0.
    const bias = blockValues(net.parameters, net.block('actor.lstm.bias_ih'));
    expect([...bias.subarray(5, 10)]).toEqual([1, 1, 1, 1, 1]);
    expect([...bias.subarray(0, 5)]).toEqual([0, 0, 0, 0, 0]);
  });

  it('acts from the memories it is given and hands back the next ones; zeros when none are given', () => {
    const net = recurrentModel();
    const random = new SeededRandom(3);
    const obs = observations(spec, 2, random);
    const fresh = net.act(obs, 2);
    expect(fresh.memories).toHaveLength(20);
    const zeros = net.act(obs, 2, null, { memories: new Float32Array(20) });
    expect([...zeros.memories!]).toEqual([...fresh.memories!]);
    const other = net.act(obs, 2, null, { memories: randomMemories(2, 10, random) });
    expect([...other.memories!]).not.toEqual([...fresh.memories!]);
    expect(() => net.act(obs, 2, null, { memories: new Float32Array(10) })).toThrow('The memories hold 10 values, not 2 agents x 10.');
  });

  it('trains on a sequence what it acted on step by step: the same log probabilities and values', () => {
    const net = recurrentModel();
    const random = new SeededRandom(5);
    const steps = 8;
    const obs = observations(spec, steps, random);
    const perStep = (t: number) => [obs[0].subarray(t * 3, t * 3 + 3), obs[1].subarray(t * 2, t * 2 + 2)];
    const start = randomMemories(1, 10, random);
    let memories = start;
    const actedLogProbs: number[] = [];
    const actions: number[] = [];
    for (let t = 0; t < steps; t++) {
      const out = net.act(perStep(t), 1, null, { memories });
      actedLogProbs.push(out.logProbs.discrete[0]);
      actions.push(out.action.discrete[0]);
      memories = out.memories!;
    }
    const criticStart = randomMemories(1, 10, random);
    const critic = net.criticValuesInSequences(obs, steps, criticStart, 4);
    // Each step carries the memories its sequence starts from: the initial ones, then those after step 3.
    expect([...critic.stepMemories.subarray(0, 10)]).toEqual([...criticStart]);
    expect([...critic.stepMemories.subarray(30, 40)]).toEqual([...criticStart]);
    const secondStart = critic.stepMemories.subarray(40, 50);
    expect([...critic.stepMemories.subarray(70, 80)]).toEqual([...secondStart]);
    // One step of the critic from the second sequence's memories gives that step's value.
    const single = net.values([obs[0].subarray(12, 15), obs[1].subarray(8, 10)], 1, secondStart.slice());
    expect(single.extrinsic[0]).toBeCloseTo(critic.values.extrinsic[4], 5);

    // Training: one sequence of 8 for the actor; the critic as two sequences of 4.
    net.computeGradient(
      obs,
      steps,
      (outputs) => {
        const probs = new Float64Array(3);
        for (let t = 0; t < steps; t++) {
          const logits = Float64Array.from([0, 1, 2], (k) => outputs.logits[k * steps + t]);
          maskedSoftmax(logits, new Float64Array([1, 1, 1]), 3, probs);
          expect(categoricalLogProb(probs, actions[t])).toBeCloseTo(actedLogProbs[t], 4);
        }
      },
      { length: 8, actor: start, critic: criticStart },
    );
    const fourByFour = new Float32Array(20);
    fourByFour.set(criticStart, 0);
    fourByFour.set(secondStart, 10);
    net.computeGradient(
      obs,
      steps,
      (outputs) => {
        for (let t = 0; t < steps; t++) expect(outputs.values[0][t]).toBeCloseTo(critic.values.extrinsic[t], 4);
      },
      { length: 4, actor: new Float32Array(20), critic: fourByFour },
    );
    expect(() => net.computeGradient(obs, steps, () => undefined)).toThrow('needs their memories');
  });

  it.each([false, true])('backpropagates through time into every block (shared critic: %s), as finite differences say', (sharedCritic) => {
    const net = recurrentModel(sharedCritic);
    const random = new SeededRandom(7);
    const steps = 6;
    const obs = observations(spec, steps, random);
    const sequences = { length: 3, actor: randomMemories(2, 10, random), critic: randomMemories(2, 10, random) };
    const lossFunction = headLoss(random);
    const loss = (): number => net.computeGradient(obs, steps, lossFunction, sequences).loss;
    const gradient = Float32Array.from(net.computeGradient(obs, steps, lossFunction, sequences).gradient);
    const numeric = (index: number) => centralDifference(net.parameters, index, 1e-3, loss, () => net.parametersChanged());
    const blocks = net.blocks.filter((b) => /lstm|layers\.0\.weight|mu|branches|value_heads/.test(b.name));
    for (const block of blocks) {
      const values = blockValues(gradient, block);
      const largest = [...values.keys()].sort((a, b) => Math.abs(values[b]) - Math.abs(values[a])).slice(0, 2);
      expect(Math.abs(values[largest[0]])).toBeGreaterThan(1e-5);
      for (const k of largest) {
        const expected = numeric(block.offset + k);
        if (Math.abs(expected - values[k]) > 2e-3 + 0.03 * Math.abs(expected)) {
          throw new Error(`${block.name}[${k}]: backward gives ${values[k]}, finite differences ${expected}`);
        }
      }
    }
  });
});
