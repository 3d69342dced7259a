/**
 * mlagents-learn end to end over real gRPC with built-in environments as child processes:
 * curriculum lessons advance during the run and their values reach the environment (which writes
 * what it receives to its -logFile, results/<run>/run_logs/Player-0.log); the lessons are kept in
 * training_status.json and restored by --resume; and the environment applies the engine
 * settings it is sent, --time-scale on the command line overriding the YAML.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { listEventFiles, readEventFile } from '../../src/stats';
import { freePort, tempDir } from '../helpers/paths';
import { writeSimplePpoConfig } from './learn-helpers';

/**
 * 3DBall (which reads gravity and scale at each episode start) with two curricula judged on
 * progress: gravity changes at 30% of max_steps, scale at 60% with a reset of the environment.
 */
const CURRICULUM_CONFIG = `
behaviors:
  3DBall:
    trainer_type: ppo
    hyperparameters:
      batch_size: 64
      buffer_size: 240
    network_settings:
      num_layers: 1
      hidden_units: 16
    time_horizon: 20
    summary_freq: 300
    max_steps: MAX_STEPS
environment_parameters:
  gravity:
    curriculum:
      - name: Light
        completion_criteria:
          measure: progress
          behavior: 3DBall
          threshold: 0.3
        value: 4.5
      - name: Normal
        value: 9.81
  scale:
    curriculum:
      - name: Small
        completion_criteria:
          measure: progress
          behavior: 3DBall
          threshold: 0.6
          require_reset: true
        value: 0.5
      - name: Large
        value: 1.5
`;

function writeCurriculumConfig(folder: string, maxSteps: number): void {
  fs.writeFileSync(path.join(folder, 'config.yaml'), CURRICULUM_CONFIG.replace('MAX_STEPS', String(maxSteps)));
}

async function ball3dArgs(runId: string, ...more: string[]): Promise<string[]> {
  return ['config.yaml', `--run-id=${runId}`, '--env=builtin:3DBall', '--seed=1', `--base-port=${await freePort()}`, '--backend=wasm', ...more];
}

/** The lines the player wrote to its -logFile, without its "[3DBall] " prefix. */
function playerLog(cwd: string, runId: string): string[] {
  const file = path.join(cwd, 'results', runId, 'run_logs', 'Player-0.log');
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^\[\w+\] /, ''));
}

describe('mlagents-learn with curriculum lessons on the built-in 3DBall', () => {
  const cwd = tempDir('learn-curriculum');
  const logger = memoryLogger();
  const messages = () => logger.lines.map((l) => l.message);

  beforeAll(async () => {
    writeCurriculumConfig(cwd, 1200);
    await learn(await ball3dArgs('lessons'), { cwd, logger });
  }, 30000);

  it('logs the starting lessons and each lesson change in upstream\'s words', () => {
    const lessonLines = messages().filter((m) => m.startsWith('Parameter '));
    expect(lessonLines).toEqual([
      "Parameter 'gravity' is in lesson 'Light' and has value 'Float: value=4.5'.",
      "Parameter 'scale' is in lesson 'Small' and has value 'Float: value=0.5'.",
      "Parameter 'gravity' is in lesson 'Normal' and has value 'Float: value=9.81'.",
      "Parameter 'scale' is in lesson 'Large' and has value 'Float: value=1.5'.",
    ]);
  });

  it('sends the new values to the environment once the lessons change', () => {
    const received = playerLog(cwd, 'lessons').filter((line) => line.startsWith('environment parameter '));
    // At launch: the first lessons. Then gravity's next lesson, and later scale's with the reset.
    expect(received.slice(0, 2)).toEqual(['environment parameter gravity set to 4.5', 'environment parameter scale set to 0.5']);
    const firstNormalGravity = received.indexOf('environment parameter gravity set to 9.81');
    const firstLargeScale = received.indexOf('environment parameter scale set to 1.5');
    expect(firstNormalGravity).toBeGreaterThan(1);
    expect(firstLargeScale).toBeGreaterThan(firstNormalGravity);
    expect(received.slice(firstNormalGravity)).not.toContain('environment parameter gravity set to 4.5');
    expect(received.at(-1)).toBe('environment parameter scale set to 1.5');
  });

  it('resets the environment once, with the new values, when a finished lesson requires it', () => {
    const lines = playerLog(cwd, 'lessons');
    expect(lines.filter((line) => line === 'reset by the trainer')).toHaveLength(1);
    expect(lines.indexOf('reset by the trainer')).toBeGreaterThan(lines.indexOf('environment parameter scale set to 1.5'));
  });

  it('records the lessons in training_status.json and reports them as a stat', () => {
    const status = JSON.parse(fs.readFileSync(path.join(cwd, 'results', 'lessons', 'run_logs', 'training_status.json'), 'utf8'));
    expect(status.gravity).toEqual({ lesson_num: 1 });
    expect(status.scale).toEqual({ lesson_num: 1 });
    const events = listEventFiles(path.join(cwd, 'results', 'lessons', '3DBall')).flatMap(readEventFile);
    const lessons = (tag: string) =>
      events.flatMap((e) => (e.summary?.value ?? []).filter((v) => v.tag === tag).map((v) => v.simple_value));
    expect(lessons('Environment/Lesson Number/gravity')).toEqual([0, 1, 1, 1]);
    expect(lessons('Environment/Lesson Number/scale')).toEqual([0, 0, 1, 1]);
  });

  it('sends the default engine settings (upstream\'s) to the environment', () => {
    expect(playerLog(cwd, 'lessons')).toContain(
      'engine configuration: time scale 20, resolution 84x84, quality level 5, target frame rate -1, capture frame rate 60',
    );
  });

  it('--resume goes on from the lessons reached', async () => {
    writeCurriculumConfig(cwd, 1500);
    const resumeLogger = memoryLogger();
    const logFile = path.join(cwd, 'results', 'lessons', 'run_logs', 'Player-0.log');
    const linesBefore = playerLog(cwd, 'lessons').length;
    await learn(await ball3dArgs('lessons', '--resume'), { cwd, logger: resumeLogger });
    expect(resumeLogger.lines.map((l) => l.message).filter((m) => m.startsWith('Parameter '))).toEqual([
      "Parameter 'gravity' is in lesson 'Normal' and has value 'Float: value=9.81'.",
      "Parameter 'scale' is in lesson 'Large' and has value 'Float: value=1.5'.",
    ]);
    expect(fs.existsSync(logFile)).toBe(true);
    const resumedRun = playerLog(cwd, 'lessons').slice(linesBefore);
    expect(resumedRun.filter((line) => line.startsWith('environment parameter '))).toEqual([
      'environment parameter gravity set to 9.81',
      'environment parameter scale set to 1.5',
    ]);
  }, 30000);
});

describe('mlagents-learn sends the engine settings to the environment', () => {
  it('applies engine_settings from the YAML, with --time-scale on the command line winning', async () => {
    const cwd = tempDir('learn-engine');
    writeSimplePpoConfig(
      cwd,
      100,
      [
        'engine_settings:',
        '  width: 128',
        '  height: 96',
        '  quality_level: 2',
        '  time_scale: 3',
        '  target_frame_rate: 30',
        '  capture_frame_rate: 24',
        '',
      ].join('\n'),
    );
    const args = ['config.yaml', '--run-id=engine', '--env=builtin:SimpleGoal', '--seed=1', `--base-port=${await freePort()}`];
    await learn([...args, '--backend=wasm', '--time-scale=50'], { cwd, logger: memoryLogger() });
    expect(playerLog(cwd, 'engine')).toContain(
      'engine configuration: time scale 50, resolution 128x96, quality level 2, target frame rate 30, capture frame rate 24',
    );
  });
});
