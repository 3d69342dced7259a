/**
 * run_logs/training_status.json as ML-Agents writes and reads it (training_status.py,
 * policy/checkpoint_manager.py): per behavior its checkpoints, final checkpoint and self-play
 * ELO, per environment parameter its curriculum lesson, and a metadata block that --resume
 * compares with the running trainer:
 *
 *     { "3DBall": { "checkpoints": [ { "steps", "file_path", "reward", "creation_time",
 *                                      "auxillary_file_paths" } ],
 *                   "final_checkpoint": { ... }, "elo": 1200.0 },
 *       "metadata": { "stats_format_version", "mlagents_version", "torch_version" } }
 */
import * as fs from 'fs';
import type { Logger } from '../common/logger';
import { writeFileWhole } from '../common/whole-files';
import { PACKAGE_VERSION } from '../communicator/messages';

export const TRAINING_STATUS_FILE_NAME = 'training_status.json';

/** Upstream's STATUS_FORMAT_VERSION of the release whose files carry checkpoints and ELO. */
export const STATUS_FORMAT_VERSION = '0.3.0';

/** The keys under a category (upstream's StatusType values). */
export enum StatusType {
  LESSON_NUM = 'lesson_num',
  STATS_METADATA = 'metadata',
  CHECKPOINTS = 'checkpoints',
  FINAL_CHECKPOINT = 'final_checkpoint',
  ELO = 'elo',
}

/** One saved model (upstream's ModelCheckpoint; "auxillary" is upstream's spelling). */
export interface ModelCheckpoint {
  steps: number;
  /** The exported model (.onnx). */
  file_path: string;
  /** Mean episode reward since the policy's last update; null when no episode ended. */
  reward: number | null;
  /** Seconds since the Unix epoch. */
  creation_time: number;
  /** The other files of this checkpoint (the trainer state), removed with it. */
  auxillary_file_paths: string[];
}

export interface StatusMetadata {
  stats_format_version: string;
  mlagents_version: string;
  torch_version: string;
}

/**
 * This trainer's metadata: upstream's keys, our versions. The ML-Agents version is this
 * package's; the model library is TensorFlow.js, so torch_version names its version.
 */
export function currentStatusMetadata(): StatusMetadata {
  const tfjsVersion = (require('@tensorflow/tfjs/package.json') as { version: string }).version;
  return {
    stats_format_version: STATUS_FORMAT_VERSION,
    mlagents_version: PACKAGE_VERSION,
    torch_version: `tfjs ${tfjsVersion}`,
  };
}

type CategoryState = Record<string, unknown>;

/** What a user whose training_status.json cannot be read can do, and what it costs. */
const RESUME_WITHOUT_STATUS =
  'To resume without it, move it out of the run_logs folder and run again with --resume: the models and their steps ' +
  'come from the checkpoints; the curriculum lessons start again from the first, and the checkpoints saved so far are ' +
  'no longer counted by keep_checkpoints (their files stay).';

export class TrainingStatus {
  private readonly state: Record<string, CategoryState> = {};

  /**
   * The status saved by an earlier run, for --resume. A missing file gives an empty status and a
   * warning, as upstream; a file without metadata is refused; version differences are warned about.
   */
  static load(filePath: string, logger: Logger, current = currentStatusMetadata()): TrainingStatus {
    const status = new TrainingStatus();
    let text: string;
    try {
      text = fs.readFileSync(filePath, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      logger.warning('Training status file not found. Not all functions will resume properly.');
      return status;
    }
    let loaded: unknown;
    try {
      loaded = JSON.parse(text);
    } catch (error) {
      throw new Error(`${filePath} is not valid JSON (${(error as Error).message}); it cannot be resumed from. ${RESUME_WITHOUT_STATUS}`);
    }
    if (typeof loaded !== 'object' || loaded === null || !(StatusType.STATS_METADATA in loaded)) {
      throw new Error(`${filePath}: Metadata not found, resuming from an incompatible version of ML-Agents. ${RESUME_WITHOUT_STATUS}`);
    }
    const saved = loaded as Record<string, CategoryState>;
    const metadata = saved[StatusType.STATS_METADATA] as Partial<StatusMetadata>;
    if (metadata.mlagents_version !== current.mlagents_version) {
      logger.warning(
        `Checkpoint was loaded from a different version of ML-Agents (${metadata.mlagents_version}, ` +
          `this trainer is ${current.mlagents_version}). Some things may not resume properly.`,
      );
    }
    if (metadata.torch_version !== current.torch_version) {
      logger.warning(
        `The checkpoint was saved with a different model library version (${metadata.torch_version}, ` +
          `this trainer uses ${current.torch_version}). The model may not resume properly.`,
      );
    }
    Object.assign(status.state, saved);
    return status;
  }

  /** Writes the status with the current metadata (indented by 4, as upstream's json.dump). */
  save(filePath: string, metadata = currentStatusMetadata()): void {
    this.state[StatusType.STATS_METADATA] = { ...metadata };
    writeFileWhole(filePath, JSON.stringify(this.state, null, 4));
  }

  setParameterState(category: string, key: StatusType, value: unknown): void {
    (this.state[category] ??= {})[key] = value;
  }

  /** The stored value, or undefined when there is none. */
  getParameterState(category: string, key: StatusType): unknown {
    return this.state[category]?.[key];
  }

  checkpoints(behavior: string): ModelCheckpoint[] {
    return (this.getParameterState(behavior, StatusType.CHECKPOINTS) as ModelCheckpoint[] | undefined) ?? [];
  }

  /**
   * Records a checkpoint and drops the oldest ones beyond keepCheckpoints (0 or less keeps all),
   * returning the dropped ones: the caller deletes their files.
   */
  addCheckpoint(behavior: string, checkpoint: ModelCheckpoint, keepCheckpoints: number): ModelCheckpoint[] {
    const checkpoints = [...this.checkpoints(behavior), checkpoint];
    const dropped = keepCheckpoints > 0 ? checkpoints.splice(0, Math.max(0, checkpoints.length - keepCheckpoints)) : [];
    this.setParameterState(behavior, StatusType.CHECKPOINTS, checkpoints);
    return dropped;
  }

  finalCheckpoint(behavior: string): ModelCheckpoint | undefined {
    return this.getParameterState(behavior, StatusType.FINAL_CHECKPOINT) as ModelCheckpoint | undefined;
  }

  setFinalCheckpoint(behavior: string, checkpoint: ModelCheckpoint): void {
    this.setParameterState(behavior, StatusType.FINAL_CHECKPOINT, checkpoint);
  }

  elo(behavior: string): number | undefined {
    return this.getParameterState(behavior, StatusType.ELO) as number | undefined;
  }

  setElo(behavior: string, elo: number): void {
    this.setParameterState(behavior, StatusType.ELO, elo);
  }
}
