/**
 * SAC configurations: every one of ML-Agents' own SAC examples (../shared/reference/configs/sac)
 * loads and is accepted for training, and the project's config/sac/3DBall.yaml holds upstream's
 * 3DBall hyperparameters and builds a SAC trainer for the built-in 3DBall.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../../src/common/logger';
import { checkTrainerTypesBuilt, loadRunOptions } from '../../../src/config';
import { ActionSpec } from '../../../src/env/behavior-spec';
import { StatsReporter } from '../../../src/stats';
import { SacTrainer, SacTrainerSettings } from '../../../src/trainers/sac/trainer';
import { REFERENCE_CONFIGS } from '../../config/config-helpers';
import { behavior } from '../../networks/model-fixtures';

const SAC_REFERENCE = path.join(REFERENCE_CONFIGS, 'sac');
const PROJECT_3DBALL = path.resolve(__dirname, '../../../config/sac/3DBall.yaml');
const references = fs.existsSync(SAC_REFERENCE) ? fs.readdirSync(SAC_REFERENCE).filter((name) => name.endsWith('.yaml')) : [];

describe("ML-Agents' SAC configurations", () => {
  if (references.length === 0) {
    console.log(`skipped: ../shared/reference not present (looked for ${SAC_REFERENCE})`);
    it.skip('skipped: ../shared/reference not present', () => undefined);
    return;
  }

  it.each(references)('%s loads and is accepted for training', (name) => {
    const options = loadRunOptions([path.join(SAC_REFERENCE, name)], '/', memoryLogger());
    expect(Object.values(options.behaviors).every((settings) => settings.trainer_type === 'sac')).toBe(true);
    expect(() => checkTrainerTypesBuilt(options)).not.toThrow();
  });

  it("config/sac/3DBall.yaml has upstream's 3DBall behavior settings", () => {
    const ours = loadRunOptions([PROJECT_3DBALL], '/', memoryLogger());
    const upstream = loadRunOptions([path.join(SAC_REFERENCE, '3DBall.yaml')], '/', memoryLogger());
    expect(ours.behaviors['3DBall']).toEqual(upstream.behaviors['3DBall']);
    expect(ours.engine_settings.time_scale).toBe(1000);
  });
});

describe('config/sac/3DBall.yaml', () => {
  it('builds a SAC trainer for the built-in 3DBall (8 observations, 2 continuous actions)', () => {
    const options = loadRunOptions([PROJECT_3DBALL], '/', memoryLogger());
    const settings = options.behaviors['3DBall'] as SacTrainerSettings;
    const trainer = new SacTrainer({
      behaviorName: '3DBall',
      spec: behavior([8], ActionSpec.createContinuous(2)),
      settings,
      stats: new StatsReporter('3DBall', []),
      seed: 1,
    });
    expect(trainer.replayBuffer.capacity).toBe(200000);
    expect(trainer.model.conditionalSigma).toBe(true);
    expect(trainer.model.blocks.map((b) => b.name)).toContain('actor.log_sigma.weight');
  });
});
