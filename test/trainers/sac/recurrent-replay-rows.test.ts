/**
 * SAC with memory against Unity ML-Agents' own: what its trainer puts in the replay buffer. The
 * fixture (fixtures/record-recurrent-replay-rows.py) holds the first 30 trajectories upstream's
 * SACTrainer (release_21, torch) processed on test_hybrid_recurrent_sac's case with time_horizon
 * 3, so that episodes arrive in pieces, each padded to a sequence of 16, with the critic's
 * weights they were processed with and the rows each added. Ours, fed the same trajectories with
 * the same critic, must add the same rows: observations and next observations, actions, rewards,
 * dones, the memories each decision started from, the critic's memories carried from piece to
 * piece of an episode, and the masks.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { memoryLogger } from '../../../src/common/logger';
import { settingsForBehavior } from '../../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { StatsRegistry } from '../../../src/stats';
import type { ReplayRows } from '../../../src/trainers/sac/replay-buffer';
import { SacTrainer, SacTrainerSettings } from '../../../src/trainers/sac/trainer';
import { caseConfiguration, upstreamCase } from '../../cli/upstream-cases';
import { load } from '../../config/config-helpers';
import { expectCloseToScale } from '../../helpers/expect-close';
import { actorCriticTorchName } from '../../helpers/torch-layouts';
import { loadTorchWeights, RecordedTrajectory, trajectoryOf } from '../../helpers/upstream-fixtures';

interface RecordedSacTrajectory extends RecordedTrajectory {
  rows: Record<'obs' | 'next_obs' | 'continuous_action' | 'discrete_action' | 'rewards' | 'done' | 'memories' | 'critic_memories' | 'masks', number[]>;
}

interface Fixture {
  critic: Record<string, number[]>;
  trajectories: RecordedSacTrajectory[];
}

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', 'recurrent-replay-rows.json'), 'utf8')) as Fixture;

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [1], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'obs_0' }],
  actionSpec: new ActionSpec(1, [2]),
};

function settings(): SacTrainerSettings {
  const config = YAML.parse(caseConfiguration(upstreamCase('test_hybrid_recurrent_sac')));
  config.behaviors['1D'].time_horizon = 3;
  const { options } = load(YAML.stringify(config));
  return settingsForBehavior(options, '1D', memoryLogger()) as SacTrainerSettings;
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("SAC's replay rows with memory against upstream's", () => {
  it('records episodes in several pieces, each padded to a whole sequence', () => {
    const pieces = fixture.trajectories.filter((t, i) => i > 0 && !fixture.trajectories[i - 1].done_reached);
    expect(pieces.length).toBeGreaterThan(10);
    for (const t of fixture.trajectories) expect(t.rows.masks.length).toBe(16);
  });

  it("adds upstream's rows for each trajectory", () => {
    const trainer = new SacTrainer({ behaviorName: '1D', spec: SPEC, settings: settings(), stats: new StatsRegistry().reporter('1D'), seed: 1 });
    const model = trainer.model;
    const criticBlocks = model.blocks.filter((block) => block.name.startsWith('critic.'));
    expect(criticBlocks.length).toBeGreaterThan(0);
    loadTorchWeights(model.parameters, criticBlocks, () => fixture.critic, actorCriticTorchName);
    model.parametersChanged();
    const added: ReplayRows[] = [];
    const add = trainer.replayBuffer.add.bind(trainer.replayBuffer);
    jest.spyOn(trainer.replayBuffer, 'add').mockImplementation((rows) => {
      added.push(rows);
      add(rows);
    });

    fixture.trajectories.forEach((recorded, i) => {
      trainer.processTrajectory(trajectoryOf(recorded));
      const ours = added[i];
      const theirs = recorded.rows;
      const what = (column: string) => `${column} of trajectory ${i}`;
      expect(ours.count).toBe(theirs.masks.length);
      expect(Array.from(ours.masks!)).toEqual(theirs.masks);
      expect(Array.from(ours.dones)).toEqual(theirs.done);
      expect(Array.from(ours.discreteActions)).toEqual(theirs.discrete_action);
      expectCloseToScale(ours.observations[0], theirs.obs, what('observations'));
      expectCloseToScale(ours.nextObservations[0], theirs.next_obs, what('next observations'));
      expectCloseToScale(ours.continuousActions, theirs.continuous_action, what('continuous actions'));
      expectCloseToScale(ours.rewards, theirs.rewards, what('rewards'));
      expectCloseToScale(ours.memories!, theirs.memories, what('memories'));
      expectCloseToScale(ours.criticMemories!, theirs.critic_memories, what('critic memories'));
    });
  });
});
