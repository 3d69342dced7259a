/**
 * mlagents-learn with its updates on WebGPU, on SwiftShader (scripts/with-swiftshader.sh; skipped
 * without Debian's chromium): the built executable trains SimpleGoal 1D with threaded: true,
 * curiosity beside the extrinsic reward, and --backend webgpu-software, then --resume goes on
 * from its checkpoint (the policy's and curiosity's) on wasm. Reaching
 * upstream's threshold on SwiftShader takes minutes: that run is in bench/README.md.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import type { CuriosityRewardProvider } from '../../src/trainers/reward-signals/curiosity';
import { ROOT, tempDir } from '../helpers/paths';
import { simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';

const onSwiftShader = fs.existsSync('/usr/lib/chromium/vk_swiftshader_icd.json') ? it : it.skip;

/** Curiosity trains in the update thread beside PPO: on WebGPU when the updates go there. */
const CURIOSITY = '    reward_signals:\n      extrinsic: {}\n      curiosity:\n        strength: 0.01\n        network_settings:\n          hidden_units: 16\n';

function writeThreadedConfig(folder: string, maxSteps: number): void {
  const file = writeSimplePpoConfig(folder, maxSteps, CURIOSITY);
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('threaded: false', 'threaded: true'));
}

describe('mlagents-learn updating on WebGPU (SwiftShader)', () => {
  onSwiftShader('trains with the updates, curiosity\'s included, on the software adapter, acting on wasm, and --resume goes on from its checkpoint on wasm', async () => {
    const cwd = tempDir('learn-webgpu');
    writeThreadedConfig(cwd, 192);
    // simpleGoalArgs asks for wasm; the last --backend wins.
    const args = [...(await simpleGoalArgs('gpu')), '--backend=webgpu-software'];
    const run = spawnSync(path.join(ROOT, 'scripts', 'with-swiftshader.sh'), [process.execPath, path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js'), ...args], {
      cwd,
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect([run.status, run.stderr]).toEqual([0, expect.anything()]);
    expect(run.stdout).toMatch(/Running the updates on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, in the update thread; acting on the wasm backend\./);
    const checkpoint = readCheckpointFile(path.join(cwd, 'results', 'gpu', '1D', 'checkpoint.ckpt'));
    expect(checkpoint.meta.adamStep).toBeGreaterThan(0);
    expect(checkpoint.arrays.get('parameters')!.every(Number.isFinite)).toBe(true);
    // Curiosity trained in the same thread, on the GPU: no line sends its behavior's updates back to wasm.
    expect(run.stdout).not.toMatch(/its updates run on the wasm backend/);
    const curiositySteps = checkpoint.arrays.get('reward_signals.curiosity.adam.step')![0];
    expect(curiositySteps).toBeGreaterThan(0);
    expect(checkpoint.arrays.get('reward_signals.curiosity.parameters')!.every(Number.isFinite)).toBe(true);

    writeThreadedConfig(cwd, 384);
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('gpu', '--resume'), { cwd, logger });
    const resumed = controller.behaviorTrainers.get('1D') as PpoTrainer;
    const messages = logger.lines.map((l) => l.message);
    expect(messages).toContain('Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).');
    expect(messages).toContain(`Resuming training of 1D from step ${checkpoint.meta.step as number}.`);
    expect(resumed.optimizer.adam.step).toBeGreaterThan(checkpoint.meta.adamStep as number);
    const curiosity = resumed.optimizer.rewardProviders.get('curiosity') as CuriosityRewardProvider;
    expect(curiosity.adam.step).toBeGreaterThan(curiositySteps);
  }, 300_000);
});
