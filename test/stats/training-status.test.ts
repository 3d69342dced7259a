import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import {
  currentStatusMetadata,
  STATUS_FORMAT_VERSION,
  StatusType,
  TRAINING_STATUS_FILE_NAME,
  TrainingStatus,
  type ModelCheckpoint,
} from '../../src/stats/training-status';
import { tempDir } from '../helpers/paths';

const checkpoint = (steps: number, reward: number | null = 1.5): ModelCheckpoint => ({
  steps,
  file_path: `results/run/3DBall/3DBall-${steps}.onnx`,
  reward,
  creation_time: 1700000000.5 + steps,
  auxillary_file_paths: [`results/run/3DBall/3DBall-${steps}.pt`],
});

const metadata = { stats_format_version: '0.3.0', mlagents_version: '0.1.0', torch_version: 'tfjs 4.22.0' };

describe('training_status.json', () => {
  it("has upstream's shape and keys", () => {
    const file = path.join(tempDir('status'), TRAINING_STATUS_FILE_NAME);
    const status = new TrainingStatus();
    status.addCheckpoint('3DBall', checkpoint(500), 5);
    status.setFinalCheckpoint('3DBall', { ...checkpoint(1000, null), file_path: 'results/run/3DBall.onnx' });
    status.setElo('3DBall', 1212.5);
    status.setParameterState('wall_height', StatusType.LESSON_NUM, 2);
    status.save(file, metadata);

    const text = fs.readFileSync(file, 'utf8');
    expect(text.split('\n')[1]).toBe('    "3DBall": {');
    expect(JSON.parse(text)).toEqual({
      '3DBall': {
        checkpoints: [
          {
            steps: 500,
            file_path: 'results/run/3DBall/3DBall-500.onnx',
            reward: 1.5,
            creation_time: 1700000500.5,
            auxillary_file_paths: ['results/run/3DBall/3DBall-500.pt'],
          },
        ],
        final_checkpoint: {
          steps: 1000,
          file_path: 'results/run/3DBall.onnx',
          reward: null,
          creation_time: 1700001000.5,
          auxillary_file_paths: ['results/run/3DBall/3DBall-1000.pt'],
        },
        elo: 1212.5,
      },
      wall_height: { lesson_num: 2 },
      metadata: { stats_format_version: '0.3.0', mlagents_version: '0.1.0', torch_version: 'tfjs 4.22.0' },
    });
  });

  it('keeps the newest keep_checkpoints entries and hands back the dropped ones', () => {
    const status = new TrainingStatus();
    expect(status.addCheckpoint('B', checkpoint(1), 2)).toEqual([]);
    expect(status.addCheckpoint('B', checkpoint(2), 2)).toEqual([]);
    expect(status.addCheckpoint('B', checkpoint(3), 2)).toEqual([checkpoint(1)]);
    expect(status.checkpoints('B').map((c) => c.steps)).toEqual([2, 3]);
    // 0 or less keeps every checkpoint, as upstream.
    const keepAll = new TrainingStatus();
    for (let steps = 1; steps <= 4; steps++) expect(keepAll.addCheckpoint('B', checkpoint(steps), 0)).toEqual([]);
    expect(keepAll.checkpoints('B')).toHaveLength(4);
  });

  it('loads what it saved, for --resume', () => {
    const file = path.join(tempDir('status-resume'), TRAINING_STATUS_FILE_NAME);
    const saved = new TrainingStatus();
    saved.addCheckpoint('3DBall', checkpoint(500), 5);
    saved.setElo('3DBall', 1100);
    saved.save(file);
    const logger = memoryLogger();
    const loaded = TrainingStatus.load(file, logger);
    expect(logger.lines).toEqual([]);
    expect(loaded.checkpoints('3DBall')).toEqual([checkpoint(500)]);
    expect(loaded.elo('3DBall')).toBe(1100);
    expect(loaded.finalCheckpoint('3DBall')).toBeUndefined();
    expect(loaded.getParameterState(StatusType.STATS_METADATA, StatusType.CHECKPOINTS)).toBeUndefined();
    expect(currentStatusMetadata().stats_format_version).toBe(STATUS_FORMAT_VERSION);
  });

  it('warns when there is no file, refuses one without metadata, and warns of other versions', () => {
    const dir = tempDir('status-bad');
    const logger = memoryLogger();
    const missing = TrainingStatus.load(path.join(dir, 'nothing.json'), logger);
    expect(missing.checkpoints('3DBall')).toEqual([]);
    expect(logger.lines).toEqual([
      { level: 'warning', message: 'Training status file not found. Not all functions will resume properly.' },
    ]);

    const noMetadata = path.join(dir, 'old.json');
    fs.writeFileSync(noMetadata, JSON.stringify({ '3DBall': { lesson_num: 1 } }));
    expect(() => TrainingStatus.load(noMetadata, logger)).toThrow(
      `${noMetadata}: Metadata not found, resuming from an incompatible version of ML-Agents.`,
    );
    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, '{"metadata": ');
    expect(() => TrainingStatus.load(broken, logger)).toThrow(`${broken} is not valid JSON`);
    // Both say how to resume without the file (which a missing file allows, as above).
    for (const unreadable of [noMetadata, broken]) {
      expect(() => TrainingStatus.load(unreadable, logger)).toThrow(
        'To resume without it, move it out of the run_logs folder and run again with --resume: the models and their steps come from the checkpoints;',
      );
    }

    // A file written by Unity's Python mlagents-learn.
    const python = path.join(dir, 'python.json');
    fs.writeFileSync(
      python,
      JSON.stringify({
        '3DBall': { checkpoints: [checkpoint(500)] },
        metadata: { stats_format_version: '0.3.0', mlagents_version: '1.1.0', torch_version: '2.2.2+cu121' },
      }),
    );
    const versionLogger = memoryLogger();
    const fromPython = TrainingStatus.load(python, versionLogger, metadata);
    expect(fromPython.checkpoints('3DBall')).toEqual([checkpoint(500)]);
    expect(versionLogger.lines.map((line) => line.level)).toEqual(['warning', 'warning']);
    expect(versionLogger.lines[0].message).toContain(
      'Checkpoint was loaded from a different version of ML-Agents (1.1.0',
    );
    expect(versionLogger.lines[1].message).toContain('2.2.2+cu121');
  });
});
