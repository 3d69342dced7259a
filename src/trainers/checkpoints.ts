/**
 * A behavior's checkpoints in the results folder (upstream's TorchModelSaver and
 * ModelCheckpointManager): each checkpoint is the policy exported as <Behavior>-<step>.onnx (what
 * Unity runs; the record's file_path) beside the training state <Behavior>-<step>.ckpt (its
 * auxiliary file), which is also copied to checkpoint.ckpt (what --resume and --initialize-from
 * read). Each is recorded in training_status.json, and the oldest are deleted beyond
 * keep_checkpoints. At the end of a run, the last export is copied to <run>/<Behavior>.onnx.
 *
 * Upstream's training state is a .pt file (torch); ours holds the same state (weights,
 * optimizer, normalizer, step) in the format of src/networks/checkpoint-file.ts, hence .ckpt.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { BehaviorSpec } from '../env/behavior-spec';
import { writePolicyModel } from '../export/onnx-export';
import { ModelCheckpoint, TrainingStatus } from '../stats/training-status';
import type { Trainer } from './trainer';

/** The part of a trainer that checkpoints read and write. */
export type CheckpointedTrainer = Pick<Trainer, 'saveCheckpoint' | 'loadCheckpoint' | 'model'>;

/** The checkpoint a resumed or initialized run starts from (upstream's checkpoint.pt). */
export const LATEST_CHECKPOINT_NAME = 'checkpoint.ckpt';

export interface CheckpointRequest {
  readonly behaviorName: string;
  readonly spec: BehaviorSpec;
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
  const stem = path.join(folder, `${behaviorName}-${step}`);
  trainer.saveCheckpoint(`${stem}.ckpt`, step);
  fs.copyFileSync(`${stem}.ckpt`, path.join(folder, LATEST_CHECKPOINT_NAME));
  writePolicyModel(`${stem}.onnx`, trainer.model, request.spec);
  const checkpoint: ModelCheckpoint = {
    steps: step,
    file_path: `${stem}.onnx`,
    reward: request.reward,
    creation_time: Date.now() / 1000,
    auxillary_file_paths: [`${stem}.ckpt`],
  };
  const kept = new Set([checkpoint.file_path, ...checkpoint.auxillary_file_paths]);
  for (const dropped of status.addCheckpoint(behaviorName, checkpoint, request.keepCheckpoints)) {
    // A final checkpoint at the step of the last one reuses its files: those stay.
    for (const stale of [dropped.file_path, ...dropped.auxillary_file_paths]) {
      if (!kept.has(stale)) fs.rmSync(stale, { force: true });
    }
  }
  return checkpoint;
}

/**
 * Upstream's save_model at the end of a run: a last checkpoint, its model copied to
 * <runDir>/<Behavior>.onnx, and that copy recorded as the behavior's final checkpoint.
 */
export function saveFinalCheckpoint(request: CheckpointRequest, status: TrainingStatus, runDir: string): ModelCheckpoint {
  const checkpoint = saveCheckpoint(request, status);
  const finalModel = path.join(runDir, `${request.behaviorName}.onnx`);
  fs.copyFileSync(checkpoint.file_path, finalModel);
  const final = { ...checkpoint, file_path: finalModel };
  status.setFinalCheckpoint(request.behaviorName, final);
  return final;
}

/**
 * Loads <folder>/checkpoint.ckpt into the trainer (weights, optimizer state, normalizer) and returns
 * the step it was saved at; a missing file is an error naming it and the run to check.
 */
export function loadLatestCheckpoint(folder: string, trainer: CheckpointedTrainer, options: { readonly resume?: boolean } = {}): number {
  const file = path.join(folder, LATEST_CHECKPOINT_NAME);
  if (!fs.existsSync(file)) {
    throw new Error(`No checkpoint to start from: ${file} does not exist. Was that run saved before it stopped?`);
  }
  try {
    return trainer.loadCheckpoint(file, options);
  } catch (error) {
    throw new Error(`Cannot start from ${file}: ${(error as Error).message}`);
  }
}
