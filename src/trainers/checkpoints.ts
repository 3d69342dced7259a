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
import { copyFileWhole } from '../common/whole-files';
import type { BehaviorSpec } from '../env/behavior-spec';
import { writePolicyModel } from '../export/onnx-export';
import { CheckpointDamagedError, readCheckpointFile } from '../networks/checkpoint-file';
import { ModelCheckpoint, TrainingStatus } from '../stats/training-status';
import type { Trainer } from './trainer';

/** The part of a trainer that checkpoints read and write. */
export type CheckpointedTrainer = Pick<Trainer, 'saveCheckpoint' | 'loadCheckpoint' | 'model'>;

/** The checkpoint a resumed or initialized run starts from (upstream's checkpoint.pt). */
export const LATEST_CHECKPOINT_NAME = 'checkpoint.ckpt';

/** The model holds NaN or infinite values: it is not written, nor trained on. */
export class NonFiniteModelError extends Error {
  override name = 'NonFiniteModelError';
}

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

/**
 * Saves a checkpoint, records it in `status`, deletes the ones dropped; returns its record. A model
 * with NaN or infinite values is refused before anything is written (NonFiniteModelError), and
 * checkpoint.ckpt moves on only once the step's .ckpt and .onnx are both written; a write that
 * fails removes what this checkpoint had written.
 */
export function saveCheckpoint(request: CheckpointRequest, status: TrainingStatus): ModelCheckpoint {
  const { behaviorName, folder, trainer, step } = request;
  assertModelFinite(
    behaviorName,
    trainer,
    `it was not saved, and the checkpoints already in ${folder} and its final model are kept as they were. Resume ` +
      'from the latest of them (--resume), with a lower learning_rate if the training diverged.',
  );
  fs.mkdirSync(folder, { recursive: true });
  const stem = path.join(folder, `${behaviorName}-${step}`);
  // A final checkpoint at the step of the last one rewrites its files: those are not ours to remove.
  const created = [`${stem}.ckpt`, `${stem}.onnx`].filter((file) => !fs.existsSync(file));
  try {
    trainer.saveCheckpoint(`${stem}.ckpt`, step);
    writePolicyModel(`${stem}.onnx`, trainer.model, request.spec);
    copyFileWhole(`${stem}.ckpt`, path.join(folder, LATEST_CHECKPOINT_NAME));
  } catch (error) {
    for (const file of created) fs.rmSync(file, { force: true });
    throw error;
  }
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
 * <runDir>/<Behavior>.onnx, and that copy recorded as the behavior's final checkpoint. When the
 * checkpoint cannot be written, the final model is still exported on its own if it can be.
 */
export function saveFinalCheckpoint(request: CheckpointRequest, status: TrainingStatus, runDir: string): ModelCheckpoint {
  const finalModel = path.join(runDir, `${request.behaviorName}.onnx`);
  let checkpoint: ModelCheckpoint;
  try {
    checkpoint = saveCheckpoint(request, status);
  } catch (error) {
    if (error instanceof NonFiniteModelError) throw error;
    // The final model matters most, and is smaller than the training state: it may still fit (a full disk).
    try {
      writePolicyModel(finalModel, request.trainer.model, request.spec);
    } catch {
      throw error;
    }
    throw new Error(`${(error as Error).message} The final model was written alone: ${finalModel}.`, { cause: error });
  }
  copyFileWhole(checkpoint.file_path, finalModel);
  const final = { ...checkpoint, file_path: finalModel };
  status.setFinalCheckpoint(request.behaviorName, final);
  return final;
}

/**
 * Loads <folder>/checkpoint.ckpt into the trainer (weights, optimizer state, normalizer) and returns
 * the step it was saved at; a missing file is an error naming it and the run to check, a damaged
 * one (or one holding NaN or infinite weights) an error naming it and the older checkpoints of the
 * behavior to start from instead.
 */
export function loadLatestCheckpoint(folder: string, trainer: CheckpointedTrainer, options: { readonly resume?: boolean } = {}): number {
  const file = path.join(folder, LATEST_CHECKPOINT_NAME);
  if (!fs.existsSync(file)) {
    throw new Error(`No checkpoint to start from: ${file} does not exist. Was that run saved before it stopped?`);
  }
  try {
    const step = trainer.loadCheckpoint(file, options);
    assertModelFinite(path.basename(folder), trainer, 'it cannot be trained on.');
    return step;
  } catch (error) {
    const damaged = error instanceof CheckpointDamagedError || error instanceof NonFiniteModelError;
    const alternatives = damaged ? ` ${olderCheckpoints(folder, file)}` : '';
    throw new Error(`Cannot start from ${file}: ${(error as Error).message}${alternatives}`, { cause: error });
  }
}

/** Throws NonFiniteModelError, saying `consequence`, unless every weight and normalizer value of the model is finite. */
function assertModelFinite(behaviorName: string, trainer: CheckpointedTrainer, consequence: string): void {
  for (const [name, values] of trainer.model.stateArrays()) {
    let bad = 0;
    for (const value of values) if (!Number.isFinite(value)) bad += 1;
    if (bad === 0) continue;
    throw new NonFiniteModelError(`The model of behavior ${behaviorName} holds ${bad} NaN or infinite values (in ${name}): ${consequence}`);
  }
}

/** The behavior's <Behavior>-<step>.ckpt files in `folder`, newest first, each checked, and how to start from one. */
function olderCheckpoints(folder: string, latest: string): string {
  const checkpoints = fs
    .readdirSync(folder)
    .map((name) => ({ name, step: /-(\d+)\.ckpt$/.exec(name)?.[1] }))
    .filter((entry): entry is { name: string; step: string } => entry.step !== undefined)
    .sort((a, b) => Number(b.step) - Number(a.step))
    .map(({ name }) => ({ name, intact: isIntact(path.join(folder, name)) }));
  const startOver = 'start the run again without --resume (--force), or from another run (--initialize-from).';
  if (checkpoints.length === 0) return `No other checkpoint is left in ${folder}: ${startOver}`;
  const listed = `The checkpoints in ${folder}, newest first: ${checkpoints
    .map(({ name, intact }) => `${name} (${intact ? 'intact' : 'damaged too'})`)
    .join(', ')}.`;
  const newestIntact = checkpoints.find(({ intact }) => intact);
  if (newestIntact === undefined) return `${listed} None is intact: ${startOver}`;
  const source = path.join(folder, newestIntact.name);
  return `${listed} To start from ${newestIntact.name}, copy it over ${path.basename(latest)} (cp "${source}" "${latest}") and run again.`;
}

function isIntact(file: string): boolean {
  try {
    readCheckpointFile(file);
    return true;
  } catch {
    return false;
  }
}
