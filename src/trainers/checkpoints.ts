/**
 * A behavior's checkpoints in the results folder (upstream's TorchModelSaver and
 * ModelCheckpointManager): each checkpoint is written as <Behavior>-<step>.ckpt and copied to
 * checkpoint.ckpt (what --resume and --initialize-from read), recorded in training_status.json,
 * and the oldest are deleted beyond keep_checkpoints.
 *
 * Upstream's files are .pt (torch) beside an .onnx export; ours hold the same state (weights,
 * optimizer, normalizer, step) in the format of src/networks/checkpoint-file.ts, hence .ckpt.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ModelCheckpoint, TrainingStatus } from '../stats/training-status';
import type { Trainer } from './trainer';

/** The part of a trainer that checkpoints read and write. */
export type CheckpointedTrainer = Pick<Trainer, 'saveCheckpoint' | 'loadCheckpoint'>;

/** The checkpoint a resumed or initialized run starts from (upstream's checkpoint.pt). */
export const LATEST_CHECKPOINT_NAME = 'checkpoint.ckpt';

export interface CheckpointRequest {
  readonly behaviorName: string;
  /** The behavior's folder under the run folder. */
  readonly folder: string;
  readonly trainer: CheckpointedTrainer;
  readonly step: number;
  /** Mean episode reward since the last policy update; null when no episode ended. */
  readonly reward: number | null;
  readonly keepCheckpoints: number;
}

/** Saves a checkpoint, records it in `status`, deletes the ones dropped; returns its record. */
export function saveCheckpoint(request: CheckpointRequest, status: TrainingStatus): ModelCheckpoint {
  const { behaviorName, folder, trainer, step } = request;
  fs.mkdirSync(folder, { recursive: true });
  const file = path.join(folder, `${behaviorName}-${step}.ckpt`);
  trainer.saveCheckpoint(file, step);
  fs.copyFileSync(file, path.join(folder, LATEST_CHECKPOINT_NAME));
  const checkpoint: ModelCheckpoint = {
    steps: step,
    file_path: file,
    reward: request.reward,
    creation_time: Date.now() / 1000,
    auxillary_file_paths: [],
  };
  for (const dropped of status.addCheckpoint(behaviorName, checkpoint, request.keepCheckpoints)) {
    // A final checkpoint at the step of the last one reuses its file: that file stays.
    for (const stale of [dropped.file_path, ...dropped.auxillary_file_paths]) {
      if (stale !== file) fs.rmSync(stale, { force: true });
    }
  }
  return checkpoint;
}

/**
 * Loads <folder>/checkpoint.ckpt into the trainer (weights, optimizer state, normalizer) and returns
 * the step it was saved at; a missing file is an error naming it and the run to check.
 */
export function loadLatestCheckpoint(folder: string, trainer: CheckpointedTrainer): number {
  const file = path.join(folder, LATEST_CHECKPOINT_NAME);
  if (!fs.existsSync(file)) {
    throw new Error(`No checkpoint to start from: ${file} does not exist. Was that run saved before it stopped?`);
  }
  return trainer.loadCheckpoint(file);
}
