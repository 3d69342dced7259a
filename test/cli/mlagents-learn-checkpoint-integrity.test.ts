/**
 * Checkpoints that were damaged on disk, and models that went non-finite, met by real runs of
 * mlagents-learn on the built-in SimpleGoal over gRPC, with real files.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { decodeCheckpoint, encodeCheckpoint } from '../../src/networks/checkpoint-file';
import { freePort, tempDir } from '../helpers/paths';

const CONFIG = [
  'behaviors:',
  '  1D:',
  '    trainer_type: ppo',
  '    hyperparameters: {batch_size: 16, buffer_size: 64, learning_rate: 5.0e-3}',
  '    summary_freq: 200',
  '    checkpoint_interval: 200',
  '    max_steps: MAX_STEPS',
  '',
].join('\n');

async function run(cwd: string, maxSteps: number, ...flags: string[]): Promise<void> {
  fs.writeFileSync(path.join(cwd, 'config.yaml'), CONFIG.replace('MAX_STEPS', String(maxSteps)));
  const args = ['config.yaml', '--env=builtin:SimpleGoal', '--seed=1', `--base-port=${await freePort()}`, '--backend=wasm', ...flags];
  await learn(args, { cwd, logger: memoryLogger() });
}

/** The checkpoints of the behavior (and any partial file) and the final model, with the SHA-256 of their bytes. */
function snapshot(runDir: string): Map<string, string> {
  const files = fs.readdirSync(path.join(runDir, '1D')).filter((f) => /\.(ckpt|onnx|partial)$/.test(f)).map((f) => path.join(runDir, '1D', f));
  const digest = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  return new Map([...files, path.join(runDir, '1D.onnx')].map((f) => [f, digest(f)]));
}

describe('checkpoint integrity', () => {
  it('refuses a checkpoint with a 4 KiB block overwritten, naming it and the intact older checkpoints, and touches nothing', async () => {
    const cwd = tempDir('learn-damaged-checkpoint');
    await run(cwd, 400, '--run-id=first');
    const runDir = path.join(cwd, 'results', 'first');
    const latest = path.join(runDir, '1D', 'checkpoint.ckpt');
    const bytes = fs.readFileSync(latest);
    expect(bytes.length).toBeGreaterThan(3 * 4096);
    bytes.fill(0x41, 4096, 8192);
    fs.writeFileSync(latest, bytes);
    const before = snapshot(runDir);

    for (const flags of [['--run-id=first', '--resume'], ['--run-id=second', '--initialize-from=first']]) {
      const failed = run(cwd, 800, ...flags);
      await expect(failed).rejects.toThrow(`Cannot start from ${latest}: The file is damaged: its bytes no longer match the checksum`);
      const newest = fs.readdirSync(path.join(runDir, '1D')).filter((f) => /^1D-\d+\.ckpt$/.test(f)).sort((a, b) => b.length - a.length || b.localeCompare(a))[0];
      await expect(failed).rejects.toThrow(
        new RegExp(
          `The checkpoints in ${path.join(runDir, '1D')}, newest first: 1D-4\\d\\d\\.ckpt \\(intact\\), 1D-2\\d\\d\\.ckpt \\(intact\\)\\. ` +
            `To start from ${newest.replace('.', '\\.')}, copy it over checkpoint\\.ckpt \\(cp "`,
        ),
      );
    }
    expect(snapshot(runDir)).toEqual(before);

    // Doing as told resumes.
    const newest = fs.readdirSync(path.join(runDir, '1D')).find((f) => /^1D-4\d\d\.ckpt$/.test(f))!;
    fs.copyFileSync(path.join(runDir, '1D', newest), latest);
    await run(cwd, 500, '--run-id=first', '--resume');
    const status = JSON.parse(fs.readFileSync(path.join(runDir, 'run_logs', 'training_status.json'), 'utf8'));
    expect(status['1D'].final_checkpoint.steps).toBeGreaterThanOrEqual(500);
  }, 60000);

  it('refuses to start from a checkpoint whose weights are NaN, naming it, and keeps every file', async () => {
    const cwd = tempDir('learn-nan-model');
    await run(cwd, 200, '--run-id=nan');
    const runDir = path.join(cwd, 'results', 'nan');
    const latest = path.join(runDir, '1D', 'checkpoint.ckpt');
    // A checkpoint whose checksum is right but whose weights are NaN, as a diverged training leaves them.
    const { meta, arrays } = decodeCheckpoint(fs.readFileSync(latest));
    const parameters = Float32Array.from(arrays.get('parameters')!);
    parameters.fill(NaN, 0, 10);
    fs.writeFileSync(latest, encodeCheckpoint(meta, new Map([...arrays, ['parameters', parameters]])));
    const before = snapshot(runDir);

    await expect(run(cwd, 2000, '--run-id=nan', '--resume')).rejects.toThrow(
      new RegExp(
        `^Cannot start from ${latest}: The model of behavior 1D holds 10 NaN or infinite values \\(in parameters\\): it cannot be trained on\\. ` +
          `The checkpoints in ${path.join(runDir, '1D')}, newest first: 1D-2\\d\\d\\.ckpt \\(intact\\)\\. To start from`,
      ),
    );
    expect(snapshot(runDir)).toEqual(before);
  }, 60000);
});
