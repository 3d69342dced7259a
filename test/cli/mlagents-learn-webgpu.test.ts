/**
 * mlagents-learn with its updates on WebGPU, on SwiftShader (scripts/with-swiftshader.sh; skipped
 * without Debian's chromium): the built executable trains SimpleGoal 1D with threaded: true and
 * --backend webgpu-software, PPO with memory (the LSTM's reading passes) and curiosity beside the
 * extrinsic reward, SAC, and POCA on SimpleGoal's groups (--group), then --resume goes on from
 * each checkpoint (the policy's and curiosity's, POCA's critic) on wasm. Reaching upstream's threshold on SwiftShader takes minutes: that run is in
 * bench/README.md.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { learn } from '../../src/cli/mlagents-learn';
import { readCheckpointFile } from '../../src/networks/checkpoint-file';
import { PocaTrainer } from '../../src/trainers/poca/trainer';
import { PpoTrainer } from '../../src/trainers/ppo/trainer';
import { SacTrainer } from '../../src/trainers/sac/trainer';
import type { CuriosityRewardProvider } from '../../src/trainers/reward-signals/curiosity';
import { ROOT, tempDir } from '../helpers/paths';
import { simpleGoalArgs, writeSimplePpoConfig } from './learn-helpers';
import { writeSimpleSacConfig } from './learn-sac-helpers';
import { caseConfiguration, upstreamCase } from './upstream-cases';

const onSwiftShader = fs.existsSync('/usr/lib/chromium/vk_swiftshader_icd.json') ? it : it.skip;

/** Curiosity trains in the update thread beside PPO: on WebGPU when the updates go there. */
const CURIOSITY = '    reward_signals:\n      extrinsic: {}\n      curiosity:\n        strength: 0.01\n        network_settings:\n          hidden_units: 16\n';

/** Upstream's test config, threaded, with memory (sequences of 8: two a minibatch of 16) and curiosity. */
function writeThreadedConfig(folder: string, maxSteps: number): void {
  const file = writeSimplePpoConfig(folder, maxSteps, CURIOSITY);
  const memory = '      hidden_units: 32\n      memory:\n        memory_size: 16\n        sequence_length: 8\n';
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('threaded: false', 'threaded: true').replace('      hidden_units: 32\n', memory));
}

/** Upstream's SAC test config, threaded, with an update every 20 steps after the first 100: SwiftShader takes seconds an update. */
function writeThreadedSacConfig(folder: string, maxSteps: number): void {
  const file = writeSimpleSacConfig(folder, maxSteps, 100, '      steps_per_update: 20\n');
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('trainer_type: sac\n', 'trainer_type: sac\n    threaded: true\n'));
}

/** Upstream's test_simple_poca[(0, 1)] (groups of two, buffer 64, batch 16), threaded, for `maxSteps`. */
const POCA_CASE = upstreamCase('test_simple_poca[(0, 1)]');
function writeThreadedPocaConfig(folder: string, maxSteps: number): void {
  fs.writeFileSync(path.join(folder, 'config.yaml'), caseConfiguration({ ...POCA_CASE, maxSteps }).replace('threaded: false', 'threaded: true'));
}

/** Runs the built mlagents-learn under SwiftShader in `cwd`. */
function learnOnSwiftShader(cwd: string, args: string[]): ReturnType<typeof spawnSync> & { stdout: string } {
  return spawnSync(path.join(ROOT, 'scripts', 'with-swiftshader.sh'), [process.execPath, path.join(ROOT, 'dist', 'cli', 'mlagents-learn.js'), ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
  });
}

describe('mlagents-learn updating on WebGPU (SwiftShader)', () => {
  onSwiftShader('trains with memory and curiosity, the updates (curiosity\'s included) on the software adapter, acting on wasm, and --resume goes on from its checkpoint on wasm', async () => {
    const cwd = tempDir('learn-webgpu');
    writeThreadedConfig(cwd, 192);
    // simpleGoalArgs asks for wasm; the last --backend wins.
    const args = [...(await simpleGoalArgs('gpu')), '--backend=webgpu-software'];
    const run = learnOnSwiftShader(cwd, args);
    expect([run.status, run.stderr]).toEqual([0, expect.anything()]);
    expect(run.stdout).toMatch(/Running the updates on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, in the update thread; acting on the wasm backend\./);
    const checkpoint = readCheckpointFile(path.join(cwd, 'results', 'gpu', '1D', 'checkpoint.ckpt'));
    expect((checkpoint.meta.model as { blocks: Array<{ name: string }> }).blocks.map((b) => b.name)).toContain('actor.lstm.weight_hh');
    expect(checkpoint.meta.adamStep).toBeGreaterThan(0);
    expect(checkpoint.arrays.get('parameters')!.every(Number.isFinite)).toBe(true);
    // Curiosity trained in the same thread, on the GPU.
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

  onSwiftShader('trains SAC with its updates on the software adapter in its worker, acting on wasm, and --resume goes on from its checkpoint on wasm', async () => {
    const cwd = tempDir('learn-webgpu-sac');
    // A few updates on the GPU: one per 20 steps after step 100.
    writeThreadedSacConfig(cwd, 200);
    const run = learnOnSwiftShader(cwd, [...(await simpleGoalArgs('gpu')), '--backend=webgpu-software']);
    expect([run.status, run.stderr]).toEqual([0, expect.anything()]);
    expect(run.stdout).toMatch(/Running the updates on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, in the update thread; acting on the wasm backend\./);
    const checkpoint = readCheckpointFile(path.join(cwd, 'results', 'gpu', '1D', 'checkpoint.ckpt'));
    const updates = (checkpoint.meta.adamSteps as Record<string, number>)['adam.q1'];
    expect(updates).toBeGreaterThan(0);
    for (const key of ['parameters', 'target.parameters', 'q1.parameters', 'q2.parameters']) expect([key, checkpoint.arrays.get(key)!.every(Number.isFinite)]).toEqual([key, true]);

    // As upstream on resume, the updates are taken to have kept up: the next is due after step 300.
    writeThreadedSacConfig(cwd, 400);
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('gpu', '--resume'), { cwd, logger });
    const resumed = controller.behaviorTrainers.get('1D') as SacTrainer;
    const messages = logger.lines.map((l) => l.message);
    expect(messages).toContain('Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).');
    expect(messages).toContain(`Resuming training of 1D from step ${checkpoint.meta.step as number}.`);
    expect(resumed.optimizer.q1Adam.step).toBeGreaterThan(updates);
  }, 300_000);

  onSwiftShader('trains threaded POCA on SimpleGoal --group, actor and critic updating on the software adapter in its worker, and --resume goes on from its checkpoint on wasm', async () => {
    const cwd = tempDir('learn-webgpu-poca');
    // A few updates: one per 64 experiences (both agents' steps).
    writeThreadedPocaConfig(cwd, 300);
    // --backend before --env-args, which takes the rest of the line.
    const run = learnOnSwiftShader(cwd, await simpleGoalArgs('gpu', '--backend=webgpu-software', '--env-args', ...POCA_CASE.envArgs));
    expect([run.status, run.stderr]).toEqual([0, expect.anything()]);
    expect(run.stdout).toMatch(/Running the updates on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, in the update thread; acting on the wasm backend\./);
    const checkpoint = readCheckpointFile(path.join(cwd, 'results', 'gpu', '1D', 'checkpoint.ckpt'));
    expect(checkpoint.meta.kind).toBe('poca');
    expect(checkpoint.meta.adamStep).toBeGreaterThan(0);
    for (const key of ['parameters', 'critic.parameters', 'critic_adam.first_moment']) expect([key, checkpoint.arrays.get(key)!.every(Number.isFinite)]).toEqual([key, true]);
    expect(checkpoint.arrays.get('critic_adam.first_moment')!.some((m) => m !== 0)).toBe(true);

    writeThreadedPocaConfig(cwd, 600);
    const logger = memoryLogger();
    const controller = await learn(await simpleGoalArgs('gpu', '--resume', '--env-args', ...POCA_CASE.envArgs), { cwd, logger });
    const resumed = controller.behaviorTrainers.get('1D') as PocaTrainer;
    const messages = logger.lines.map((l) => l.message);
    expect(messages).toContain('Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).');
    expect(messages).toContain(`Resuming training of 1D from step ${checkpoint.meta.step as number}.`);
    expect(resumed.optimizer.criticAdam.step).toBeGreaterThan(checkpoint.meta.adamStep as number);
    expect(resumed.critic.maxAgents).toBe(2);
  }, 300_000);
});
