/**
 * The WebGPU backend, checked where there is no GPU: on SwiftShader, the CPU Vulkan driver of
 * Debian's chromium (scripts/ensure-chromium.sh installs it), through scripts/with-swiftshader.sh
 * in child processes (Vulkan's loader is found through LD_LIBRARY_PATH, read at process start).
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../src/common/logger';
import { selectBackend } from '../../src/networks/backend';
import { expectCloseToScale } from '../helpers/expect-close';
import type { PassesFile } from './fixtures/webgpu-passes';
import type { PocaUpdateFile } from './fixtures/webgpu-poca-update';
import type { PpoUpdateFile } from './fixtures/webgpu-ppo-update';
import type { SacUpdateFile } from './fixtures/webgpu-sac-update';
import type { SignalsFile } from './fixtures/webgpu-signals';

const ROOT = path.resolve(__dirname, '../..');
const SWIFTSHADER = '/usr/lib/chromium/vk_swiftshader_icd.json';
const hasSwiftShader = fs.existsSync(SWIFTSHADER);
if (!hasSwiftShader) console.warn(`Skipping the SwiftShader checks: ${SWIFTSHADER} is absent (run scripts/ensure-chromium.sh).`);
const onSwiftShader = hasSwiftShader ? it : it.skip;

/** Runs a fixture script with tsx under SwiftShader, for at most `timeout` ms; returns its stdout. */
function runOnSwiftShader(script: string, args: string[], timeout = 480_000): string {
  const tsx = path.join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const result = spawnSync(path.join(ROOT, 'scripts', 'with-swiftshader.sh'), [process.execPath, tsx, path.join(__dirname, 'fixtures', script), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout,
  });
  if (result.status !== 0) throw new Error(`${script} failed (${result.status ?? result.signal}):\n${result.stderr}`);
  return result.stdout;
}

/** Runs a fixture that writes its results as JSON to the file named by its last argument on webgpu-software; returns them. */
function fixtureResultsOnSwiftShader<Results>(script: string, extraArgs: string[] = [], timeout?: number): Results {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${path.basename(script, '.ts')}-`)), 'results.json');
  runOnSwiftShader(script, ['webgpu-software', file, ...extraArgs], timeout);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Results;
}

/** What an update fixture gives for one case: the arrays it changed and its losses, on wasm and on the compared backend. */
interface CaseAgainstWasm<Arrays> {
  readonly wasm: Arrays;
  readonly compared: Arrays;
  readonly wasmLosses: number[];
  readonly comparedLosses: number[];
}

/** Every case's arrays (none empty) within `tolerance` of wasm's, and its losses to `digits` decimals. */
function expectCasesAsWasm<Arrays extends { readonly [K in keyof Arrays]: number[] }>(cases: Record<string, CaseAgainstWasm<Arrays>>, when: string, tolerance: number, digits: number): void {
  for (const [name, { wasm, compared, wasmLosses, comparedLosses }] of Object.entries(cases)) {
    for (const key of Object.keys(wasm) as Array<keyof Arrays & string>) {
      expect(wasm[key].length).toBeGreaterThan(0);
      expectCloseToScale(compared[key], wasm[key], `${name}: ${key} ${when}`, tolerance);
    }
    comparedLosses.forEach((loss, i) => expect([name, i, loss]).toEqual([name, i, expect.closeTo(wasmLosses[i], digits)]));
  }
}

interface Selection {
  readonly request: string;
  readonly selected: string;
  readonly tfjs: string;
  readonly updates: string;
  readonly log: string[];
}

describe('modules on WebGPU (SwiftShader) against wasm', () => {
  // Largest difference measured: 8.5e-7 of the largest value (the hypernetwork's input gradient).
  const TOLERANCE = 1e-5;

  onSwiftShader(
    'every module (the LSTM\'s and the attention\'s passes, max pooling\'s ties, the hypernetwork\'s goals among them) gives wasm\'s output, input gradient and parameter gradient, its gradients read back once',
    () => {
      const passes = fixtureResultsOnSwiftShader<PassesFile>('webgpu-passes.ts');
      expect(passes.backend).toBe('webgpu');
      expect(passes.log).toEqual([expect.stringMatching(/^Running the models on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, software\.$/)]);
      expect(Object.keys(passes.compared)).toEqual(Object.keys(passes.wasm));
      for (const [name, wasm] of Object.entries(passes.wasm)) {
        const gpu = passes.compared[name];
        expectCloseToScale(gpu.output, wasm.output, `${name}: output`, TOLERANCE);
        expectCloseToScale(gpu.inputGradient, wasm.inputGradient, `${name}: input gradient`, TOLERANCE);
        expectCloseToScale(gpu.gradient, wasm.gradient, `${name}: parameter gradient`, TOLERANCE);
        // Every block's gradient in one read: none for a module without parameters.
        expect([name, passes.gradientDownloads[name]]).toEqual([name, wasm.gradient.length > 0 ? 1 : 0]);
      }
      expect(passes.wasm['nature_cnn encoder'].gradient.some((g) => g !== 0)).toBe(true);
    },
    300_000,
  );
});

describe('PPO on WebGPU (SwiftShader) against wasm', () => {
  // Largest difference measured: 9.1e-8 of the largest parameter (2.8e-7 with the camera).
  const TOLERANCE = 1e-6;

  // As the modules' (largest difference measured: 2.9e-7 of the largest entry, variable-length observations and a plain goal).
  const MODULE_TOLERANCE = 1e-5;

  onSwiftShader('updates give wasm\'s parameters and losses (the weights and every Adam on the GPU between minibatches, whatever the layers: images, memory, variable-length observations, goals, resnet, behavioral cloning; their gradients too), and the checkpoint resumes on wasm', () => {
    const run = fixtureResultsOnSwiftShader<PpoUpdateFile>('webgpu-ppo-update.ts');
    expect(run.backend).toBe('webgpu');
    expectCloseToScale(run.compared, run.wasm, 'parameters after two updates', TOLERANCE);
    run.comparedLosses.forEach((loss, i) => expect(loss).toBeCloseTo(run.wasmLosses[i], 5));
    // A minibatch reads the actor's and the critic's heads and log_sigma for the loss, in one read; the gradient stays on the GPU.
    expect(run.transfers.downloads).toBe(1);
    expect(run.transfers.downloadBytes).toBe(4 * (64 * 2 + 64 * 1 + 2));
    // What goes up is the minibatch's data (inputs, the loss's gradient, the few gradients summed in
    // JavaScript): less than one 128 x 128 weight matrix, where each weight went up after every Adam step before.
    expect(run.transfers.uploadBytes).toBeLessThan(4 * 128 * 128);
    expect(run.arrayUntouchedMidUpdate).toBe(true);
    // The whole update: the parameters and Adam's two moments up once, and back down in one read.
    const parameterBytes = 4 * run.parameterCount;
    expect(run.updateTransfers.uploadBytes).toBe(3 * parameterBytes + 2 * run.transfers.uploadBytes);
    expect(run.updateTransfers.downloads).toBe(2 * run.transfers.downloads + 1);
    expect(run.updateTransfers.downloadBytes).toBe(3 * parameterBytes + 2 * run.transfers.downloadBytes);
    // The checkpoint is the same file whichever backend wrote it: wasm reads the exact weights back and trains on.
    expect(run.resumed).toEqual(run.compared);
    expectCloseToScale(run.resumedUpdated, run.wasmUpdated, 'parameters after a third update on wasm', TOLERANCE);
    expect(Object.keys(run.modules)).toEqual([
      'simple encoder',
      'memory',
      'variable-length observations and a goal (hyper)',
      'variable-length observations and a goal (none)',
      'resnet',
      'behavioral cloning',
    ]);
    // Adam's first steps move each parameter by about the learning rate whatever the size of its
    // gradient, so a gradient near zero carries the backends' rounding into the step: compared
    // against the step (largest difference measured after two minibatches: 0.93% of it, the
    // variable-length observations beside a plain goal).
    // Each case's update held its weights on the GPU, its arrays poisoned with NaN after the first
    // minibatch: none of its layers read them meanwhile.
    for (const [name, { wasm, compared }] of Object.entries(run.modules)) {
      expectCloseToScale(compared.gradient, wasm.gradient, `PPO's gradient (${name})`, MODULE_TOLERANCE);
      const largest = compared.parameters.reduce((most, value, i) => Math.max(most, Math.abs(value - wasm.parameters[i])), 0);
      expect([name, largest < 0.02 * run.learningRate ? 'within 2% of a step' : largest]).toEqual([name, 'within 2% of a step']);
      // What goes up in a minibatch is its data, none of the weights: less than one copy of them
      // for the cases whose data is small beside them.
      if (name.startsWith('variable-length') || name === 'behavioral cloning') {
        const { uploadBytes } = compared.minibatchTransfers;
        expect([name, uploadBytes < 4 * compared.parameterCount ? 'less than the weights' : uploadBytes]).toEqual([name, 'less than the weights']);
      }
    }
    // A minibatch's reads, as a model without memory, attention or a hypernetwork has them: one for
    // the loss (the heads and log_sigma), and one per encoding the encoders hand the bodies (the
    // camera's, the attention's: actor and critic); the LSTM reads its input's projection (with
    // W_hh) and its output's gradient, for its recurrence in JavaScript, in each of the two networks.
    const downloads = Object.fromEntries(Object.entries(run.modules).map(([name, { compared }]) => [name, compared.minibatchTransfers.downloads]));
    expect(downloads).toEqual({
      'simple encoder': 3,
      memory: 1 + 2 * 2,
      'variable-length observations and a goal (hyper)': 3,
      'variable-length observations and a goal (none)': 3,
      resnet: 3,
      'behavioral cloning': 1,
    });
    // Cloning steps the same GPU weights with its own Adam: one read a minibatch, its moments as wasm's.
    const cloning = run.modules['behavioral cloning'];
    expect(cloning.compared.cloningTransfers.downloads).toBe(1);
    expect(cloning.compared.cloningTransfers.uploadBytes).toBeLessThan(4 * cloning.compared.parameterCount);
    expect([cloning.wasm.cloningSteps, cloning.compared.cloningSteps]).toEqual([2, 2]);
    expectCloseToScale(cloning.compared.cloningMoments, cloning.wasm.cloningMoments, 'cloning\'s Adam moments', MODULE_TOLERANCE);
  }, 300_000);
});

describe('SAC on WebGPU (SwiftShader) against wasm', () => {
  // Largest difference measured: 4.3e-7 of the largest parameter (the continuous case's model after two updates; 4.1e-7 with memory, Q2).
  const TOLERANCE = 5e-6;
  // With the attention, the hypernetwork or resnet: 1.8e-5 (Q2 of the plain goal's case), less
  // than 5% of a step (Adam's first steps carry the backends' rounding of gradients near zero).
  const MODULE_TOLERANCE = 5e-5;
  const MODULE_CASES = ['variable-length observations and a goal (hyper)', 'variable-length observations and a goal (none)', 'resnet'];

  onSwiftShader('updates give wasm\'s parameters and losses, continuous, discrete, hybrid, with memory, with behavioral cloning, on variable-length observations, goals and resnet, and the checkpoint resumes on wasm', () => {
    // SwiftShader compiles each shader on the CPU (resnet's, the attention's): most of the run.
    const run = fixtureResultsOnSwiftShader<SacUpdateFile>('webgpu-sac-update.ts', [], 400_000);
    expect(run.backend).toBe('webgpu');
    expect(Object.keys(run.cases)).toEqual(['continuous', 'discrete', 'hybrid', 'memory', 'memory, small', 'behavioral cloning', ...MODULE_CASES]);
    // Cloning's loss after the four of each update.
    expect(run.cases['behavioral cloning'].wasmLosses).toHaveLength(10);
    const casesWhere = (modules: boolean) => Object.fromEntries(Object.entries(run.cases).filter(([name]) => MODULE_CASES.includes(name) === modules));
    expectCasesAsWasm(casesWhere(false), 'after two updates', TOLERANCE, 5);
    expectCasesAsWasm(casesWhere(true), 'after two updates', MODULE_TOLERANCE, 5);
    // The target's values, both Q networks at the sampled actions, the actor's and V's heads,
    // dQ/da, the model's gradients, each Q network's output and input gradient on the stored
    // actions, then the Q networks' gradients: 12 reads an update, whatever the batch size.
    expect(run.reads.continuous).toBe(12);
    // Only the actor and V pass through the GPU: their heads, then their gradients.
    expect(run.reads.discrete).toBe(3);
    // With memory, each LSTM's input projection forward and its output gradient backward too
    // (the actor's, V's, each Q network's twice), and V's one step before the target's sequences,
    // whose passes read the body's output and then the projection.
    expect(run.reads.memory).toBe(26);
    // Discrete actions only: no dQ/da pass.
    expect(run.reads['memory, small']).toBe(24);
    // Each of cloning's two minibatches (64 demonstrations, batch 32): the actor's heads, then its gradient.
    expect(run.reads['behavioral cloning']).toBe(12 + 2 * 2);
    // The attention's output read back with each of the five encodings (V's target, the Q
    // networks', the actor's and V's); the plain goal's Q networks run in plain loops.
    expect(run.reads['variable-length observations and a goal (hyper)']).toBe(12 + 5);
    expect(run.reads['variable-length observations and a goal (none)']).toBe(16);
    // The Q networks in plain loops: the image's five encodings, the heads, the two gradients.
    expect(run.reads.resnet).toBe(5 + 2 + 2);
    expect(run.resumed).toEqual(run.saved);
  }, 420_000);
});

describe('POCA on WebGPU (SwiftShader) against wasm', () => {
  // Largest difference measured: 2.1e-7 of the largest value (the critic's weights after two minibatches, vector case).
  const TOLERANCE = 1e-6;
  // As PPO's module cases': Adam's first steps carry the backends' rounding of gradients near zero
  // (largest difference measured: 2.1e-6 of the largest value, the critic's weights beside the
  // entity attention, 0.4% of a step).
  const MODULE_TOLERANCE = 1e-5;
  const MODULE_CASES = ['variable-length observations', 'simple encoder'];

  onSwiftShader('an update of two minibatches gives wasm\'s actor, critic, Adam moments and losses, vector, with memory, variable-length observations and a camera (the weights on the GPU, whatever the critic\'s layers), in a fixed number of reads, and the checkpoint resumes on wasm', () => {
    const run = fixtureResultsOnSwiftShader<PocaUpdateFile>('webgpu-poca-update.ts');
    expect(run.backend).toBe('webgpu');
    expect(Object.keys(run.cases)).toEqual(['vector', 'memory', ...MODULE_CASES]);
    // Policy, value and baseline loss of each minibatch.
    for (const { comparedLosses } of Object.values(run.cases)) expect(comparedLosses).toHaveLength(6);
    const casesWhere = (modules: boolean) => Object.fromEntries(Object.entries(run.cases).filter(([name]) => MODULE_CASES.includes(name) === modules));
    // Each case's arrays were poisoned with NaN after the first minibatch: no layer read them meanwhile.
    expectCasesAsWasm(casesWhere(false), 'after two minibatches', TOLERANCE, 6);
    expectCasesAsWasm(casesWhere(true), 'after two minibatches', MODULE_TOLERANCE, 6);
    // A minibatch reads the actor's heads and log_sigma in one read, the critic's values and
    // baselines in another; the gradients stay on the GPU. The update ends reading back each
    // network's weights and Adam's moments. With memory, the actor's LSTM reads its input's
    // projection (with W_hh) and its output's gradient, the critic's its input, its projection
    // (with W_hh), its output's gradient and its input's gradient, for their recurrences in
    // JavaScript. An encoder (the attention, the camera's) hands each network its encodings in one read.
    const reads = Object.fromEntries(Object.entries(run.cases).map(([name, c]) => [name, [c.minibatchReads, c.updateReads, c.arraysUntouchedMidUpdate]]));
    expect(reads).toEqual({
      vector: [2, 2 * 2 + 2, true],
      memory: [2 + 2 + 4, 2 * 8 + 2, true],
      'variable-length observations': [2 + 2, 2 * 4 + 2, true],
      'simple encoder': [2 + 2, 2 * 4 + 2, true],
    });
    expect(run.resumed).toEqual(run.saved);
  }, 300_000);
});

/** Each signal's state, rewards and statistics on the compared backend are wasm's within `tolerance` of their scale, and its updates moved it. */
function expectSignalsAsWasm(run: SignalsFile, tolerance: number): void {
  expect(Object.keys(run.compared)).toEqual(Object.keys(run.wasm));
  for (const [label, wasm] of Object.entries(run.wasm)) {
    const gpu = run.compared[label];
    expect([label, gpu.backend, wasm.backend]).toEqual([label, 'webgpu', 'wasm']);
    expectCloseToScale(gpu.state, wasm.state, `${label}: state after two updates`, tolerance);
    expectCloseToScale(gpu.rewards, wasm.rewards, `${label}: rewards`, tolerance);
    gpu.stats.forEach((stats, u) => {
      expect(Object.keys(stats)).toEqual(Object.keys(wasm.stats[u]));
      for (const [tag, value] of Object.entries(stats)) expectCloseToScale([value], [wasm.stats[u][tag]], `${label}: ${tag} of update ${u + 1}`, tolerance);
    });
    // The updates moved the weights: equal states are not two untouched copies.
    expect(wasm.stats[0]).not.toEqual(wasm.stats[1]);
  }
}

describe('reward signals and behavioral cloning on WebGPU (SwiftShader) against wasm', () => {
  // Largest differences measured, relative to the largest value: 4.2e-6 of the state arrays
  // (curiosity on a camera), 3.3e-7 of the rewards, 2.4e-6 of a statistic (GAIL's KL divergence).
  const TOLERANCE = 2e-5;

  onSwiftShader('curiosity, RND, GAIL (VAIL, the gradient penalty) and cloning update as on wasm, vector and camera, and their state rewards alike on wasm', () => {
    // SwiftShader compiles each shader on the CPU: most of the run, long on a busy machine.
    const run = fixtureResultsOnSwiftShader<SignalsFile>('webgpu-signals.ts', [], 400_000);
    expectSignalsAsWasm(run, TOLERANCE);
    // GAIL reads its loss, statistics and gradient back at once.
    for (const [label, { downloads }] of Object.entries(run.compared)) if (label.startsWith('gail')) expect([label, downloads]).toEqual([label, 1]);
    expect(run.wasm['gail, vector, vail and actions'].stats[0]['Losses/GAIL KL Loss']).toBeGreaterThan(0);
    expect(run.wasm['curiosity, camera'].rewards.some((reward) => reward > 0)).toBe(true);
  }, 420_000);
});

describe('reward signals on variable-length observations, goals and resnet on WebGPU (SwiftShader) against wasm', () => {
  // Largest differences measured, relative to the largest value: 6.5e-5 of the state arrays
  // (curiosity on resnet: Adam's first steps carry the rounding of gradients near zero), 2.6e-6
  // of the rewards, 7.3e-7 of a statistic.
  const TOLERANCE = 2e-4;

  onSwiftShader('curiosity, RND and GAIL (the attention, the hypernetwork, resnet: its max pooling in the gradient penalty) update as on wasm, and their state rewards alike on wasm', () => {
    const run = fixtureResultsOnSwiftShader<SignalsFile>('webgpu-signals.ts', ['modules'], 400_000);
    expect(Object.keys(run.compared)).toEqual([
      'curiosity, variable-length observations and a goal',
      'rnd, variable-length observations and a goal',
      'gail, variable-length observations and a goal',
      'curiosity, resnet',
      'rnd, resnet',
      'gail, resnet',
    ]);
    expectSignalsAsWasm(run, TOLERANCE);
    // Reads an update: curiosity's 5 and RND's 4 whatever the encoder (the encodings, the outputs
    // its loss needs, the gradient), GAIL's one (resnet's max pooling reads nothing mid-pass).
    const downloads = Object.fromEntries(Object.entries(run.compared).map(([label, { downloads }]) => [label, downloads]));
    expect(downloads).toEqual({
      'curiosity, variable-length observations and a goal': 5,
      'rnd, variable-length observations and a goal': 4,
      'gail, variable-length observations and a goal': 1,
      'curiosity, resnet': 5,
      'rnd, resnet': 4,
      'gail, resnet': 1,
    });
  }, 420_000);
});

describe('choosing WebGPU', () => {
  onSwiftShader('auto refuses the software adapter, a name takes it, and a training run updates on it while acting on wasm', () => {
    const requests = ['auto', 'webgpu', 'webgpu-software', 'webgpu-software:train', 'webgpu-software:refuse'];
    const [auto, webgpu, software, training, refused] = JSON.parse(runOnSwiftShader('select-backends.ts', requests)) as Selection[];
    expect([auto.selected, auto.tfjs]).toEqual(['wasm', 'wasm']);
    expect(auto.log).toContain(
      'info: Backend webgpu: the only WebGPU adapter is a software one (google swiftshader (SwiftShader driver 5.0.0, swiftshader-device-subzero-), software), slower than wasm; --backend webgpu-software takes it',
    );
    expect(webgpu.selected).toBe('wasm');
    expect(webgpu.log).toEqual([
      expect.stringMatching(/^warning: The webgpu backend cannot run \(the only WebGPU adapter is a software one \(google swiftshader .*--backend webgpu-software takes it\): running the models on wasm instead\.$/),
      'info: Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).',
    ]);
    expect([software.selected, software.tfjs, software.updates]).toEqual(['webgpu-software', 'webgpu', 'webgpu-software']);
    // A training run: this thread acts on wasm, the update thread starts WebGPU.
    expect([training.selected, training.tfjs, training.updates]).toEqual(['webgpu-software', 'wasm', 'webgpu-software']);
    expect(training.log).toEqual([
      expect.stringMatching(/^info: Running the updates on the webgpu-software backend \(@tensorflow\/tfjs-backend-webgpu\) on google swiftshader .*, software, in the update thread; acting on the wasm backend\.$/),
    ]);
    expect([refused.selected, refused.tfjs, refused.updates]).toEqual(['wasm', 'wasm', 'wasm']);
    expect(refused.log[0]).toMatch(
      /^warning: The webgpu-software backend cannot run \(found the adapter google swiftshader .*, software, but behaviors\.Ball\.threaded is false\): running the models on wasm instead\.$/,
    );
  }, 120_000);

  it('with no adapter, webgpu falls back to wasm with one line saying why', async () => {
    const previous = process.env.VK_ICD_FILENAMES;
    // A driver list naming no driver: Vulkan finds no device, whatever this machine has.
    process.env.VK_ICD_FILENAMES = path.join(os.tmpdir(), 'no-such-driver.json');
    try {
      const logger = memoryLogger();
      expect((await selectBackend('webgpu', logger)).name).toBe('wasm');
      expect(tf.getBackend()).toBe('wasm');
      // Without a Vulkan loader on the machine (this one's system has none) the line says so instead.
      expect(logger.lines).toEqual([
        {
          level: 'warning',
          message: expect.stringMatching(
            /^The webgpu backend cannot run \((no WebGPU adapter found \(no GPU driver Dawn can use: Vulkan, Metal or Direct3D 12\)|no Vulkan loader \(libvulkan\.so\.1\), through which Dawn reaches GPUs on Linux: install your GPU's Vulkan driver \(Debian: libvulkan1\))\): running the models on wasm instead\.$/,
          ),
        },
        { level: 'info', message: 'Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).' },
      ]);
    } finally {
      if (previous === undefined) delete process.env.VK_ICD_FILENAMES;
      else process.env.VK_ICD_FILENAMES = previous;
    }
  });
});
