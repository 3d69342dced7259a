/**
 * Where a run writes (upstream's results layout) and the rules on an existing run folder
 * (upstream's validate_existing_directories).
 *
 *   <results_dir>/<run_id>/configuration.yaml
 *   <results_dir>/<run_id>/run_logs/timers.json, training_status.json, Player-<n>.log
 *   <results_dir>/<run_id>/<Behavior>/checkpoints, events.out.tfevents.*
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../common/logger';
import { ConfigError } from './errors';
import { ConfigSource, configError, optionsSource } from './reader';
import { RunOptions } from './settings';

/** The folder of the run's logs inside the run folder. */
const RUN_LOGS_FOLDER = 'run_logs';
const CONFIGURATION_FILE = 'configuration.yaml';
/** The final model of a behavior lies beside the behaviors' folders, as <Behavior>.onnx. */
const MODEL_EXTENSION = '.onnx';

export interface RunPaths {
  /** Absolute path of the folder holding every run (checkpoint_settings.results_dir). */
  resultsDir: string;
  /** <results>/<run-id>: everything this run writes. */
  runDir: string;
  runLogsDir: string;
  configurationFile: string;
  timersFile: string;
  trainingStatusFile: string;
  /** <results>/<initialize_from>, the run whose models start this one; null without one. */
  initializeFromDir: string | null;
}

/**
 * Refuses a name that would not stay one folder inside its parent: empty, `.`, `..`, or holding
 * a path separator (which an absolute path does too).
 */
export function checkFolderName(name: string, keyPath: string, what: string, source: ConfigSource): void {
  const problem =
    name === ''
      ? 'is empty'
      : name === '.' || name === '..'
        ? 'is not a folder name'
        : /[/\\]/.test(name)
          ? 'contains a path separator'
          : name.includes('\0')
            ? 'contains a NUL character'
            : null;
  if (problem === null) return;
  throw configError(
    source,
    keyPath,
    `the ${what} ${JSON.stringify(name)} ${problem}: it names one folder inside the results folder, ` +
      'so it cannot hold "/" or "\\", nor be "." or "..".',
  );
}

/** The run's folders and files as absolute paths, relative paths being taken from `cwd`. */
export function resolveRunPaths(options: RunOptions, cwd: string = process.cwd()): RunPaths {
  const { run_id, initialize_from, results_dir } = options.checkpoint_settings;
  const source = optionsSource(options);
  checkFolderName(run_id, 'checkpoint_settings.run_id', 'run id', source);
  if (initialize_from !== null) checkFolderName(initialize_from, 'checkpoint_settings.initialize_from', 'run id', source);
  for (const behaviorName of Object.keys(options.behaviors)) checkBehaviorName(behaviorName, source);
  const resultsDir = path.resolve(cwd, results_dir);
  const runDir = path.join(resultsDir, run_id);
  const runLogsDir = path.join(runDir, RUN_LOGS_FOLDER);
  return {
    resultsDir,
    runDir,
    runLogsDir,
    configurationFile: path.join(runDir, CONFIGURATION_FILE),
    timersFile: path.join(runLogsDir, 'timers.json'),
    trainingStatusFile: path.join(runLogsDir, 'training_status.json'),
    initializeFromDir: initialize_from === null ? null : path.join(resultsDir, initialize_from),
  };
}

/**
 * Refuses a behavior name that would not be a folder of its own in the run folder: one that
 * leaves it (checkFolderName), or one that is the name of the run's logs, of its configuration
 * or of a final model. Compared without regard to case, as some filesystems do.
 */
export function checkBehaviorName(behaviorName: string, source: ConfigSource): void {
  const keyPath = `behaviors.${behaviorName}`;
  checkFolderName(behaviorName, keyPath, 'behavior name', source);
  const lower = behaviorName.toLowerCase();
  const taken =
    lower === RUN_LOGS_FOLDER
      ? `the run's log folder (${RUN_LOGS_FOLDER}/: timers.json, training_status.json, Player logs)`
      : lower === CONFIGURATION_FILE
        ? `the run's ${CONFIGURATION_FILE}`
        : lower.endsWith(MODEL_EXTENSION)
          ? `the final model of behavior ${behaviorName.slice(0, -MODEL_EXTENSION.length)}`
          : null;
  if (taken === null) return;
  throw configError(
    source,
    keyPath,
    `the behavior name ${JSON.stringify(behaviorName)} cannot be trained: its folder in the run folder would be ${taken}. ` +
      'Rename the behavior (Behavior Parameters > Behavior Name in Unity, and its key under behaviors: in the YAML).',
  );
}

/**
 * The folder of one behavior's checkpoints and summaries. Behavior names come from the
 * environment, so one that would leave the run folder or collide with its layout is refused.
 */
export function behaviorDir(paths: RunPaths, behaviorName: string): string {
  checkBehaviorName(behaviorName, { file: paths.configurationFile, flags: new Map(), logger: memoryLogger() });
  return path.join(paths.runDir, behaviorName);
}

/**
 * Upstream's rules, on the real filesystem: an existing run folder stops the run unless --resume
 * or --force; --resume needs the folder; --initialize-from needs its run's folder. The errors
 * name the folder concerned.
 */
export function checkRunDirectory(options: RunOptions, cwd: string = process.cwd()): void {
  const paths = resolveRunPaths(options, cwd);
  const { resume, force } = options.checkpoint_settings;
  if (fs.existsSync(paths.runDir) && !isDirectory(paths.runDir)) {
    const detail = 'this path exists and is not a folder: choose another run id or results_dir.';
    throw new ConfigError(paths.runDir, 'checkpoint_settings.run_id', detail);
  }
  const runExists = isDirectory(paths.runDir);
  if (runExists && !resume && !force) {
    throw new ConfigError(
      paths.runDir,
      'checkpoint_settings.run_id',
      'Previous data from this run ID was found. Either specify a new run ID, use --resume to resume this run, ' +
        'or use the --force parameter to overwrite existing data.',
    );
  }
  if (!runExists && resume) {
    throw new ConfigError(
      paths.runDir,
      'checkpoint_settings.resume',
      'Previous data from this run ID was not found. Train a new run by removing the --resume flag.',
    );
  }
  if (paths.initializeFromDir !== null && !isDirectory(paths.initializeFromDir)) {
    throw new ConfigError(
      paths.initializeFromDir,
      'checkpoint_settings.initialize_from',
      `Could not initialize from ${paths.initializeFromDir}. Make sure models have already been saved with that run ID.`,
    );
  }
}

function isDirectory(folder: string): boolean {
  try {
    return fs.statSync(folder).isDirectory();
  } catch {
    return false;
  }
}
