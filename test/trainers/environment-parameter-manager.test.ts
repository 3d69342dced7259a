/**
 * Curriculum lessons as upstream's EnvironmentParameterManager and CompletionCriteriaSettings
 * (test_env_param_manager.py): the completion measures, smoothing, min_lesson_length, the last
 * lesson, sampler seeds, and lesson numbers kept in the training status for --resume.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { loadRunOptions } from '../../src/config';
import type { CompletionCriteriaSettings } from '../../src/config/settings';
import { StatusType, TrainingStatus } from '../../src/stats';
import {
  CurriculumProgress,
  EnvironmentParameterManager,
  describeSampler,
  needIncrement,
} from '../../src/trainers/environment-parameter-manager';
import { tempDir } from '../helpers/paths';

/** Upstream's test_everything_config_yaml. */
const EVERYTHING_YAML = `
environment_parameters:
  param_1:
    curriculum:
      - name: Lesson1
        completion_criteria:
          measure: reward
          behavior: fake_behavior
          threshold: 30
          min_lesson_length: 100
          require_reset: true
        value: 1
      - name: Lesson2
        completion_criteria:
          measure: progress
          behavior: fake_behavior
          threshold: 0.5
          min_lesson_length: 100
          require_reset: false
        value: 2
      - name: Lesson3
        value:
          sampler_type: uniform
          sampler_parameters:
            min_value: 1
            max_value: 3
  param_2:
    sampler_type: gaussian
    sampler_parameters:
      mean: 4
      st_dev: 5
  param_3: 20
`;

function parameterSettings() {
  const folder = tempDir('curriculum');
  fs.writeFileSync(path.join(folder, 'config.yaml'), EVERYTHING_YAML);
  return loadRunOptions(['config.yaml'], folder, memoryLogger()).environment_parameters;
}

function criteria(overrides: Partial<CompletionCriteriaSettings>): CompletionCriteriaSettings {
  return {
    behavior: 'fake_behavior',
    measure: 'reward',
    min_lesson_length: 0,
    signal_smoothing: false,
    threshold: 0,
    require_reset: false,
    ...overrides,
  };
}

const fake = (step: number, rewards: number[]): ReadonlyMap<string, CurriculumProgress> =>
  new Map([['fake_behavior', { step, maxSteps: 1000, episodeRewards: rewards }]]);

describe('needIncrement (CompletionCriteriaSettings.need_increment)', () => {
  it('progress: completes once step / max_steps is above the threshold', () => {
    const progress = criteria({ measure: 'progress', threshold: 0.5 });
    expect(needIncrement(progress, 0.5, [], 0).increment).toBe(false);
    expect(needIncrement(progress, 0.51, [], 0).increment).toBe(true);
  });

  it('reward: completes once the mean reward is above the threshold; no episode, no completion', () => {
    const reward = criteria({ threshold: 1 });
    expect(needIncrement(reward, 0, [], 0).increment).toBe(false);
    expect(needIncrement(reward, 0, [0.5, 1.5], 0).increment).toBe(false);
    expect(needIncrement(reward, 0, [1, 1.5], 0).increment).toBe(true);
  });

  it('nothing completes before min_lesson_length episodes, whatever the measure', () => {
    const progress = criteria({ measure: 'progress', min_lesson_length: 3 });
    expect(needIncrement(progress, 0.9, [1, 1], 0).increment).toBe(false);
    expect(needIncrement(progress, 0.9, [1, 1, 1], 0).increment).toBe(true);
  });

  it('signal_smoothing blends the mean 3/4 with the previous smoothed value 1/4', () => {
    const smoothed = criteria({ threshold: 0.9, signal_smoothing: true });
    const first = needIncrement(smoothed, 0, [1], 0);
    expect(first).toEqual({ increment: false, smoothing: 0.75 });
    const second = needIncrement(smoothed, 0, [1], first.smoothing);
    expect(second.smoothing).toBeCloseTo(0.9375, 12);
    expect(second.increment).toBe(true);
    // Without smoothing the smoothed value is left as it was.
    expect(needIncrement(criteria({ threshold: 0.9 }), 0, [1], 0.3)).toEqual({ increment: true, smoothing: 0.3 });
  });
});

describe('EnvironmentParameterManager (upstream test_create_manager)', () => {
  it('seeds unseeded samplers from the run seed, in order, and starts every parameter at lesson 0', () => {
    const manager = new EnvironmentParameterManager(parameterSettings(), 1337, false, new TrainingStatus(), memoryLogger());
    expect(manager.minimumRewardBufferSize('fake_behavior')).toBe(100);
    expect(manager.minimumRewardBufferSize('other')).toBe(1);
    expect(Object.fromEntries(manager.currentLessonNumbers())).toEqual({ param_1: 0, param_2: 0, param_3: 0 });
    expect(manager.currentSamplers()).toEqual({
      param_1: { sampler_type: 'constant', sampler_parameters: { seed: 1337, value: 1 } },
      param_2: { sampler_type: 'gaussian', sampler_parameters: { seed: 1337 + 3, mean: 4, st_dev: 5 } },
      param_3: { sampler_type: 'constant', sampler_parameters: { seed: 1337 + 4, value: 20 } },
    });
  });

  it('moves through the lessons as upstream, stays in the last one, and logs each change', () => {
    const status = new TrainingStatus();
    const logger = memoryLogger();
    const manager = new EnvironmentParameterManager(parameterSettings(), 1337, false, status, logger);
    // Not enough episodes, then not enough reward.
    expect(manager.updateLessons(fake(500, new Array(99).fill(1000)))).toEqual({ updated: false, mustReset: false });
    expect(manager.updateLessons(fake(500, new Array(101).fill(1)))).toEqual({ updated: false, mustReset: false });
    // Only the last 100 episodes count (upstream's reward buffer holds min_lesson_length).
    const oldLowThenHigh = [...new Array(50).fill(-1e6), ...new Array(100).fill(1000)];
    expect(manager.updateLessons(fake(500, oldLowThenHigh))).toEqual({ updated: true, mustReset: true });
    expect(Object.fromEntries(manager.currentLessonNumbers())).toEqual({ param_1: 1, param_2: 0, param_3: 0 });
    expect(status.getParameterState('param_1', StatusType.LESSON_NUM)).toBe(1);
    expect(logger.lines.at(-1)).toEqual({
      level: 'info',
      message: "Parameter 'param_1' is in lesson 'Lesson2' and has value 'Float: value=2.0'.",
    });
    // Progress 0.5 is not above 0.5; 0.7 is, and this lesson needs no reset.
    expect(manager.updateLessons(fake(500, new Array(101).fill(0)))).toEqual({ updated: false, mustReset: false });
    expect(manager.updateLessons(fake(700, new Array(101).fill(0)))).toEqual({ updated: true, mustReset: false });
    expect(manager.currentSamplers().param_1).toEqual({
      sampler_type: 'uniform',
      sampler_parameters: { seed: 1337 + 2, min_value: 1, max_value: 3 },
    });
    expect(logger.lines.at(-1)!.message).toBe(
      "Parameter 'param_1' is in lesson 'Lesson3' and has value 'Uniform sampler: min=1.0, max=3.0'.",
    );
    // The last lesson never ends.
    expect(manager.updateLessons(fake(1000, new Array(101).fill(1000)))).toEqual({ updated: false, mustReset: false });
    expect(manager.currentLessonNumbers().get('param_1')).toBe(2);
  });

  it('skips lessons whose behavior has no trainer yet', () => {
    const manager = new EnvironmentParameterManager(parameterSettings(), 1, false, new TrainingStatus(), memoryLogger());
    const other = new Map([['other', { step: 999, maxSteps: 1000, episodeRewards: new Array(200).fill(1000) }]]);
    expect(manager.updateLessons(other)).toEqual({ updated: false, mustReset: false });
  });

  it('restores the lessons saved in training_status.json when resuming, and only then', () => {
    const file = path.join(tempDir('curriculum-status'), 'training_status.json');
    const status = new TrainingStatus();
    const manager = new EnvironmentParameterManager(parameterSettings(), 1337, false, status, memoryLogger());
    manager.updateLessons(fake(500, new Array(101).fill(1000)));
    status.save(file);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).param_1).toEqual({ lesson_num: 1 });

    const resumed = TrainingStatus.load(file, memoryLogger());
    const restored = new EnvironmentParameterManager(parameterSettings(), 1337, true, resumed, memoryLogger());
    expect(restored.currentLessonNumbers().get('param_1')).toBe(1);
    expect(restored.currentSamplers().param_1.sampler_parameters).toEqual({ seed: 1338, value: 2 });

    const fresh = new EnvironmentParameterManager(parameterSettings(), 1337, false, TrainingStatus.load(file, memoryLogger()), memoryLogger());
    expect(fresh.currentLessonNumbers().get('param_1')).toBe(0);
  });

  it('describes samplers as upstream\'s __str__', () => {
    expect(describeSampler({ sampler_type: 'gaussian', sampler_parameters: { seed: 1, mean: 1, st_dev: 2 } })).toBe(
      'Gaussian sampler: mean=1.0, stddev=2.0',
    );
    expect(
      describeSampler({ sampler_type: 'multirangeuniform', sampler_parameters: { seed: 1, intervals: [[1, 2], [3, 4]] } }),
    ).toBe('MultiRangeUniform sampler: intervals=[(1.0, 2.0), (3.0, 4.0)]');
  });
});
