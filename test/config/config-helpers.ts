/** Loading configurations written to real temp files, as mlagents-learn reads them. */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { ConfigError, RunOptions, loadRunOptions } from '../../src/config';
import { tempDir } from '../helpers/paths';

export const REFERENCE_CONFIGS = path.resolve(__dirname, '../../../shared/reference/configs');

export function writeConfig(text: string, name = 'config.yaml'): string {
  const file = path.join(tempDir('config'), name);
  fs.writeFileSync(file, text);
  return file;
}

export function load(yamlText: string, ...flags: string[]) {
  const logger = memoryLogger();
  const file = writeConfig(yamlText);
  const options: RunOptions = loadRunOptions([file, ...flags], path.dirname(file), logger);
  const warnings = logger.lines.filter((line) => line.level === 'warning').map((line) => line.message);
  return { options, warnings, file };
}

/** The ConfigError loading this YAML throws (fails the test if it loads). */
export function loadError(yamlText: string, ...flags: string[]): ConfigError & { file: string } {
  const file = writeConfig(yamlText);
  try {
    loadRunOptions([file, ...flags], path.dirname(file), memoryLogger());
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return Object.assign(error, { file });
  }
  throw new Error('expected a ConfigError, but the configuration loaded');
}
