/**
 * PPO with memory against Unity ML-Agents' own: each fixture holds what upstream's PPOTrainer
 * (release_21, torch; recorded by fixtures/record-recurrent-ppo-update.py) did on
 * test_recurrent_ppo's MemoryEnvironment with time_horizon 10, memory_size 16 and
 * sequence_length 4, so that episodes arrive in several pieces and pieces end in padded
 * sequences: recurrent-ppo-update-1.json its first update (initial weights),
 * recurrent-ppo-update-12.json its twelfth (step 671, weights trained). Each holds the weights,
 * every trajectory since the update before (each step with the memories its decision started
 * from), the rows each trajectory added to the update buffer (the critic's memories carried from
 * piece to piece at each sequence's start, the actor's, the masks, returns and advantages), and
 * the update on the first two sequences after the advantages' standardization (losses and
 * gradients). Ours, loaded with the same weights and fed the same trajectories, must give the
 * same numbers, and acting from each step's memories must reach the next step's, as upstream's
 * policy did.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { memoryLogger } from '../../../src/common/logger';
import { settingsForBehavior } from '../../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { blockValues } from '../../../src/networks/layers/layer';
import { StatsRegistry } from '../../../src/stats';
import { BufferKey, RewardSignalKeys } from '../../../src/trainers/buffer';
import { PpoTrainer, PpoTrainerSettings } from '../../../src/trainers/ppo/trainer';
import { minibatchOf } from '../../../src/trainers/ppo/update';
import { caseConfiguration, upstreamCase } from '../../cli/upstream-cases';
import { load } from '../../config/config-helpers';
import { expectCloseToScale } from '../../helpers/expect-close';
import { actorCriticTorchName } from '../../helpers/torch-layouts';
import { firstMinibatchAsUpstream, loadTorchWeights, RecordedStep, RecordedTrajectory, trajectoryOf } from '../../helpers/upstream-fixtures';

interface RecordedPpoTrajectory extends RecordedTrajectory {
  steps: Array<RecordedStep & { memory: number[] }>;
  /** Where upstream's critic started this piece: the end of the piece before, or none. */
  critic_memory_before: number[] | null;
  rows: Record<'critic_memories' | 'memories' | 'masks' | 'returns' | 'advantages', number[]>;
}

interface Fixture {
  actor: Record<string, number[]>;
  critic: Record<string, number[]>;
  trajectories: RecordedPpoTrajectory[];
  standardized_advantages: number[];
  losses: Record<string, number>;
  gradients: Record<'actor' | 'critic', Record<string, number[]>>;
  step: number;
}

const FIXTURES = ['recurrent-ppo-update-1.json', 'recurrent-ppo-update-12.json'];
const readFixture = (name: string) => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', name), 'utf8')) as Fixture;
const MEMORY_SIZE = 16;

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [1], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'obs_0' }],
  actionSpec: new ActionSpec(0, [2]),
};

/** test_recurrent_ppo's configuration with the recorder's changes (upstream's ppo_dummy_config evolved). */
function settings(): PpoTrainerSettings {
  const recurrent = upstreamCase('test_recurrent_ppo[(0, 1)]');
  const config = YAML.parse(
    caseConfiguration({
      ...recurrent,
      maxSteps: 3000,
      hyperparameters: { learning_rate: 1.0e-3, batch_size: 8, buffer_size: 64 },
      network: { memory: { memory_size: MEMORY_SIZE, sequence_length: 4 } },
    }),
  );
  config.behaviors['1D'].time_horizon = 10;
  const { options } = load(YAML.stringify(config));
  return settingsForBehavior(options, '1D', memoryLogger()) as PpoTrainerSettings;
}

/** A trainer with upstream's weights that has processed upstream's trajectories. */
function processedTrainer(fixture: Fixture): PpoTrainer {
  const trainer = new PpoTrainer({ behaviorName: '1D', spec: SPEC, settings: settings(), stats: new StatsRegistry().reporter('1D'), seed: 1 });
  loadTorchWeights(trainer.model.parameters, trainer.model.blocks, (block) => (block.startsWith('actor.') ? fixture.actor : fixture.critic), actorCriticTorchName);
  trainer.model.parametersChanged();
  for (const recorded of fixture.trajectories) trainer.processTrajectory(trajectoryOf(recorded));
  return trainer;
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("PPO with memory against upstream's: trajectory processing and update", () => {
  it('records episodes in several pieces, each piece of a going episode starting from where the one before left the critic', () => {
    const { trajectories } = readFixture('recurrent-ppo-update-12.json');
    const pieces = trajectories.filter((t, i) => i > 0 && trajectories[i - 1].agent_id === t.agent_id);
    expect(pieces.length).toBeGreaterThan(0);
    for (const piece of pieces) expect(piece.critic_memory_before).not.toBeNull();
    // Each episode's first piece starts afresh (upstream keys the critic's memories by "", which
    // is the agent's own here: one agent, its episodes one after another).
    for (const [i, t] of trajectories.entries()) if (i === 0 || trajectories[i - 1].done_reached) expect(t.critic_memory_before).toBeNull();
  });

  it.each(FIXTURES)("acts as upstream's policy did: from each step's memories, the next step's; zeros at an episode's start (%s)", (name) => {
    const fixture = readFixture(name);
    const trainer = processedTrainer({ ...fixture, trajectories: [] });
    let compared = 0;
    fixture.trajectories.forEach((recorded, i) => {
      const episodeStart = i === 0 ? recorded.critic_memory_before === null : fixture.trajectories[i - 1].done_reached;
      if (episodeStart) expect(recorded.steps[0].memory).toEqual(new Array(MEMORY_SIZE).fill(0));
      recorded.steps.forEach((step, t) => {
        const next = t + 1 < recorded.steps.length ? recorded.steps[t + 1] : fixture.trajectories[i + 1]?.steps[0];
        if (next === undefined || (t + 1 === recorded.steps.length && recorded.done_reached)) return;
        const acted = trainer.model.act([Float32Array.from(step.obs)], 1, null, { memories: Float32Array.from(step.memory) });
        expectCloseToScale(acted.memories!, next.memory, `memories after step ${t} of trajectory ${i}`);
        compared++;
      });
    });
    expect(compared).toBeGreaterThan(40);
  });

  it.each(FIXTURES)("gives upstream's rows for each trajectory: sequences padded, critic memories carried, returns and advantages (%s)", (name) => {
    const fixture = readFixture(name);
    const buffer = processedTrainer(fixture).updateBuffer;
    let start = 0;
    fixture.trajectories.forEach((recorded, i) => {
      const rows = recorded.rows.masks.length;
      const column = (key: string, width = 1) => buffer.get(key).rows.subarray(start * width, (start + rows) * width);
      expect(Array.from(column(BufferKey.MASKS))).toEqual(recorded.rows.masks);
      expectCloseToScale(column(BufferKey.MEMORY, MEMORY_SIZE), recorded.rows.memories, `memories of trajectory ${i}`);
      expectCloseToScale(column(BufferKey.CRITIC_MEMORY, MEMORY_SIZE), recorded.rows.critic_memories, `critic memories of trajectory ${i}`);
      expectCloseToScale(column(RewardSignalKeys.returns('extrinsic')), recorded.rows.returns, `returns of trajectory ${i}`);
      expectCloseToScale(column(BufferKey.ADVANTAGES), recorded.rows.advantages, `advantages of trajectory ${i}`);
      start += rows;
    });
    expect(buffer.numExperiences).toBe(start);
  });

  it.each(FIXTURES)("gives upstream's losses and gradients on the update's first two sequences (%s)", (name) => {
    const fixture = readFixture(name);
    const trainer = processedTrainer(fixture);
    const optimizer = trainer.optimizer;
    const apply = jest.spyOn(optimizer.adam, 'apply');
    const batch = minibatchOf(firstMinibatchAsUpstream(trainer.updateBuffer, trainer.settings.hyperparameters.batch_size, fixture.standardized_advantages), ['extrinsic'], 4);
    const stats = optimizer.update(batch, fixture.step);
    for (const key of ['Losses/Policy Loss', 'Losses/Value Loss', 'Policy/Learning Rate', 'Policy/Epsilon', 'Policy/Beta'] as const) {
      expect(stats[key]).toBeCloseTo(fixture.losses[key], 5);
    }
    const gradient = apply.mock.calls[0][1];
    for (const block of trainer.model.blocks) {
      const theirs = (block.name.startsWith('actor.') ? fixture.gradients.actor : fixture.gradients.critic)[actorCriticTorchName(block.name)];
      expectCloseToScale(blockValues(gradient, block), theirs, `gradient of ${block.name}`, 1e-3);
    }
  });
});
