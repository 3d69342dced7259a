/**
 * The results layout, run ids that would leave the results folder, and upstream's rules on an
 * existing run folder, on real temporary folders.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { behaviorDir, checkRunDirectory, loadRunOptions, resolveRunPaths, RunOptions } from '../../src/config';
import { tempDir } from '../helpers/paths';

function options(...flags: string[]): RunOptions {
  return loadRunOptions(flags, '/', memoryLogger());
}

describe('resolveRunPaths', () => {
  it('lays the run out as ML-Agents does, from the working directory', () => {
    const cwd = tempDir('paths');
    const paths = resolveRunPaths(options('--run-id', 'first', '--initialize-from', 'zero'), cwd);
    expect(paths).toEqual({
      resultsDir: path.join(cwd, 'results'),
      runDir: path.join(cwd, 'results', 'first'),
      runLogsDir: path.join(cwd, 'results', 'first', 'run_logs'),
      configurationFile: path.join(cwd, 'results', 'first', 'configuration.yaml'),
      timersFile: path.join(cwd, 'results', 'first', 'run_logs', 'timers.json'),
      trainingStatusFile: path.join(cwd, 'results', 'first', 'run_logs', 'training_status.json'),
      initializeFromDir: path.join(cwd, 'results', 'zero'),
    });
    expect(behaviorDir(paths, '3DBall')).toBe(path.join(cwd, 'results', 'first', '3DBall'));
    expect(resolveRunPaths(options('--results-dir', '/abs/out'), cwd).runDir).toBe(path.join('/abs/out', 'ppo'));
  });

  it.each(['..', '.', '', '../escape', '/etc', 'a/b', 'a\\b'])('refuses the run id %p', (runId) => {
    const run = options();
    run.checkpoint_settings.run_id = runId;
    expect(() => resolveRunPaths(run, '/work')).toThrow(/^command line: checkpoint_settings\.run_id: the run id /);
  });

  it('refuses the same names as --run-id when loading, and as behavior names', () => {
    expect(() => options('--run-id', '..')).toThrow(
      'command line (--run-id): checkpoint_settings.run_id: the run id ".." is not a folder name: it names one folder inside ' +
        'the results folder, so it cannot hold "/" or "\\", nor be "." or "..".',
    );
    expect(() => options('--initialize-from', '../other')).toThrow(/checkpoint_settings\.initialize_from: the run id "\.\.\/other"/);
    const paths = resolveRunPaths(options(), '/work');
    expect(() => behaviorDir(paths, '../../evil')).toThrow(/behaviors\.\.\.\/\.\.\/evil: the behavior name "\.\.\/\.\.\/evil" contains a path separator/);
  });

  it.each([
    ['run_logs', "the run's log folder (run_logs/"],
    ['Run_Logs', "the run's log folder (run_logs/"],
    ['configuration.yaml', "the run's configuration.yaml"],
    ['Walker.onnx', 'the final model of behavior Walker'],
  ])('refuses the behavior name %p, which the results layout already uses', (name, taken) => {
    const paths = resolveRunPaths(options('--run-id', 'first'), '/work');
    expect(() => behaviorDir(paths, name)).toThrow(
      `/work/results/first/configuration.yaml: behaviors.${name}: the behavior name "${name}" cannot be trained: ` +
        `its folder in the run folder would be ${taken}`,
    );
    // A behavior of the YAML file is refused before anything runs, naming the file and the key.
    const file = path.join(tempDir('reserved-behavior'), 'config.yaml');
    fs.writeFileSync(file, `behaviors:\n  ${name}:\n    trainer_type: ppo\n`);
    expect(() => resolveRunPaths(loadRunOptions([file], '/', memoryLogger()), '/work')).toThrow(`${file}: behaviors.${name}: the behavior name`);
  });
});

describe('checkRunDirectory: an existing run', () => {
  const cwd = tempDir('runs');
  fs.mkdirSync(path.join(cwd, 'results', 'done'), { recursive: true });
  const runDir = path.join(cwd, 'results', 'done');

  it('a new run id starts', () => {
    expect(() => checkRunDirectory(options('--run-id', 'new'), cwd)).not.toThrow();
  });

  it("stops the run with upstream's message, naming the folder", () => {
    expect(() => checkRunDirectory(options('--run-id', 'done'), cwd)).toThrow(
      `${runDir}: checkpoint_settings.run_id: Previous data from this run ID was found. Either specify a new run ID, ` +
        'use --resume to resume this run, or use the --force parameter to overwrite existing data.',
    );
  });

  it('goes on with --resume or --force', () => {
    expect(() => checkRunDirectory(options('--run-id', 'done', '--resume'), cwd)).not.toThrow();
    expect(() => checkRunDirectory(options('--run-id', 'done', '--force'), cwd)).not.toThrow();
  });

  it('--resume needs the run', () => {
    expect(() => checkRunDirectory(options('--run-id', 'never', '--resume'), cwd)).toThrow(
      `${path.join(cwd, 'results', 'never')}: checkpoint_settings.resume: Previous data from this run ID was not found. ` +
        'Train a new run by removing the --resume flag.',
    );
  });

  it('--initialize-from needs its run', () => {
    expect(() => checkRunDirectory(options('--run-id', 'next', '--initialize-from', 'done'), cwd)).not.toThrow();
    const missing = path.join(cwd, 'results', 'absent');
    expect(() => checkRunDirectory(options('--run-id', 'next', '--initialize-from', 'absent'), cwd)).toThrow(
      `${missing}: checkpoint_settings.initialize_from: Could not initialize from ${missing}. ` +
        'Make sure models have already been saved with that run ID.',
    );
  });

  it('a file where the run folder would be is refused', () => {
    fs.writeFileSync(path.join(cwd, 'results', 'plainfile'), '');
    expect(() => checkRunDirectory(options('--run-id', 'plainfile', '--force'), cwd)).toThrow(
      `${path.join(cwd, 'results', 'plainfile')}: checkpoint_settings.run_id: this path exists and is not a folder: ` +
        'choose another run id or results_dir.',
    );
  });
});
