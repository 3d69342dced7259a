/**
 * Checkpoints in a real results folder: files named per step, checkpoint.ckpt as the latest,
 * training_status.json records, keep_checkpoints, and restoring the state into a fresh trainer.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/communicator/logger';
import { settingsForBehavior } from '../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { StatsRegistry, TrainingStatus } from '../../src/stats';
import { LATEST_CHECKPOINT_NAME, loadLatestCheckpoint, saveCheckpoint } from '../../src/trainers/checkpoints';
import { PpoTrainer, PpoTrainerSettings } from '../../src/trainers/ppo/trainer';
import { load } from '../config/config-helpers';
import { tempDir } from '../helpers/paths';

const SPEC: BehaviorSpec = {
  observationSpecs: [
    { shape: [3], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' },
  ],
  actionSpec: new ActionSpec(0, [3, 2]),
};

function trainer(seed: number): PpoTrainer {
  const { options } = load('behaviors:\n  B:\n    trainer_type: ppo\n    network_settings: {normalize: true, hidden_units: 8}\n');
  const settings = settingsForBehavior(options, 'B', memoryLogger()) as PpoTrainerSettings;
  return new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings, stats: new StatsRegistry().reporter('B'), seed });
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('checkpoints', () => {
  it('keeps keep_checkpoints files, records them, and restores weights, normalizer, Adam state and step', () => {
    const folder = path.join(tempDir('checkpoints'), 'B');
    const status = new TrainingStatus();
    const saved = trainer(1);
    saved.model.updateNormalization([Float32Array.from([1, 2, 3, 4, 5, 6])], 2);
    saved.optimizer.adam.step = 7;
    for (const step of [100, 200, 300]) {
      saveCheckpoint({ behaviorName: 'B', folder, trainer: saved, step, reward: 0.5, keepCheckpoints: 2 }, status);
    }
    expect(fs.readdirSync(folder).sort()).toEqual(['B-200.ckpt', 'B-300.ckpt', LATEST_CHECKPOINT_NAME]);
    expect(status.checkpoints('B').map((c) => [c.steps, path.basename(c.file_path), c.reward])).toEqual([
      [200, 'B-200.ckpt', 0.5],
      [300, 'B-300.ckpt', 0.5],
    ]);

    const restored = trainer(2);
    expect(restored.model.parameters).not.toEqual(saved.model.parameters);
    expect(loadLatestCheckpoint(folder, restored)).toBe(300);
    expect(restored.model.parameters).toEqual(saved.model.parameters);
    expect(restored.model.normalizer!.mean).toEqual(saved.model.normalizer!.mean);
    expect(restored.optimizer.adam.step).toBe(7);
  });

  it('says which file is missing when there is nothing to resume from', () => {
    const folder = path.join(tempDir('no-checkpoint'), 'B');
    expect(() => loadLatestCheckpoint(folder, trainer(1))).toThrow(
      `No checkpoint to start from: ${path.join(folder, LATEST_CHECKPOINT_NAME)} does not exist.`,
    );
  });
});
