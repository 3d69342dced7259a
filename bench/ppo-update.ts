/**
 * npx tsx bench/ppo-update.ts: milliseconds per PPO minibatch update on 3DBall's
 * hyperparameters (batch 64, actor and critic of 2 x 128 units, normalize, 8 observations,
 * 2 continuous actions), per tfjs backend, for the straightforward tfjs version (autodiff,
 * tf.train.adam: test/helpers/ppo-reference-update.ts) and ours (PpoOptimizer); with the
 * seconds one whole update takes (buffer 12000, 3 epochs: 561 minibatches) and the cost of one
 * batched act() for 12 agents (3DBall's agents of one area set).
 * Then visual rows on the wasm backend: one PPO update (ms per minibatch, seconds per update) on
 * (a) GridWorld's settings (a 3x64x84 camera and a 2-value goal, 5 discrete actions, simple
 * encoder, 1 x 128, buffer 256, batch 32, 3 epochs), the goal an ordinary input, then a goal
 * signal conditioning the bodies through upstream's hypernetwork, (b) nature_cnn and (c) resnet on a 3x84x84
 * camera (1 x 256, buffer 1024, batch 64, 3 epochs), against ML-Agents' Python trainer measured
 * here with its own optimizer; and acting for 12 agents with one 84x84 camera each.
 * Then a recurrent row on the wasm backend: one PPO update on Hallway's settings (108 vector
 * values, one branch of 5, 2 x 128, memory_size 128, sequence_length 64, buffer 1024, batch 128,
 * 3 epochs) against ML-Agents' optimizer measured here, and acting for 12 agents with memory.
 * Then reward-signal rows on the wasm backend: one PPO update on Pyramids' settings (observations
 * 56 + 56 + 56 + 4, one branch of 5, 2 x 512, buffer 2048, batch 128, 3 epochs) with curiosity
 * (encoding 256, 2 layers) or RND (3 x 64) beside the extrinsic signal, each minibatch's
 * reward-signal update included, against ML-Agents' optimizer measured here.
 * Then a POCA row on the wasm backend: one POCA update (actor, and the centralized critic's values
 * and baselines) of agents in groups of 4 on config/poca/DungeonEscape.yaml's hyperparameters
 * (batch 1024, buffer 10240, 3 epochs: 30 minibatches; 2 x 256, no normalization), one vector
 * observation of 120 values and one branch of 7, against ML-Agents' TorchPOCAOptimizer on the same
 * shapes (bench/ml-agents-poca-update.py).
 * With --backend webgpu (or webgpu-software, SwiftShader's, for a functional check only: its
 * figures are the CPU's, not a GPU's), 3DBall's row, the visual rows and Hallway's instead run
 * their updates on that backend as the update thread of a training run does (each read awaited;
 * the minibatches made on wasm, where acting stays), beside wasm's, with the transfers of one
 * minibatch (Hallway's alone with --recurrent-only), then the reward-signal rows (PPO's minibatch
 * and the signal's update on it; alone with --reward-signals-only), then the POCA row (alone with
 * --poca-only).
 * Options: --backends wasm,cpu  --min-seconds 2  --visual-only  --recurrent-only  --reward-signals-only  --poca-only  --backend webgpu
 */
import { parseArgs } from 'util';
import { memoryLogger } from '../src/common/logger';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../src/env/behavior-spec';
import { ActorCritic } from '../src/networks/actor-critic';
import { BackendName, selectBackend } from '../src/networks/backend';
import { SeededRandom } from '../src/common/random';
import { PpoMinibatch } from '../src/trainers/ppo/loss';
import { PpoOptimizer, PpoOptimizerSettings } from '../src/trainers/ppo/optimizer';
import { ReferencePpoUpdate } from '../test/helpers/ppo-reference-update';
import type { EncoderType, MemorySettings, NetworkSettings, POCASettings } from '../src/config/settings';
import { printTable } from './table';
import { ppoMinibatches } from './ppo-minibatches';
import { createRewardProvider } from '../src/trainers/reward-signals/registry';
import type { RewardBatch, RewardProvider } from '../src/trainers/reward-signals/reward-provider';
import { measure, measureAsync } from './measure';
import { ReadingPass, runPassAsync } from '../src/networks/tensor-io';
import { TransferCounts, webGpuTransfers } from '../src/networks/webgpu';
import { GroupActionBatch, PocaCritic } from '../src/networks/poca-critic';
import { PocaMinibatch, PocaOptimizer } from '../src/trainers/poca/optimizer';

const BATCH = 64;
const MINIBATCHES_PER_UPDATE = Math.floor(12000 / BATCH) * 3;
const TARGET_MS = 6.5;

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [8], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' }],
  actionSpec: ActionSpec.createContinuous(2),
};
const SETTINGS: PpoOptimizerSettings = {
  hyperparameters: {
    learning_rate: 3e-4,
    beta: 1e-3,
    epsilon: 0.2,
    learning_rate_schedule: 'linear',
    beta_schedule: 'linear',
    epsilon_schedule: 'linear',
  },
  maxSteps: 500000,
};

function newModel(
  spec = SPEC,
  hiddenUnits = 128,
  numLayers = 2,
  encoder: EncoderType = 'simple',
  normalize = true,
  memory: MemorySettings | null = null,
): ActorCritic {
  return new ActorCritic(spec, {
    network: { normalize, hidden_units: hiddenUnits, num_layers: numLayers, vis_encode_type: encoder, memory, goal_conditioning_type: 'hyper', deterministic: false },
    rewardSignals: ['extrinsic'],
    sharedCritic: false,
    seed: 1,
  });
}

const camera = (channels: number, height: number, width: number) => ({
  shape: [channels, height, width],
  dimensionProperty: [DimensionProperty.NONE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.TRANSLATIONAL_EQUIVARIANCE],
  observationType: ObservationType.DEFAULT,
  name: 'camera',
});

interface VisualCase {
  readonly label: string;
  readonly spec: BehaviorSpec;
  readonly encoder: EncoderType;
  readonly hiddenUnits: number;
  readonly bufferSize: number;
  readonly batch: number;
  /** ML-Agents' Python trainer, ms per minibatch, measured on this machine with its own optimizer. */
  readonly mlAgentsMs: number;
}

const VISUAL_CASES: VisualCase[] = [
  {
    label: '(a) GridWorld: 3x64x84 + goal, simple, 1x128',
    spec: {
      observationSpecs: [camera(3, 64, 84), { shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'goal' }],
      actionSpec: ActionSpec.createDiscrete([5]),
    },
    encoder: 'simple',
    hiddenUnits: 128,
    bufferSize: 256,
    batch: 32,
    mlAgentsMs: 170,
  },
  {
    label: '(a) GridWorld, the goal a goal signal: a hypernetwork (goal_conditioning_type hyper)',
    spec: {
      observationSpecs: [camera(3, 64, 84), { shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.GOAL_SIGNAL, name: 'goal' }],
      actionSpec: ActionSpec.createDiscrete([5]),
    },
    encoder: 'simple',
    hiddenUnits: 128,
    bufferSize: 256,
    batch: 32,
    // Upstream's TorchPPOOptimizer on these shapes (bench/ml-agents-gridworld-update.py; torch 1.13
    // on its default single thread here): 355 to 621 ms, the median of runs alternating with ours.
    mlAgentsMs: 358,
  },
  { label: '(b) nature_cnn, 3x84x84, 1x256', spec: { observationSpecs: [camera(3, 84, 84)], actionSpec: ActionSpec.createContinuous(2) }, encoder: 'nature_cnn', hiddenUnits: 256, bufferSize: 1024, batch: 64, mlAgentsMs: 250 },
  { label: '(c) resnet, 3x84x84, 1x256', spec: { observationSpecs: [camera(3, 84, 84)], actionSpec: ActionSpec.createContinuous(2) }, encoder: 'resnet', hiddenUnits: 256, bufferSize: 1024, batch: 64, mlAgentsMs: 600 },
];

/** The visual rows, on the wasm backend. */
async function visualBenchmarks(minSeconds: number): Promise<void> {
  await selectBackend('wasm', memoryLogger());
  const rows: string[][] = [];
  for (const c of VISUAL_CASES) {
    const model = newModel(c.spec, c.hiddenUnits, 1, c.encoder, false);
    const batches = ppoMinibatches(model, 4, c.spec, c.batch);
    const optimizer = new PpoOptimizer(model, SETTINGS);
    const ms = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds, 3);
    const perUpdate = (c.bufferSize / c.batch) * 3;
    rows.push([c.label, ms.toFixed(1), ((ms * perUpdate) / 1000).toFixed(2), String(c.mlAgentsMs), (c.mlAgentsMs / ms).toFixed(1)]);
    model.dispose();
  }
  const actModel = newModel(VISUAL_CASES.find((c) => c.encoder === 'nature_cnn')!.spec, 256, 1, 'simple', false);
  const cameras = [new Float32Array(12 * 3 * 84 * 84).map((_, i) => (i % 255) / 255)];
  const act = measure(() => actModel.act(cameras, 12), minSeconds / 2, 3);
  actModel.dispose();
  printTable(
    'PPO updates with visual observations (wasm backend, 3 epochs)',
    ['case', 'ms/minibatch', 's/update', 'ML-Agents ms/minibatch', 'x faster'],
    rows,
  );
  console.log(`act(), 12 agents with one 84x84 camera each (simple encoder, 1x256): ${act.toFixed(2)} ms`);
}

/**
 * 3DBall's row and the visual rows with their updates on a WebGPU backend, against wasm's: the
 * same weights and minibatches (made on wasm), each update as the update thread runs it.
 */
async function gpuBenchmarks(backend: BackendName, minSeconds: number, recurrentOnly: boolean): Promise<void> {
  const cases = [
    { label: '3DBall: 8 values, 2x128, batch 64', spec: SPEC, encoder: 'simple' as EncoderType, hiddenUnits: 128, numLayers: 2, normalize: true, batch: BATCH, memory: null },
    ...VISUAL_CASES.map((c) => ({ ...c, numLayers: 1, normalize: false, memory: null })),
    { label: 'Hallway: 108 values, 2x128, memory 128, sequence 64, batch 128', spec: HALLWAY_SPEC, encoder: 'simple' as EncoderType, hiddenUnits: 128, numLayers: 2, normalize: false, batch: HALLWAY_BATCH, memory: HALLWAY_MEMORY },
  ].filter((c) => !recurrentOnly || c.memory !== null);
  const rows: string[][] = [];
  let adapter = '';
  for (const c of cases) {
    await selectBackend('wasm', memoryLogger());
    const model = newModel(c.spec, c.hiddenUnits, c.numLayers, c.encoder, c.normalize, c.memory);
    const batches = c.memory === null ? ppoMinibatches(model, 4, c.spec, c.batch) : hallwayMinibatches(model);
    const gpuModel = newModel(c.spec, c.hiddenUnits, c.numLayers, c.encoder, c.normalize, c.memory);
    if (model.normalizer !== null) gpuModel.normalizer!.copyFrom(model.normalizer);
    const optimizer = new PpoOptimizer(model, SETTINGS);
    const wasmMs = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds, 3);
    model.dispose();

    adapter = await startBackend(backend);
    const gpu = await minibatchesWithinOneUpdate(new PpoOptimizer(gpuModel, SETTINGS), batches, minSeconds);
    gpuModel.dispose();
    rows.push([c.label, wasmMs.toFixed(1), gpu.ms.toFixed(1), (wasmMs / gpu.ms).toFixed(2), gpu.transfers]);
    // Each row as soon as it is measured: on a software adapter the visual rows take minutes.
    console.log(rows[rows.length - 1].join(' | '));
  }
  console.log(adapter);
  printTable(`PPO minibatch updates, wasm against ${backend} (ms/minibatch)`, ['case', 'wasm', backend, 'x wasm', 'transfers a minibatch'], rows);
}

/** Starts `backend`, or says why it did not; returns the line naming its adapter. */
async function startBackend(backend: BackendName): Promise<string> {
  const logger = memoryLogger();
  if ((await selectBackend(backend, logger)).name !== backend) throw new Error(`The ${backend} backend did not start: ${logger.lines[0].message}`);
  return logger.lines[0].message;
}

/** An optimizer whose minibatches run as reading passes within one update (PPO's, POCA's). */
interface UpdatesOnDevice<Batch> {
  updatingOnDevice<T>(pass: ReadingPass<T>): ReadingPass<T>;
  updatePass(batch: Batch, step: number): ReadingPass<unknown>;
}

/**
 * Milliseconds per minibatch on the running backend within one update, as the update thread runs
 * them (the weights stay on the GPU between minibatches), after 3 to warm up; and the transfers
 * of one minibatch.
 */
async function minibatchesWithinOneUpdate<Batch>(optimizer: UpdatesOnDevice<Batch>, batches: readonly Batch[], minSeconds: number): Promise<{ ms: number; transfers: string }> {
  let before = webGpuTransfers();
  let after = before;
  function* minibatchesOfOneUpdate(): ReadingPass<number> {
    for (let i = 0; i < 3; i++) yield* optimizer.updatePass(batches[i % batches.length], 1000 * i);
    before = webGpuTransfers();
    yield* optimizer.updatePass(batches[0], 0);
    after = webGpuTransfers();
    let calls = 0;
    const start = performance.now();
    while (performance.now() - start < minSeconds * 1000 || calls < 3) yield* optimizer.updatePass(batches[calls % batches.length], 1000 * calls++);
    return (performance.now() - start) / calls;
  }
  const ms = await runPassAsync(optimizer.updatingOnDevice(minibatchesOfOneUpdate()));
  return { ms, transfers: transfersBetween(before, after) };
}

/** The transfers between two counts, as a table cell. */
function transfersBetween(before: TransferCounts, after: TransferCounts): string {
  return `${after.uploads - before.uploads} up (${((after.uploadBytes - before.uploadBytes) / 1024).toFixed(0)} KiB), ${after.downloads - before.downloads} down`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      backend: { type: 'string' },
      backends: { type: 'string', default: 'wasm,cpu' },
      'min-seconds': { type: 'string', default: '2' },
      'visual-only': { type: 'boolean', default: false },
      'recurrent-only': { type: 'boolean', default: false },
      'reward-signals-only': { type: 'boolean', default: false },
      'poca-only': { type: 'boolean', default: false },
    },
  });
  const minSeconds = Number(values['min-seconds']);
  if (values.backend !== undefined) {
    const backend = values.backend as BackendName;
    if (!values['reward-signals-only'] && !values['poca-only']) await gpuBenchmarks(backend, minSeconds, values['recurrent-only'] === true);
    if (!values['recurrent-only'] && !values['poca-only']) await gpuRewardSignalBenchmarks(backend, minSeconds);
    if (!values['recurrent-only'] && !values['reward-signals-only']) await gpuPocaBenchmark(backend, minSeconds);
    return;
  }
  const only = [values['visual-only'], values['recurrent-only'], values['reward-signals-only'], values['poca-only']];
  const all = !only.some(Boolean);
  if (all) await vectorBenchmarks(values.backends as string, minSeconds);
  if (all || values['visual-only']) await visualBenchmarks(minSeconds);
  if (all || values['recurrent-only']) await recurrentBenchmark(minSeconds);
  if (all || values['reward-signals-only']) await rewardSignalBenchmarks(minSeconds);
  if (all || values['poca-only']) await pocaBenchmark(minSeconds);
}

/**
 * ML-Agents' TorchPOCAOptimizer on the POCA row's shapes, ms per minibatch, measured on this
 * machine (bench/ml-agents-poca-update.py; Debian's torch 1.13, generic BLAS): 14706 and 10122 ms
 * in two runs alternating with ours (2756 and 2634 ms); the faster one.
 */
const DUNGEON_ESCAPE_ML_AGENTS_MS = 10122;

/** The POCA row's behavior, networks and hyperparameters: DungeonEscape's, agents in groups of 4. */
const DUNGEON_ESCAPE: { readonly spec: BehaviorSpec; readonly network: NetworkSettings; readonly hyperparameters: POCASettings; readonly slots: number } = {
  spec: {
    observationSpecs: [{ shape: [120], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'rays' }],
    actionSpec: ActionSpec.createDiscrete([7]),
  },
  network: { normalize: false, hidden_units: 256, num_layers: 2, vis_encode_type: 'simple', memory: null, goal_conditioning_type: 'hyper', deterministic: false },
  hyperparameters: {
    batch_size: 1024,
    buffer_size: 10240,
    learning_rate: 3e-4,
    beta: 0.01,
    epsilon: 0.2,
    lambd: 0.95,
    num_epoch: 3,
    learning_rate_schedule: 'constant',
    beta_schedule: 'linear',
    epsilon_schedule: 'linear',
  },
  /** Groupmates of each agent. */
  slots: 3,
};

/** A fresh actor, critic and optimizer of the POCA row (the same weights every time). */
function dungeonEscapeOptimizer(): PocaOptimizer {
  const { spec, network, hyperparameters } = DUNGEON_ESCAPE;
  const model = new ActorCritic(spec, { network, rewardSignals: ['extrinsic'], sharedCritic: false, actorOnly: true, seed: 1 });
  const critic = new PocaCritic(spec, network, ['extrinsic'], 2);
  return new PocaOptimizer(model, critic, { hyperparameters, maxSteps: 20_000_000, rewardProviders: new Map(), behavioralCloning: null });
}

/** Two minibatches from `optimizer`'s acting and its critic's estimates (on wasm, where acting runs). */
function dungeonEscapeBatches({ model, critic }: PocaOptimizer): PocaMinibatch[] {
  const { spec, slots, hyperparameters } = DUNGEON_ESCAPE;
  const batch = hyperparameters.batch_size;
  const random = new SeededRandom(5);
  return Array.from({ length: 2 }, () => {
    const ppo = ppoMinibatches(model, 1, spec, batch)[0];
    const group: GroupActionBatch = {
      count: batch,
      slots,
      observations: ppo.observations,
      groupObservations: [new Float32Array(batch * slots * 120).map(() => random.gaussian())],
      groupContinuousActions: new Float32Array(0),
      groupDiscreteActions: Int32Array.from({ length: batch * slots }, () => random.int(7)),
    };
    const estimates = critic.estimate(group);
    return { ...ppo, oldValues: { extrinsic: estimates.values[0] }, oldBaselines: { extrinsic: estimates.baselines[0] }, group };
  });
}

function disposeNetworks({ model, critic }: PocaOptimizer): void {
  model.dispose();
  critic.dispose();
}

/** One POCA update of agents in groups of 4 on DungeonEscape's hyperparameters (wasm backend). */
async function pocaBenchmark(minSeconds: number): Promise<void> {
  await selectBackend('wasm', memoryLogger());
  const optimizer = dungeonEscapeOptimizer();
  const batches = dungeonEscapeBatches(optimizer);
  const ms = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds, 3);
  const { buffer_size: bufferSize, batch_size: batch, num_epoch: epochs } = DUNGEON_ESCAPE.hyperparameters;
  const perUpdate = (bufferSize / batch) * epochs;
  disposeNetworks(optimizer);
  printTable(
    'POCA update (wasm backend): groups of 4, 120 values, discrete 7, 2x256, DungeonEscape: buffer 10240, batch 1024, 3 epochs',
    ['case', 'ms/minibatch', 's/update', 'ML-Agents ms/minibatch', 'x faster'],
    [['DungeonEscape-style', ms.toFixed(1), ((ms * perUpdate) / 1000).toFixed(2), String(DUNGEON_ESCAPE_ML_AGENTS_MS), (DUNGEON_ESCAPE_ML_AGENTS_MS / ms).toFixed(1)]],
  );
}

/**
 * The POCA row with its update on a WebGPU backend, against wasm's: the same weights and
 * minibatches (made on wasm), the actor's and the critic's weights on the GPU for the update.
 */
async function gpuPocaBenchmark(backend: BackendName, minSeconds: number): Promise<void> {
  await selectBackend('wasm', memoryLogger());
  const wasm = dungeonEscapeOptimizer();
  const batches = dungeonEscapeBatches(wasm);
  const wasmMs = measure((i) => wasm.update(batches[i % batches.length], 1000 * i), minSeconds, 3);
  disposeNetworks(wasm);
  // On a software adapter the row takes minutes: wasm's figure first.
  console.log(`DungeonEscape-style: ${wasmMs.toFixed(1)} ms a minibatch on wasm; now on ${backend}`);

  const adapter = await startBackend(backend);
  const optimizer = dungeonEscapeOptimizer();
  const gpu = await minibatchesWithinOneUpdate(optimizer, batches, minSeconds);
  disposeNetworks(optimizer);
  console.log(adapter);
  printTable(
    `POCA minibatch updates, wasm against ${backend} (ms/minibatch): groups of 4, 120 values, discrete 7, 2x256, batch ${DUNGEON_ESCAPE.hyperparameters.batch_size}`,
    ['case', 'wasm', backend, 'x wasm', 'transfers a minibatch'],
    [['DungeonEscape-style', wasmMs.toFixed(1), gpu.ms.toFixed(1), (wasmMs / gpu.ms).toFixed(2), gpu.transfers]],
  );
}

/** ML-Agents' Python trainer on Pyramids' settings, ms per minibatch (reward-signal update included), measured on this machine with its own optimizer. */
const PYRAMIDS_ML_AGENTS_MS = { curiosity: 295, rnd: 145 } as const;

/** Pyramids' behavior, and its curiosity and RND settings (2 x 512 policy; curiosity 2 x 256, RND 3 x 64). */
const PYRAMIDS = (() => {
  const vector = (size: number, name: string) => ({ shape: [size], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name });
  const spec: BehaviorSpec = {
    observationSpecs: [vector(56, 'rays0'), vector(56, 'rays1'), vector(56, 'rays2'), vector(4, 'vector')],
    actionSpec: ActionSpec.createDiscrete([5]),
  };
  const network = (hidden: number, layers: number) => ({ normalize: false, hidden_units: hidden, num_layers: layers, vis_encode_type: 'simple' as const, memory: null, goal_conditioning_type: 'hyper' as const, deterministic: false });
  const signals = {
    curiosity: { gamma: 0.99, strength: 0.02, learning_rate: 3e-4, encoding_size: 256, network_settings: network(256, 2) },
    rnd: { gamma: 0.99, strength: 0.01, learning_rate: 1e-4, encoding_size: null, network_settings: network(64, 3) },
  } as const;
  return { spec, network, signals, batch: 128 };
})();

type PyramidsSignal = keyof typeof PYRAMIDS.signals;

/** A fresh policy and signal provider on Pyramids' settings (the same weights for a seed). */
function pyramidsNetworks(name: PyramidsSignal): { model: ActorCritic; optimizer: PpoOptimizer; provider: RewardProvider } {
  const model = new ActorCritic(PYRAMIDS.spec, { network: PYRAMIDS.network(512, 2), rewardSignals: ['extrinsic', name], sharedCritic: false, seed: 1 });
  return { model, optimizer: new PpoOptimizer(model, SETTINGS), provider: createRewardProvider(name, PYRAMIDS.signals[name], 'Bench', PYRAMIDS.spec, 1) };
}

/** Minibatches for the policy and for the signal, from `model`'s acting (on wasm). */
function pyramidsBatches(model: ActorCritic, name: PyramidsSignal): Array<{ minibatch: PpoMinibatch; rewards: RewardBatch }> {
  const { spec, batch } = PYRAMIDS;
  const random = new SeededRandom(4);
  return ppoMinibatches(model, 4, spec, batch).map((minibatch) => {
    const rewards: RewardBatch = {
      count: batch,
      observations: minibatch.observations,
      nextObservations: minibatch.observations.map((obs) => obs.map(() => random.gaussian())),
      environmentRewards: new Float32Array(batch),
      discreteActions: minibatch.discreteActions,
      dones: new Float32Array(batch),
    };
    return { minibatch: { ...minibatch, returns: { ...minibatch.returns, [name]: minibatch.returns.extrinsic } }, rewards };
  });
}

/** One PPO update on Pyramids' settings with curiosity or RND beside the extrinsic signal (wasm backend). */
async function rewardSignalBenchmarks(minSeconds: number): Promise<void> {
  await selectBackend('wasm', memoryLogger());
  const rows: string[][] = [];
  for (const name of ['curiosity', 'rnd'] as const) {
    const { model, optimizer, provider } = pyramidsNetworks(name);
    const batches = pyramidsBatches(model, name);
    const ms = measure((i) => {
      const { minibatch, rewards } = batches[i % batches.length];
      optimizer.update(minibatch, 1000 * i);
      provider.update(rewards);
    }, minSeconds, 3);
    const perUpdate = (2048 / PYRAMIDS.batch) * 3;
    const mlAgents = PYRAMIDS_ML_AGENTS_MS[name];
    rows.push([name, ms.toFixed(1), ((ms * perUpdate) / 1000).toFixed(2), String(mlAgents), (mlAgents / ms).toFixed(1)]);
    model.dispose();
  }
  printTable(
    "PPO update with a reward signal (wasm backend): Pyramids, 56+56+56+4 values, discrete 5, 2x512, buffer 2048, batch 128, 3 epochs; curiosity 2x256, RND 3x64",
    ['signal', 'ms/minibatch', 's/update', 'ML-Agents ms/minibatch', 'x faster'],
    rows,
  );
}

/**
 * The reward-signal rows with their updates on a WebGPU backend, against wasm's: PPO's minibatch
 * and the signal's update on it, the same weights and minibatches, as the update thread runs them.
 */
async function gpuRewardSignalBenchmarks(backend: BackendName, minSeconds: number): Promise<void> {
  const rows: string[][] = [];
  for (const name of ['curiosity', 'rnd'] as const) {
    await selectBackend('wasm', memoryLogger());
    const wasm = pyramidsNetworks(name);
    const batches = pyramidsBatches(wasm.model, name);
    const wasmMs = measure((i) => {
      const { minibatch, rewards } = batches[i % batches.length];
      wasm.optimizer.update(minibatch, 1000 * i);
      wasm.provider.update(rewards);
    }, minSeconds, 3);
    wasm.model.dispose();

    await startBackend(backend);
    const gpu = pyramidsNetworks(name);
    const update = async (i: number) => {
      const { minibatch, rewards } = batches[i % batches.length];
      await runPassAsync(gpu.optimizer.updatePass(minibatch, 1000 * i));
      await runPassAsync(gpu.provider.updatePass(rewards));
    };
    const gpuMs = await measureAsync(update, minSeconds, 3);
    const before = webGpuTransfers();
    await update(0);
    const transfers = transfersBetween(before, webGpuTransfers());
    gpu.model.dispose();
    rows.push([`Pyramids with ${name}`, wasmMs.toFixed(1), gpuMs.toFixed(1), (wasmMs / gpuMs).toFixed(2), transfers]);
    console.log(rows[rows.length - 1].join(' | '));
  }
  printTable(`PPO minibatch and reward-signal updates, wasm against ${backend} (ms/minibatch)`, ['case', 'wasm', backend, 'x wasm', 'transfers a minibatch'], rows);
}

/** ML-Agents' Python trainer on Hallway's settings, ms per minibatch, measured on this machine with its own optimizer. */
const HALLWAY_ML_AGENTS_MS = 136;

/** Hallway's shapes (config/ppo/Hallway.yaml): 108 values, one branch of 5, memory 128 over sequences of 64, batch 128. */
const HALLWAY_MEMORY: MemorySettings = { memory_size: 128, sequence_length: 64 };
const HALLWAY_BATCH = 128;
const HALLWAY_SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [108], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'rays' }],
  actionSpec: ActionSpec.createDiscrete([5]),
};

/** Four minibatches of Hallway's, each sequence from random memories. */
function hallwayMinibatches(model: ActorCritic): PpoMinibatch[] {
  const sequences = HALLWAY_BATCH / HALLWAY_MEMORY.sequence_length;
  const random = new SeededRandom(3);
  const memories = () => new Float32Array(sequences * HALLWAY_MEMORY.memory_size).map(() => 0.3 * random.gaussian());
  return Array.from({ length: 4 }, () => {
    const base = ppoMinibatches(model, 1, HALLWAY_SPEC, HALLWAY_BATCH)[0];
    return { ...base, masks: new Float32Array(HALLWAY_BATCH).fill(1), sequences: { length: HALLWAY_MEMORY.sequence_length, actor: memories(), critic: memories() } };
  });
}

/** One PPO update on Hallway's settings, and acting for 12 agents with memory (wasm backend). */
async function recurrentBenchmark(minSeconds: number): Promise<void> {
  await selectBackend('wasm', memoryLogger());
  const memory = HALLWAY_MEMORY;
  const model = newModel(HALLWAY_SPEC, 128, 2, 'simple', false, memory);
  const batch = HALLWAY_BATCH;
  const batches = hallwayMinibatches(model);
  const random = new SeededRandom(4);
  const optimizer = new PpoOptimizer(model, SETTINGS);
  const ms = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds, 3);
  const perUpdate = (1024 / batch) * 3;
  const agents = [new Float32Array(12 * 108).map(() => random.gaussian())];
  const agentMemories = new Float32Array(12 * memory.memory_size);
  const act = measure(() => model.act(agents, 12, null, { memories: agentMemories }), minSeconds / 2);
  model.dispose();
  printTable(
    'PPO update with memory (wasm backend): Hallway, 108 values, discrete 5, 2x128, memory 128, sequence 64, buffer 1024, batch 128, 3 epochs',
    ['case', 'ms/minibatch', 's/update', 'ML-Agents ms/minibatch', 'x faster'],
    [['Hallway', ms.toFixed(1), ((ms * perUpdate) / 1000).toFixed(2), String(HALLWAY_ML_AGENTS_MS), (HALLWAY_ML_AGENTS_MS / ms).toFixed(1)]],
  );
  console.log(`act(), 12 agents with memory (Hallway's network): ${act.toFixed(2)} ms`);
}

async function vectorBenchmarks(backends: string, minSeconds: number): Promise<void> {
  const rows: string[][] = [];
  for (const backend of backends.split(',') as BackendName[]) {
    await selectBackend(backend, memoryLogger());
    const model = newModel();
    const batches = ppoMinibatches(model, 16, SPEC, BATCH);
    const reference = new ReferencePpoUpdate(model, SETTINGS);
    const straightforward = measure((i) => reference.update(batches[i % batches.length]), minSeconds);
    reference.dispose();
    const optimizer = new PpoOptimizer(model, SETTINGS);
    const ours = measure((i) => optimizer.update(batches[i % batches.length], 1000 * i), minSeconds);
    const agents = [new Float32Array(12 * 8).fill(0.5)];
    const act = measure(() => model.act(agents, 12), minSeconds / 2);
    model.dispose();
    const row = (version: string, ms: number) => [
      backend,
      version,
      ms.toFixed(2),
      ((ms * MINIBATCHES_PER_UPDATE) / 1000).toFixed(2),
      backend === 'wasm' ? (ms < TARGET_MS ? `yes (< ${TARGET_MS})` : `no (>= ${TARGET_MS})`) : '',
    ];
    rows.push(row('straightforward', straightforward), row('ours', ours));
    rows.push([backend, 'act(), 12 agents', act.toFixed(3), '', '']);
  }
  const header = ['backend', 'version', 'ms/minibatch', `s/update (${MINIBATCHES_PER_UPDATE})`, 'target met'];
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells: string[]) => cells.map((cell, c) => cell.padEnd(widths[c])).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

void main();
