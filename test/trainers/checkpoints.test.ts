/**
 * Checkpoints in a real results folder: files named per step, checkpoint.ckpt as the latest,
 * training_status.json records, keep_checkpoints, and restoring the state into a fresh trainer.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { settingsForBehavior } from '../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { StatsRegistry, TrainingStatus } from '../../src/stats';
import { readModelContract } from '../../src/export/onnx-contract';
import { LATEST_CHECKPOINT_NAME, NonFiniteModelError, loadLatestCheckpoint, saveCheckpoint, saveFinalCheckpoint } from '../../src/trainers/checkpoints';
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
      saveCheckpoint({ behaviorName: 'B', spec: SPEC, folder, trainer: saved, step, reward: 0.5, keepCheckpoints: 2 }, status);
    }
    expect(fs.readdirSync(folder).sort()).toEqual(['B-200.ckpt', 'B-200.onnx', 'B-300.ckpt', 'B-300.onnx', LATEST_CHECKPOINT_NAME]);
    // As upstream: the record names the exported model, the training state is its auxiliary file.
    expect(status.checkpoints('B').map((c) => [c.steps, path.basename(c.file_path), c.auxillary_file_paths.map((f) => path.basename(f)), c.reward])).toEqual([
      [200, 'B-200.onnx', ['B-200.ckpt'], 0.5],
      [300, 'B-300.onnx', ['B-300.ckpt'], 0.5],
    ]);
    expect(readModelContract(fs.readFileSync(path.join(folder, 'B-300.onnx'))).inputs.map((i) => i.name)).toEqual(['obs_0', 'action_masks']);

    const restored = trainer(2);
    expect(restored.model.parameters).not.toEqual(saved.model.parameters);
    expect(loadLatestCheckpoint(folder, restored)).toBe(300);
    expect(restored.model.parameters).toEqual(saved.model.parameters);
    expect(restored.model.normalizer!.mean).toEqual(saved.model.normalizer!.mean);
    expect(restored.optimizer.adam.step).toBe(7);
  });

  it('at the end of a run, copies the last model to <run>/<Behavior>.onnx and records that copy as final', () => {
    const runDir = tempDir('final-checkpoint');
    const folder = path.join(runDir, 'B');
    const status = new TrainingStatus();
    const request = { behaviorName: 'B', spec: SPEC, folder, trainer: trainer(1), reward: null, keepCheckpoints: 5 };
    saveCheckpoint({ ...request, step: 100 }, status);
    const final = saveFinalCheckpoint({ ...request, step: 100 }, status, runDir);
    expect(final.file_path).toBe(path.join(runDir, 'B.onnx'));
    expect(fs.readFileSync(final.file_path)).toEqual(fs.readFileSync(path.join(folder, 'B-100.onnx')));
    expect(status.finalCheckpoint('B')?.file_path).toBe(final.file_path);
    // The final checkpoint at the step of the last one keeps that one's files.
    expect(fs.existsSync(path.join(folder, 'B-100.ckpt'))).toBe(true);
  });

  it('never writes a model holding NaN or infinity, and keeps the files written before', () => {
    const runDir = tempDir('non-finite-checkpoint');
    const folder = path.join(runDir, 'B');
    const status = new TrainingStatus();
    const diverging = trainer(1);
    const request = { behaviorName: 'B', spec: SPEC, folder, trainer: diverging, reward: null, keepCheckpoints: 5 };
    saveFinalCheckpoint({ ...request, step: 100 }, status, runDir);
    const files = () => new Map([...fs.readdirSync(folder).map((f) => path.join(folder, f)), path.join(runDir, 'B.onnx')].map((f) => [f, fs.readFileSync(f).toString('base64')]));
    const before = files();

    diverging.model.parameters[3] = NaN;
    diverging.model.parameters[5] = Infinity;
    diverging.model.parametersChanged();
    expect(() => saveCheckpoint({ ...request, step: 200 }, status)).toThrow(
      `The model of behavior B holds 2 NaN or infinite values (in parameters): it was not saved, and the checkpoints already in ${folder} ` +
        'and its final model are kept as they were.',
    );
    expect(() => saveFinalCheckpoint({ ...request, step: 200 }, status, runDir)).toThrow(NonFiniteModelError);
    expect(files()).toEqual(before);
    expect(status.checkpoints('B').map((c) => c.steps)).toEqual([100]);
  });

  (fs.existsSync('/dev/full') ? it : it.skip)('on a full disk, removes the checkpoint\'s files and still writes the final model alone', () => {
    const runDir = tempDir('full-disk-checkpoint');
    const folder = path.join(runDir, 'B');
    fs.mkdirSync(folder);
    // Writes to /dev/full fail with a real ENOSPC.
    fs.symlinkSync('/dev/full', path.join(folder, `${LATEST_CHECKPOINT_NAME}.partial`));
    const request = { behaviorName: 'B', spec: SPEC, folder, trainer: trainer(1), step: 100, reward: null, keepCheckpoints: 5 };
    const status = new TrainingStatus();
    expect(() => saveFinalCheckpoint(request, status, runDir)).toThrow(
      new RegExp(
        `^Could not write ${LATEST_CHECKPOINT_NAME} in ${folder}: no space left on the device \\(ENOSPC\\)\\. .* ` +
          `The final model was written alone: ${path.join(runDir, 'B.onnx')}\\.$`,
      ),
    );
    expect(readModelContract(fs.readFileSync(path.join(runDir, 'B.onnx'))).inputs.map((i) => i.name)).toEqual(['obs_0', 'action_masks']);
    expect(fs.readdirSync(folder)).toEqual([]);
    expect(status.checkpoints('B')).toEqual([]);
  });

  it('says which file is missing when there is nothing to resume from', () => {
    const folder = path.join(tempDir('no-checkpoint'), 'B');
    expect(() => loadLatestCheckpoint(folder, trainer(1))).toThrow(
      `No checkpoint to start from: ${path.join(folder, LATEST_CHECKPOINT_NAME)} does not exist.`,
    );
  });
});
