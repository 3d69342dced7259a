/**
 * The replicated cases' configurations load as upstream's dummy configs are built in Python:
 * PPO's and POCA's keep their settings classes' linear epsilon and beta schedules beside the
 * constant learning rate (from YAML the two would follow learning_rate_schedule, which would
 * hold the clip range at 0.2 and the entropy bonus at 5e-3 for the whole run).
 */
import { memoryLogger } from '../../src/common/logger';
import { settingsForBehavior } from '../../src/config';
import { load } from '../config/config-helpers';
import { caseConfiguration, upstreamCase } from './upstream-cases';

describe("upstream's cases", () => {
  it.each(['test_simple_ppo[(0, 1)]', 'test_simple_poca[(0, 1)]'])('%s: a constant learning rate, linear epsilon and beta', (name) => {
    const { options } = load(caseConfiguration(upstreamCase(name)));
    const { hyperparameters, max_steps } = settingsForBehavior(options, '1D', memoryLogger()) as { hyperparameters: Record<string, unknown>; max_steps: number };
    expect(hyperparameters).toMatchObject({
      learning_rate: 5.0e-3,
      learning_rate_schedule: 'constant',
      epsilon_schedule: 'linear',
      beta_schedule: 'linear',
      batch_size: 16,
      buffer_size: 64,
    });
    expect(max_steps).toBe(3000);
  });
});
