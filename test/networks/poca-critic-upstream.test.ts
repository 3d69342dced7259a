/**
 * POCA's critic against Unity ML-Agents' own: fixtures/poca-critic.json holds what upstream's
 * POCAValueNetwork (release_21, torch; recorded by the script beside it) gave on its weights for
 * a batch of 4 samples of 2 groupmate slots, one slot empty: the group values (critic_pass), the
 * baselines (baseline), and the gradients of a loss on both; with an image (simple encoder) beside
 * a normalized vector observation, with a variable-length observation and a goal signal, and with
 * memory (2 sequences of 2 steps, each pass from memories of its own). Ours, on the same weights
 * and batch, gives the same values, baselines, memories after, member count and gradients.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ActionSpec, BehaviorSpec, ObservationType, observationSize } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { blockValues } from '../../src/networks/layers/layer';
import { CriticEstimates, GroupActionBatch, PocaCritic } from '../../src/networks/poca-critic';
import { expectCloseToScale } from '../helpers/expect-close';
import { converted, pocaCriticTorchName } from '../helpers/torch-layouts';
import { entityObservation, network, vectorObservation, visualObservation } from './model-fixtures';

interface Case {
  sequence_length: number;
  parameters: Record<string, number[]>;
  observations: number[][];
  /** per slot, per observation; an empty slot's values null */
  group_observations: Array<Array<Array<number | null>>>;
  group_continuous_actions: number[][];
  group_discrete_actions: number[][];
  value_memories: number[];
  baseline_memories: number[];
  value_memories_after: number[];
  baseline_memories_after: number[];
  values: Record<string, number[]>;
  baselines: Record<string, number[]>;
  current_max_agents: number;
  loss_weights: number[];
  gradients: Record<string, number[]>;
}

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'poca-critic.json'), 'utf8')) as Record<string, Case>;
const COUNT = 4;
const SLOTS = 2;
const SIGNALS = ['extrinsic', 'gail'];

const CASES: Array<[string, BehaviorSpec, ReturnType<typeof network>]> = [
  [
    'image',
    { observationSpecs: [visualObservation(3, 20, 20), vectorObservation(3)], actionSpec: new ActionSpec(1, [2]) },
    network({ normalize: true, hidden_units: 8, num_layers: 2, vis_encode_type: 'simple' }),
  ],
  [
    'variable length and goal',
    {
      observationSpecs: [vectorObservation(3), entityObservation(4, 3), vectorObservation(2, ObservationType.GOAL_SIGNAL)],
      actionSpec: new ActionSpec(2, []),
    },
    network({ normalize: true, hidden_units: 8, num_layers: 1 }),
  ],
  ['memory', { observationSpecs: [vectorObservation(3)], actionSpec: new ActionSpec(0, [3]) }, network({ hidden_units: 8, num_layers: 2, memory: { memory_size: 6, sequence_length: 2 } })],
];

/** Our critic with upstream's weights, every one of them loaded. */
export function upstreamCritic(upstream: Case, spec: BehaviorSpec, settings: ReturnType<typeof network>): PocaCritic {
  const critic = new PocaCritic(spec, settings, SIGNALS, 1);
  const loaded = new Set<string>();
  for (const block of critic.blocks) {
    const theirs = pocaCriticTorchName(block.name);
    if (upstream.parameters[theirs] === undefined) throw new Error(`The fixture has no ${theirs} for ${block.name}.`);
    blockValues(critic.parameters, block).set(converted(block, upstream.parameters[theirs], true));
    loaded.add(theirs);
  }
  expect([...loaded].sort()).toEqual(Object.keys(upstream.parameters).sort());
  critic.parametersChanged();
  return critic;
}

/** The fixture's batch in our layout: sample after sample, slot after slot. */
export function groupBatchOf(upstream: Case, spec: BehaviorSpec): GroupActionBatch {
  const interleaved = (perSlot: Array<Array<number | null>>, width: number) => {
    const rows = new Float32Array(COUNT * SLOTS * width);
    for (let i = 0; i < COUNT; i++) {
      for (let m = 0; m < SLOTS; m++) rows.set(perSlot[m].slice(i * width, (i + 1) * width).map((v) => v ?? NaN), (i * SLOTS + m) * width);
    }
    return rows;
  };
  const { continuousSize, discreteBranches } = spec.actionSpec;
  return {
    count: COUNT,
    slots: SLOTS,
    observations: upstream.observations.map((values) => Float32Array.from(values)),
    groupObservations: spec.observationSpecs.map((obs, k) => interleaved(upstream.group_observations.map((slot) => slot[k]), observationSize(obs))),
    groupContinuousActions: interleaved(upstream.group_continuous_actions, continuousSize),
    groupDiscreteActions: interleaved(upstream.group_discrete_actions, discreteBranches.length),
  };
}

/** The recorded loss: sum of w_v * value + w_b * baseline^2 over signals and samples, with its gradient. */
export function recordedLoss(upstream: Case): (estimates: CriticEstimates, gradients: CriticEstimates) => number {
  const w = (kind: number, s: number, i: number) => upstream.loss_weights[(kind * SIGNALS.length + s) * COUNT + i];
  return (estimates, gradients) => {
    let total = 0;
    SIGNALS.forEach((_, s) => {
      for (let i = 0; i < COUNT; i++) {
        const b = estimates.baselines[s][i];
        total += w(0, s, i) * estimates.values[s][i] + w(1, s, i) * b * b;
        gradients.values[s][i] += w(0, s, i);
        gradients.baselines[s][i] += 2 * w(1, s, i) * b;
      }
    });
    return total;
  };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("POCA's critic against upstream's", () => {
  it.each(CASES)("gives upstream's values, baselines and gradients on the same weights and group (%s)", (name, spec, settings) => {
    const upstream = fixture[name];
    const critic = upstreamCritic(upstream, spec, settings);
    const batch = groupBatchOf(upstream, spec);
    critic.updateNormalization(batch.observations, COUNT);
    const sequences =
      critic.memorySize === 0
        ? undefined
        : { length: upstream.sequence_length, value: Float32Array.from(upstream.value_memories), baseline: Float32Array.from(upstream.baseline_memories) };
    const estimates = critic.estimate(batch, sequences);
    expect(critic.maxAgents).toBe(upstream.current_max_agents);
    SIGNALS.forEach((signal, s) => {
      expectCloseToScale(estimates.values[s], upstream.values[signal], `values of ${signal}`);
      expectCloseToScale(estimates.baselines[s], upstream.baselines[signal], `baselines of ${signal}`);
    });
    expectCloseToScale(estimates.memories.value, upstream.value_memories_after, 'value memories after');
    expectCloseToScale(estimates.memories.baseline, upstream.baseline_memories_after, 'baseline memories after');

    const { gradient } = critic.computeGradient(batch, recordedLoss(upstream), sequences);
    for (const block of critic.blocks) {
      const theirs = upstream.gradients[pocaCriticTorchName(block.name)];
      expectCloseToScale(blockValues(gradient, block), converted(block, theirs, true), `gradient of ${block.name}`, 1e-3);
    }
  });
});
