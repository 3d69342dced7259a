/** The configuration of the SAC mlagents-learn tests. */
import * as fs from 'fs';
import * as path from 'path';

/**
 * Writes <folder>/config.yaml: upstream's sac_dummy_config() (everything else ML-Agents' default:
 * time_horizon 64, steps_per_update 1) with this budget; `extraHyperparameters` are more YAML
 * lines of the hyperparameters section, each indented by 6 spaces and ending with a newline.
 */
export function writeSimpleSacConfig(folder: string, maxSteps: number, bufferInitSteps = 100, extraHyperparameters = ''): string {
  const file = path.join(folder, 'config.yaml');
  fs.writeFileSync(
    file,
    `
behaviors:
  1D:
    trainer_type: sac
    hyperparameters:
      learning_rate: 5.0e-3
      learning_rate_schedule: constant
      batch_size: 8
      buffer_init_steps: ${bufferInitSteps}
      buffer_size: 5000
      tau: 0.01
      init_entcoef: 0.01
${extraHyperparameters}    network_settings:
      num_layers: 1
      hidden_units: 16
    summary_freq: 100
    max_steps: ${maxSteps}
`,
  );
  return file;
}
