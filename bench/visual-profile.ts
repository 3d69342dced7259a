/**
 * npx tsx bench/visual-profile.ts [nature_cnn|resnet|simple] [--minibatches 3]: where one PPO
 * minibatch of bench:ppo's visual rows (b) and (c) spends its time on the wasm backend (a 3x84x84
 * camera, 1 x 256, batch 64, actor and critic each with their own encoder), layer by layer.
 *
 * Each layer's forward and backward (and, inside a convolution's backward, its filter gradient
 * and input gradient) is timed in process CPU time: the wasm backend runs every kernel at once on
 * the calling thread, and CPU time is steadier than the wall clock on a shared machine. Times
 * are per minibatch, summed over every layer of that kind and shape (two encoders, and resnet's
 * repeated blocks); the GFLOPS column (a
 * convolution's forward, filter gradient and input gradient) counts multiply-adds twice.
 */
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import type { EncoderType } from '../src/config/settings';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../src/env/behavior-spec';
import { Adam } from '../src/networks/adam';
import { ActorCritic } from '../src/networks/actor-critic';
import { selectBackend } from '../src/networks/backend';
import { LeakyRelu, Relu, Swish } from '../src/networks/layers/activations';
import { Conv2d } from '../src/networks/layers/conv2d';
import { Dense } from '../src/networks/layers/dense';
import { Flatten } from '../src/networks/layers/flatten';
import { MaxPool2d } from '../src/networks/layers/max-pool';
import { PpoOptimizer } from '../src/trainers/ppo/optimizer';
import { printTable } from './table';
import { ppoMinibatches } from './ppo-minibatches';

const BATCH = 64;

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

interface Entry {
  ms: number;
  /** Floating-point operations per minibatch, where known (convolutions). */
  flops: number;
}
const entries = new Map<string, Entry>();

/** The label of one layer: its kind and shape. */
function describe(kind: string, layer: { outputShape?: readonly number[]; shape?: Conv2d['shape'] }): string {
  if (layer.outputShape === undefined) return kind;
  if (layer.shape === undefined) return `${kind} -> ${layer.outputShape.join('x')}`;
  const { input, outChannels, kernel, stride, padding } = layer.shape;
  return `${kind} ${kernel}x${kernel}/${stride}${padding > 0 ? ` pad ${padding}` : ''} ${input.join('x')} -> ${outChannels}`;
}

/** A convolution's multiply-adds x 2 for one batch. */
function convolutionFlops(conv: Conv2d): number {
  const [height, width] = conv.outputShape;
  const { input, outChannels, kernel } = conv.shape;
  return 2 * BATCH * height * width * outChannels * kernel * kernel * input[2];
}

/** Wraps a method of `kind`'s prototype so that its CPU time adds to its layer's entry. */
function timeMethod(prototype: object, kind: string, method: string): void {
  const target = prototype as Record<string, (...args: unknown[]) => unknown>;
  const original = target[method];
  target[method] = function (this: { outputShape?: readonly number[]; shape?: Conv2d['shape'] }, ...args: unknown[]) {
    const start = cpuMs();
    const result = original.apply(this, args);
    const label = `${describe(kind, this)}: ${method}`;
    const entry = entries.get(label) ?? { ms: 0, flops: 0 };
    entry.ms += cpuMs() - start;
    // A backward holds two products of the forward's size, and the bias's sum.
    if (this instanceof Conv2d && method !== 'backward') entry.flops += convolutionFlops(this);
    entries.set(label, entry);
    return result;
  };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({ options: { minibatches: { type: 'string', default: '3' } }, allowPositionals: true });
  const encoder = (positionals[0] ?? 'nature_cnn') as EncoderType;
  const minibatches = Number(values.minibatches);
  await selectBackend('wasm', memoryLogger());
  for (const [prototype, kind] of [
    [Conv2d.prototype, 'Conv2d'],
    [MaxPool2d.prototype, 'MaxPool2d'],
    [LeakyRelu.prototype, 'LeakyRelu'],
    [Relu.prototype, 'Relu'],
    [Swish.prototype, 'Swish'],
    [Flatten.prototype, 'Flatten'],
    [Dense.prototype, 'Dense'],
  ] as const) {
    for (const method of ['forward', 'backward']) timeMethod(prototype, kind, method);
  }
  // A convolution's backward is its filter gradient, its input gradient and the bias's sum.
  for (const method of ['weightGradient', 'inputGradient']) timeMethod(Conv2d.prototype, 'Conv2d', method);
  timeMethod(Adam.prototype, 'Adam', 'apply');

  const spec: BehaviorSpec = {
    observationSpecs: [
      {
        shape: [3, 84, 84],
        dimensionProperty: [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE],
        observationType: ObservationType.DEFAULT,
        name: 'camera',
      },
    ],
    actionSpec: ActionSpec.createContinuous(2),
  };
  const network = { normalize: false, hidden_units: 256, num_layers: 1, vis_encode_type: encoder, memory: null, goal_conditioning_type: 'hyper' as const, deterministic: false };
  const model = new ActorCritic(spec, { network, rewardSignals: ['extrinsic'], sharedCritic: false, seed: 1 });
  const [batch] = ppoMinibatches(model, 1, spec, BATCH);

  const hyperparameters = { learning_rate: 3e-4, beta: 1e-3, epsilon: 0.2, learning_rate_schedule: 'linear' as const, beta_schedule: 'linear' as const, epsilon_schedule: 'linear' as const };
  const optimizer = new PpoOptimizer(model, { hyperparameters, maxSteps: 500000 });
  optimizer.update(batch, 0);
  entries.clear();
  const start = cpuMs();
  for (let i = 0; i < minibatches; i++) optimizer.update(batch, 1000 * (i + 1));
  const total = (cpuMs() - start) / minibatches;
  model.dispose();

  const rows = [...entries]
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(([label, { ms, flops }]) => [label, (ms / minibatches).toFixed(1), flops > 0 ? (flops / ms / 1e6).toFixed(1) : '']);
  printTable(`Where one PPO minibatch goes: ${encoder}, 3x84x84, 1x256, batch ${BATCH}, wasm backend (CPU ms per minibatch; a backward includes its filter and input gradients)`, ['layer: pass', 'CPU ms', 'GFLOPS'], rows);
  console.log(`CPU ms per minibatch, all of it: ${total.toFixed(1)}`);
}

main();
