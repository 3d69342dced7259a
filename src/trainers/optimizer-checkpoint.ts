/**
 * What every trainer's optimizer does the same way with checkpoints (PPO, SAC, POCA): its state
 * goes into one checkpoint's bytes (saveState) and comes back from them (restoreState); the file
 * is written whole, and a checkpoint of another trainer kind is refused before anything is read.
 */
import { writeFileWhole } from '../common/whole-files';
import { CheckpointContents, decodeCheckpoint, readCheckpointFile } from '../networks/checkpoint-file';

export abstract class CheckpointedOptimizer {
  /** The trainer kind each checkpoint's meta records (its `kind`). */
  protected abstract readonly checkpointKind: 'ppo' | 'sac' | 'poca';

  /** Every network, optimizer state and coefficient in one checkpoint (../networks/checkpoint-file.ts). */
  abstract saveState(step: number): Uint8Array;

  /** Puts a checkpoint of this trainer kind back in place; returns the training step it was saved at. */
  protected abstract restoreState(contents: CheckpointContents): number;

  /** Restores saveState(); returns the training step it was saved at. */
  loadState(bytes: Uint8Array): number {
    return this.restore(decodeCheckpoint(bytes));
  }

  saveCheckpoint(path: string, step: number): void {
    writeFileWhole(path, this.saveState(step));
  }

  /** Restores a checkpoint file; returns the training step it was saved at. */
  loadCheckpoint(path: string): number {
    return this.restore(readCheckpointFile(path));
  }

  private restore(contents: CheckpointContents): number {
    const { kind } = contents.meta;
    if (kind !== this.checkpointKind) {
      throw new Error(`The checkpoint is of a ${String(kind)} trainer, not of ${this.checkpointKind.toUpperCase()}.`);
    }
    return this.restoreState(contents);
  }
}
