/**
 * Builds the trainer a behavior's trainer_type names (upstream's TrainerFactory). Trainer types
 * that are not built are refused before any environment connects (checkTrainerTypesBuilt).
 */
import type { Logger } from '../communicator/logger';
import type { TrainerSettings } from '../config/settings';
import type { BehaviorSpec } from '../env/behavior-spec';
import type { StatsReporter } from '../stats';
import { PpoTrainer } from './ppo/trainer';
import { SacTrainer } from './sac/trainer';
import type { Trainer } from './trainer';

export interface TrainerFactoryOptions {
  readonly behaviorName: string;
  readonly spec: BehaviorSpec;
  readonly settings: TrainerSettings;
  readonly stats: StatsReporter;
  /** Seeds the initial weights, the sampling of actions and the trainer's shuffling. */
  readonly seed: number;
  /** false for --inference: trajectories are only reported, the policy never changes. */
  readonly trainModel: boolean;
  /** Called when a checkpoint is due (every checkpoint_interval steps), with the trainer's step. */
  readonly onCheckpoint?: (step: number) => void;
  /** Where a trainer reports what it does besides statistics (warnings, replay buffer files). */
  readonly logger?: Logger;
}

export function createTrainer(options: TrainerFactoryOptions): Trainer {
  const { settings } = options;
  switch (settings.trainer_type) {
    case 'ppo':
      return new PpoTrainer({ ...options, settings });
    case 'sac':
      return new SacTrainer({ ...options, settings });
    default:
      throw new Error(`Behavior ${options.behaviorName}: trainer_type ${settings.trainer_type} is not built yet.`);
  }
}
