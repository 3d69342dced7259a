/**
 * POCA's trajectory processing and update against Unity ML-Agents' own: each fixture holds what
 * upstream's POCATrainer (release_21, torch; recorded by the script beside it) did on
 * test_simple_poca's case (MultiAgentEnvironment of 2 agents, one branch of 2, poca_dummy_config,
 * seed 1) for one update: poca-update-1.json its first (initial weights), poca-update-20.json its
 * twentieth (step 1417, weights partly trained, the first finisher's bootstrap well above 0).
 * Each holds the weights, every trajectory since the update before as its agent processor built
 * it (the first finisher's ends while its groupmate goes on, so it is bootstrapped from the
 * group's value; the last one's ends the group's episode), what processing made of each (rewards
 * with the groupmates' and the group's, baselines, TD(lambda) returns, advantages), and the
 * update on the first batch_size rows after the advantages' standardization (losses and
 * gradients). Ours, loaded with the same weights and fed the same trajectories, must give the
 * same numbers.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../../src/common/logger';
import { settingsForBehavior } from '../../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { blockValues } from '../../../src/networks/layers/layer';
import { StatsRegistry } from '../../../src/stats';
import { BufferKey, RewardSignalKeys } from '../../../src/trainers/buffer';
import { PocaTrainer, PocaTrainerSettings } from '../../../src/trainers/poca/trainer';
import { pocaMinibatchOf } from '../../../src/trainers/poca/update';
import { caseConfiguration, upstreamCase } from '../../cli/upstream-cases';
import { load } from '../../config/config-helpers';
import { expectCloseToScale } from '../../helpers/expect-close';
import { actorCriticTorchName, pocaCriticTorchName } from '../../helpers/torch-layouts';
import { firstMinibatchAsUpstream, loadTorchWeights, RecordedTrajectory, trajectoryOf } from '../../helpers/upstream-fixtures';

interface RecordedPocaTrajectory extends RecordedTrajectory {
  all_group_dones_reached: boolean;
  baselines: number[];
  rewards: number[];
  returns: number[];
  advantages: number[];
}

interface Fixture {
  actor: Record<string, number[]>;
  critic: Record<string, number[]>;
  trajectories: RecordedPocaTrajectory[];
  standardized_advantages: number[];
  current_max_agents: number;
  losses: Record<string, number>;
  gradients: Record<'actor' | 'critic', Record<string, number[]>>;
  step: number;
}

const FIXTURES = ['poca-update-1.json', 'poca-update-20.json'];
const readFixture = (name: string) => JSON.parse(fs.readFileSync(path.join(__dirname, 'fixtures', name), 'utf8')) as Fixture;

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [1], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'obs_0' }],
  actionSpec: new ActionSpec(0, [2]),
};

/** test_simple_poca's configuration: upstream's poca_dummy_config. */
function settings(): PocaTrainerSettings {
  const { options } = load(caseConfiguration(upstreamCase('test_simple_poca[(0, 1)]')));
  return settingsForBehavior(options, '1D', memoryLogger()) as PocaTrainerSettings;
}

/** A trainer with upstream's weights that has processed upstream's trajectories. */
function processedTrainer(fixture: Fixture): PocaTrainer {
  const trainer = new PocaTrainer({ behaviorName: '1D', spec: SPEC, settings: settings(), stats: new StatsRegistry().reporter('1D'), seed: 1 });
  loadTorchWeights(trainer.model.parameters, trainer.model.blocks, () => fixture.actor, actorCriticTorchName);
  trainer.model.parametersChanged();
  loadTorchWeights(trainer.critic.parameters, trainer.critic.blocks, () => fixture.critic, pocaCriticTorchName);
  trainer.critic.maxAgents = fixture.current_max_agents;
  trainer.critic.parametersChanged();
  for (const recorded of fixture.trajectories) trainer.processTrajectory(trajectoryOf(recorded));
  return trainer;
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe("POCA's processing and update against upstream's", () => {
  it('records a first finisher bootstrapped from its group and a last one ending the group episode', () => {
    const [first, last] = readFixture('poca-update-1.json').trajectories;
    expect([first.done_reached, first.all_group_dones_reached]).toEqual([true, false]);
    expect([last.done_reached, last.all_group_dones_reached]).toEqual([true, true]);
    expect(trajectoryOf(first).teammateDonesReached).toBe(false);
    expect(trajectoryOf(last).teammateDonesReached).toBe(true);
  });

  it.each(FIXTURES)("gives upstream's rewards, baselines, returns and advantages for each trajectory (%s)", (name) => {
    const fixture = readFixture(name);
    const buffer = processedTrainer(fixture).updateBuffer;
    const column = (key: string, start: number, n: number) => buffer.get(key).rows.subarray(start, start + n);
    let start = 0;
    fixture.trajectories.forEach((recorded, i) => {
      const n = recorded.steps.length;
      expectCloseToScale(column(RewardSignalKeys.rewards('extrinsic'), start, n), recorded.rewards, `rewards of trajectory ${i}`);
      expectCloseToScale(column(RewardSignalKeys.baselineEstimates('extrinsic'), start, n), recorded.baselines, `baselines of trajectory ${i}`);
      expectCloseToScale(column(RewardSignalKeys.returns('extrinsic'), start, n), recorded.returns, `returns of trajectory ${i}`);
      expectCloseToScale(column(BufferKey.ADVANTAGES, start, n), recorded.advantages, `advantages of trajectory ${i}`);
      start += n;
    });
    expect(buffer.numExperiences).toBe(start);
  });

  it.each(FIXTURES)("gives upstream's losses and gradients on the update's first minibatch (%s)", (name) => {
    const fixture = readFixture(name);
    const trainer = processedTrainer(fixture);
    const optimizer = trainer.optimizer;
    const actorApply = jest.spyOn(optimizer.actorAdam, 'apply');
    const criticApply = jest.spyOn(optimizer.criticAdam, 'apply');
    const batch = pocaMinibatchOf(firstMinibatchAsUpstream(trainer.updateBuffer, trainer.settings.hyperparameters.batch_size, fixture.standardized_advantages), ['extrinsic'], null);
    const stats = optimizer.update(batch, fixture.step);
    for (const key of ['Losses/Policy Loss', 'Losses/Value Loss', 'Losses/Baseline Loss', 'Policy/Epsilon', 'Policy/Beta'] as const) {
      expect(stats[key]).toBeCloseTo(fixture.losses[key], 5);
    }
    const actorGradient = actorApply.mock.calls[0][1];
    for (const block of trainer.model.blocks) {
      expectCloseToScale(blockValues(actorGradient, block), fixture.gradients.actor[actorCriticTorchName(block.name)], `actor gradient of ${block.name}`, 1e-3);
    }
    const criticGradient = criticApply.mock.calls[0][1];
    for (const block of trainer.critic.blocks) {
      expectCloseToScale(blockValues(criticGradient, block), fixture.gradients.critic[pocaCriticTorchName(block.name)], `critic gradient of ${block.name}`, 1e-3);
    }
  });
});
