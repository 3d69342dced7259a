/**
 * @jest-environment ./test/export/onnxruntime-environment.js
 *
 * A run heading for the end of its JavaScript heap stops while it can still save, instead of
 * being aborted by V8 with nothing saved. The built mlagents-learn runs under
 * `node --max-old-space-size=56` on the built-in Scripted environment with 2000 agents whose
 * episodes never end and a time_horizon far beyond: each agent's unfinished trajectory, kept
 * on the heap until it is cut, grows at every step, as with a Unity scene of many agents
 * without MaxStep. Without the guard this run dies with "Ineffective mark-compacts near heap
 * limit ... JavaScript heap out of memory", its model not written.
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as ort from 'onnxruntime-node';
import { memoryLogger } from '../../src/common/logger';
import { settingsForBehavior } from '../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { StatsRegistry } from '../../src/stats';
import { loadLatestCheckpoint } from '../../src/trainers/checkpoints';
import { PpoTrainer, PpoTrainerSettings } from '../../src/trainers/ppo/trainer';
import { load } from '../config/config-helpers';
import { ROOT, freePort, tempDir } from '../helpers/paths';
import { processesWith } from '../helpers/processes';

const CLI = path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js');

const CONFIG = 'behaviors:\n  Scripted:\n    trainer_type: ppo\n    time_horizon: 1000000000\n    max_steps: 100000000\n';

/** The Scripted environment's behavior: 8 observations, 2 continuous actions. */
const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [8], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' }],
  actionSpec: new ActionSpec(2, []),
};

(fs.existsSync('/proc') ? it : it.skip)(
  'a run about to run out of heap stops with a clear error, saves a loadable model and checkpoint, and ends its environment',
  async () => {
    const cwd = tempDir('learn-heap');
    fs.writeFileSync(path.join(cwd, 'config.yaml'), CONFIG);
    const port = await freePort();
    const args = ['config.yaml', '--run-id=heap', '--env=builtin:Scripted', `--base-port=${port}`, '--backend=wasm'];
    const environment = ['--env-args', '--agents', '2000', '--episode-length', '1000000000'];
    const child = spawn(process.execPath, ['--max-old-space-size=56', CLI, ...args, ...environment], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let errors = '';
    child.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    child.stdout.resume();
    const exitCode = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

    const runDir = path.join(cwd, 'results', 'heap');
    expect(errors).not.toContain('JavaScript heap out of memory');
    expect(exitCode).toBe(1);
    expect(errors).toMatch(
      /\[ERROR\] The trainer is running out of memory: \d+ MiB of its JavaScript heap are still in use after a full garbage collection, (7\d)% of the 56 MiB Node gives it/,
    );
    expect(errors).toContain(`The run stops here and saves its models in ${runDir} (Scripted.onnx, and a checkpoint in Scripted${path.sep}).`);
    expect(errors).toContain('NODE_OPTIONS=--max-old-space-size=112 npx mlagents-learn <the same arguments> --resume');

    // The trainer ended the session (the environment's own last words), after the heap had grown step by step.
    const playerLog = fs.readFileSync(path.join(runDir, 'run_logs', 'Player-0.log'), 'utf8');
    const steps = Number(/scripted env done after (\d+) steps/.exec(playerLog)?.[1]);
    expect(steps).toBeGreaterThanOrEqual(20);
    expect(processesWith(`--mlagents-port ${port}`)).toEqual([]);

    const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
    expect(status.Scripted.final_checkpoint.file_path).toBe(path.join(runDir, 'Scripted.onnx'));
    const session = await ort.InferenceSession.create(path.join(runDir, 'Scripted.onnx'));
    const outputs = await session.run({ obs_0: new ort.Tensor('float32', new Float32Array(16), [2, 8]) });
    expect(outputs.deterministic_continuous_actions.dims).toEqual([2, 2]);

    await selectBackend('wasm', memoryLogger());
    const { options } = load(CONFIG);
    const settings = settingsForBehavior(options, 'Scripted', memoryLogger()) as PpoTrainerSettings;
    const trainer = new PpoTrainer({ behaviorName: 'Scripted', spec: SPEC, settings, stats: new StatsRegistry().reporter('Scripted'), seed: 1 });
    expect(loadLatestCheckpoint(path.join(runDir, 'Scripted'), trainer)).toBe(status.Scripted.final_checkpoint.steps);
  },
  120000,
);
