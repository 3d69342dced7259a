/**
 * PPO with threaded: true: the update runs in a worker thread (the built
 * dist/trainers/ppo/update-worker.js) while the main thread goes on, and gives exactly what the
 * same update gives on the main thread; a NaN loss and a crashed worker are clear errors;
 * checkpoints hold a consistent state and a restored one reaches the worker.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { settingsForBehavior } from '../../../src/config';
import { memoryLogger } from '../../../src/common/logger';
import { selectBackend } from '../../../src/networks/backend';
import { StatsRegistry } from '../../../src/stats';
import { AgentManagerQueue } from '../../../src/trainers/agent-manager-queue';
import { NonFiniteLossError } from '../../../src/trainers/non-finite-loss';
import { PpoTrainer, PpoTrainerSettings } from '../../../src/trainers/ppo/trainer';
import { ModelPolicy } from '../../../src/trainers/rl-trainer-base';
import { UpdateThread, UpdateWorkerError } from '../../../src/trainers/update-thread';
import { Trajectory } from '../../../src/trainers/trajectory';
import { RndRewardProvider } from '../../../src/trainers/reward-signals/rnd';
import { CuriosityRewardProvider } from '../../../src/trainers/reward-signals/curiosity';
import { load } from '../../config/config-helpers';
import { tempDir } from '../../helpers/paths';

const SPEC: BehaviorSpec = {
  observationSpecs: [
    { shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'vector' },
  ],
  actionSpec: new ActionSpec(1, [3]),
};

/** batch 4, buffer 8, 2 epochs: 9 experiences make 2 minibatches an epoch, 4 Adam steps an update. */
function settings(threaded: boolean, memory = false, extra = ''): PpoTrainerSettings {
  const { options } = load(
    'behaviors:\n  B:\n    trainer_type: ppo\n' +
      '    hyperparameters: {batch_size: 4, buffer_size: 8, num_epoch: 2}\n' +
      `    network_settings: {num_layers: 1, hidden_units: 8, normalize: true${memory ? ', memory: {memory_size: 6, sequence_length: 2}' : ''}}\n` +
      `    max_steps: 1000\n    threaded: ${threaded}\n` +
      extra,
  );
  return settingsForBehavior(options, 'B', memoryLogger()) as PpoTrainerSettings;
}

const trainers: PpoTrainer[] = [];

function trainer(threaded: boolean, memory = false, extra = ''): PpoTrainer {
  const created = new PpoTrainer({
    behaviorName: 'B',
    spec: SPEC,
    settings: settings(threaded, memory, extra),
    stats: new StatsRegistry().reporter('B'),
    seed: 3,
  });
  trainers.push(created);
  return created;
}

/** A trajectory of `rewards.length` steps acted by `actor`'s policy; `salt` varies the observations. */
function trajectory(actor: PpoTrainer, rewards: number[], salt: number): Trajectory {
  const n = rewards.length;
  const obs = Float32Array.from({ length: n * 2 }, (_, i) => Math.sin(i + salt));
  const acted = actor.model.act([obs], n);
  // With memory, each step's memories as acting carried them (the actions need not come from them here).
  const size = actor.model.memorySize;
  const memories = new Float32Array(n * size);
  for (let t = 1; t < n && size > 0; t++) {
    const before = memories.subarray((t - 1) * size, t * size);
    memories.set(actor.model.act([obs.subarray(2 * (t - 1), 2 * t)], 1, null, { memories: before }).memories!, t * size);
  }
  return new Trajectory({
    agentId: `agent_0-${salt}`,
    behaviorId: 'B',
    steps: {
      length: n,
      obs: [obs],
      continuousActions: acted.action.continuous,
      discreteActions: acted.action.discrete,
      continuousLogProbs: acted.logProbs.continuous,
      discreteLogProbs: acted.logProbs.discrete,
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(n),
      rewards: Float32Array.from(rewards),
      groupRewards: new Float32Array(n),
      groupStatuses: Array.from({ length: n }, () => []),
      ...(size > 0 ? { memories } : {}),
    },
    nextObs: [Float32Array.from([0.5, -0.5])],
    nextGroupObs: [],
    doneReached: true,
    interrupted: false,
  });
}

/** Gives both trainers the same trajectories (acted by `actor`) and advances them once. */
function feed(targets: PpoTrainer[], actor: PpoTrainer, rewards: number[][], queues: Map<PpoTrainer, AgentManagerQueue<ModelPolicy>>): boolean[] {
  const acted = rewards.map((r, i) => trajectory(actor, r, i));
  return targets.map((target) => {
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    for (const t of acted) trajectories.put(t);
    return target.advance(trajectories, queues.get(target)!);
  });
}

/** Advances `target` with no new trajectories, one event-loop turn at a time, until the policy changes; returns the turns. */
async function turnsUntilUpdated(target: PpoTrainer, policies: AgentManagerQueue<ModelPolicy>): Promise<number> {
  let turns = 0;
  while (!target.advance(new AgentManagerQueue<Trajectory>('B'), policies)) {
    turns++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return turns;
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

afterEach(async () => {
  await Promise.all(trainers.splice(0).map((t) => t.close()));
});

describe('PpoTrainer with threaded: true', () => {
  it('hands the full buffer to the worker and keeps going; the update it applies later is the unthreaded one', async () => {
    const threaded = trainer(true);
    const inline = trainer(false);
    const queues = new Map([threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    const before = threaded.model.parameters.slice();

    const [threadedChanged, inlineChanged] = feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    // The main thread's update happened at once; the threaded one is in flight with the buffer handed over.
    expect(inlineChanged).toBe(true);
    expect(threadedChanged).toBe(false);
    expect(threaded.updateBuffer.numExperiences).toBe(0);
    expect(threaded.model.parameters).toEqual(before);
    expect(queues.get(threaded)!.empty()).toBe(true);

    // Meanwhile the main thread takes more experiences: they go to the next buffer.
    feed([threaded], inline, [[0, 0, 1]], queues);
    expect(threaded.updateBuffer.numExperiences).toBe(3);

    const turns = await turnsUntilUpdated(threaded, queues.get(threaded)!);
    expect(turns).toBeGreaterThan(0);
    expect(queues.get(threaded)!.tryGet()).toBe(threaded.policy);
    expect(threaded.optimizer.adam.step).toBe(4);
    expect(threaded.model.parameters).toEqual(inline.model.parameters);
    expect(threaded.optimizer.adam.firstMoment).toEqual(inline.optimizer.adam.firstMoment);
    expect(threaded.optimizer.adam.secondMoment).toEqual(inline.optimizer.adam.secondMoment);
  });

  it('with memory, updates on the same whole sequences and memories as the unthreaded trainer', async () => {
    const threaded = trainer(true, true);
    const inline = trainer(false, true);
    const queues = new Map([threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    // 5 and 4 steps: padded to 6 and 4 rows, whole sequences of 2.
    const [threadedChanged, inlineChanged] = feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    expect([threadedChanged, inlineChanged]).toEqual([false, true]);
    await turnsUntilUpdated(threaded, queues.get(threaded)!);
    expect(threaded.optimizer.adam.step).toBe(4);
    expect(threaded.model.parameters).toEqual(inline.model.parameters);
  });

  it('with RND, no observation is lost: its normalizer keeps what evaluate() saw during the update and gains what the worker\'s updates saw', async () => {
    const rnd = '    reward_signals:\n      extrinsic: {strength: 1.0}\n      rnd: {strength: 0.01, network_settings: {hidden_units: 8, normalize: true}}\n';
    const threaded = trainer(true, false, rnd);
    const inline = trainer(false, false, rnd);
    const queues = new Map([threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    // While the worker updates, the main thread evaluates 3 more experiences; the unthreaded
    // trainer sees them after its update.
    feed([threaded, inline], inline, [[0, 0, 1]], queues);
    await threaded.finishUpdate();

    const [ours, reference] = [threaded, inline].map((t) => t.optimizer.rewardProviders.get('rnd') as RndRewardProvider);
    expect(ours.adam.step).toBe(4);
    expect(ours.predictor.parameters).toEqual(reference.predictor.parameters);
    // 1 initial step, 9 + 3 experiences evaluated, 2 epochs of 2 minibatches of 4 in the update.
    expect(ours.normalizer!.steps).toBe(1 + 12 + 16);
    expect(ours.normalizer!.steps).toBe(reference.normalizer!.steps);
    for (let f = 0; f < 2; f++) {
      expect(ours.normalizer!.mean[f]).toBeCloseTo(reference.normalizer!.mean[f], 10);
      expect(ours.normalizer!.variance[f]).toBeCloseTo(reference.normalizer!.variance[f], 8);
    }
  });

  it('with curiosity, the worker trains it on the buffer\'s next observations as the unthreaded trainer does', async () => {
    const curiosity = '    reward_signals:\n      extrinsic: {strength: 1.0}\n      curiosity: {strength: 0.02, network_settings: {hidden_units: 8}}\n';
    const threaded = trainer(true, false, curiosity);
    const inline = trainer(false, false, curiosity);
    const queues = new Map([threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    await threaded.finishUpdate();
    const [ours, reference] = [threaded, inline].map((t) => t.optimizer.rewardProviders.get('curiosity') as CuriosityRewardProvider);
    expect(ours.adam.step).toBe(4);
    expect(ours.parameters).toEqual(reference.parameters);
    expect(ours.adam.secondMoment).toEqual(reference.adam.secondMoment);
  });

  it('finishUpdate() waits for the update in flight and applies it', async () => {
    const threaded = trainer(true);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    feed([threaded], threaded, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], new Map([[threaded, policies]]));
    expect(threaded.optimizer.adam.step).toBe(0);
    await threaded.finishUpdate();
    expect(threaded.optimizer.adam.step).toBe(4);
  });

  it('holds the environments back once the next buffer is full while an update runs: waitUntilReady()', async () => {
    const threaded = trainer(true);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const queues = new Map([[threaded, policies]]);
    feed([threaded], threaded, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    // The next buffer fills before the first update is back: the caller must wait for it.
    feed([threaded], threaded, [[1, 0, 0, 0, 1], [0, 0, 1, 1]], queues);
    expect(threaded.updateBuffer.numExperiences).toBe(9);
    await threaded.waitUntilReady();
    expect(threaded.advance(new AgentManagerQueue<Trajectory>('B'), policies)).toBe(true);
    expect(threaded.optimizer.adam.step).toBe(4);
    // The full buffer went to the worker at once.
    expect(threaded.updateBuffer.numExperiences).toBe(0);
    await threaded.finishUpdate();
    expect(threaded.optimizer.adam.step).toBe(8);
  });

  it('stops on a NaN loss in the worker with the error the unthreaded trainer gives', async () => {
    const threaded = trainer(true);
    const inline = trainer(false);
    const queues = new Map([threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    const rewards = [[0, 1, 0, NaN, 1], [1, 0, 0, 1]];
    let inlineError: unknown;
    try {
      feed([inline], inline, rewards, queues);
    } catch (error) {
      inlineError = error;
    }
    expect(inlineError).toBeInstanceOf(NonFiniteLossError);
    expect((inlineError as Error).message).toMatch(/^Behavior B: The PPO loss is NaN .* at step 9: the update was not applied\.$/);

    const before = threaded.model.parameters.slice();
    feed([threaded], inline, rewards, queues);
    const error = await turnsUntilUpdated(threaded, queues.get(threaded)!).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(NonFiniteLossError);
    expect((error as Error).message).toBe((inlineError as Error).message);
    expect(threaded.model.parameters).toEqual(before);
  });

  it('checkpoints: one taken during an update holds the state before it; one after it restores into a new trainer', async () => {
    const folder = tempDir('threaded-checkpoints');
    const threaded = trainer(true);
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const initial = threaded.model.parameters.slice();
    feed([threaded], threaded, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], new Map([[threaded, policies]]));
    const during = path.join(folder, 'during.ckpt');
    threaded.saveCheckpoint(during, threaded.step);
    await threaded.finishUpdate();
    const after = path.join(folder, 'after.ckpt');
    threaded.saveCheckpoint(after, threaded.step);

    const restoredDuring = trainer(true);
    expect(restoredDuring.loadCheckpoint(during)).toBe(9);
    expect(restoredDuring.model.parameters).toEqual(initial);
    expect(restoredDuring.optimizer.adam.step).toBe(0);

    const restored = trainer(true);
    expect(restored.loadCheckpoint(after)).toBe(9);
    expect(restored.model.parameters).toEqual(threaded.model.parameters);
    expect(restored.optimizer.adam.secondMoment).toEqual(threaded.optimizer.adam.secondMoment);
    expect(restored.model.normalizer!.mean).toEqual(threaded.model.normalizer!.mean);
    expect(fs.statSync(after).size).toBe(fs.statSync(during).size);
  });

  it('a checkpoint restored after the worker started reaches it: the next update starts from it', async () => {
    const folder = tempDir('threaded-resume');
    const source = trainer(false);
    const threaded = trainer(true);
    const inline = trainer(false);
    const queues = new Map([source, threaded, inline].map((t) => [t, new AgentManagerQueue<ModelPolicy>('B')]));
    feed([source], source, [[0, 1, 0, 0, 1, 1], [1, 1, 0, 1]], queues);
    const file = path.join(folder, 'source.ckpt');
    source.saveCheckpoint(file, 10);

    // One update each first, so that the worker holds weights of its own.
    feed([threaded, inline], inline, [[0, 1, 0, 0, 1], [1, 0, 0, 1]], queues);
    await threaded.finishUpdate();
    for (const t of [threaded, inline]) t.loadCheckpoint(file);
    feed([threaded, inline], inline, [[1, 1, 0, 0, 1], [0, 0, 0, 1]], queues);
    await threaded.finishUpdate();
    expect(threaded.optimizer.adam.step).toBe(8);
    expect(threaded.model.parameters).toEqual(inline.model.parameters);
  });
});

describe('UpdateThread', () => {
  it('turns a worker that fails into an error naming the behavior, not a hang', async () => {
    // A visual observation: the worker cannot build these networks, so it fails as it starts.
    const updater = new UpdateThread('Crashing', 'ppo', 'wasm', {
      behaviorName: 'Crashing',
      observationSpecs: [
        { shape: [8, 8, 3], dimensionProperty: [], observationType: ObservationType.DEFAULT, name: 'camera' },
      ],
      continuousSize: 1,
      discreteBranches: [],
      settings: settings(true),
      seed: 1,
    });
    const request = { step: 0, columns: [], normalizer: null, optimizerState: null, rewardSignalNormalizers: [] };
    await expect(updater.update(request, [])).rejects.toThrow(UpdateWorkerError);
    await expect(updater.update(request, [])).rejects.toThrow(/^Behavior Crashing: the PPO update worker failed: /);
    await updater.close();
  });
});
