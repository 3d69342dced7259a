/**
 * Builds the trainer a behavior's trainer_type names (upstream's TrainerFactory). Trainer types
 * that are not built are refused before any environment connects (checkTrainerTypesBuilt).
 */
import { PocaTrainer } from './poca/trainer';
import { PpoTrainer } from './ppo/trainer';
import type { RlTrainerOptions } from './rl-trainer-base';
import { SacTrainer } from './sac/trainer';
import type { Trainer } from './trainer';

/** What every trainer is built from; the controller always says whether the run trains. */
export type TrainerFactoryOptions = RlTrainerOptions & { readonly trainModel: boolean };

export function createTrainer(options: TrainerFactoryOptions): Trainer {
  const { settings } = options;
  switch (settings.trainer_type) {
    case 'ppo':
      return new PpoTrainer({ ...options, settings });
    case 'sac':
      return new SacTrainer({ ...options, settings });
    case 'poca':
      return new PocaTrainer({ ...options, settings });
  }
}
