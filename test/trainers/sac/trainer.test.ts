/**
 * SAC's trainer on hand-made trajectories: what goes into the replay buffer (done only at a true
 * episode end; an interrupted episode bootstraps from its last observation, as upstream), when
 * updates run (after buffer_init_steps, one per steps_per_update steps), the same updates in
 * the worker thread with threaded: true (behavioral cloning's rounds with them), and an inference run that trains nothing.
 */
import * as path from 'path';
import { DemoWriter } from '../../../src/communicator/demo-file';
import { settingsForBehavior } from '../../../src/config';
import { memoryLogger } from '../../../src/common/logger';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { readCheckpointFile } from '../../../src/networks/checkpoint-file';
import { StatsRegistry, StatsReporter } from '../../../src/stats';
import type { ActingPolicy } from '../../../src/trainers/action-info';
import { AgentManagerQueue } from '../../../src/trainers/agent-manager-queue';
import { SacTrainer, SacTrainerSettings } from '../../../src/trainers/sac/trainer';
import { Trajectory } from '../../../src/trainers/trajectory';
import { load } from '../../config/config-helpers';
import { tempDir } from '../../helpers/paths';

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'vector' }],
  actionSpec: new ActionSpec(1, []),
};

function settings(extra = ''): SacTrainerSettings {
  const { options } = load(
    'behaviors:\n  B:\n    trainer_type: sac\n' +
      '    hyperparameters: {batch_size: 4, buffer_size: 100, buffer_init_steps: 10, steps_per_update: 2}\n' +
      `    network_settings: {num_layers: 1, hidden_units: 8}\n    max_steps: 100\n${extra}`,
  );
  return settingsForBehavior(options, 'B', memoryLogger()) as SacTrainerSettings;
}

function trainer(options: { extra?: string; trainModel?: boolean; logger?: ReturnType<typeof memoryLogger>; stats?: StatsReporter } = {}): SacTrainer {
  return new SacTrainer({
    behaviorName: 'B',
    spec: SPEC,
    settings: settings(options.extra),
    stats: options.stats ?? new StatsRegistry().reporter('B'),
    seed: 1,
    trainModel: options.trainModel,
    logger: options.logger,
  });
}

/** A trajectory of `n` steps whose observation at step t is [first + t, -(first + t)]. */
function trajectory(first: number, n: number, end: 'cut' | 'done' | 'interrupted'): Trajectory {
  const obs = Float32Array.from({ length: n * 2 }, (_, i) => (i % 2 === 0 ? 1 : -1) * (first + Math.floor(i / 2)));
  return new Trajectory({
    agentId: 'agent-1',
    behaviorId: 'B',
    steps: {
      length: n,
      obs: [obs],
      continuousActions: Float32Array.from({ length: n }, (_, t) => 0.1 * t),
      discreteActions: new Int32Array(0),
      continuousLogProbs: new Float32Array(n),
      discreteLogProbs: new Float32Array(0),
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(0),
      rewards: new Float32Array(n).fill(0.5),
      groupRewards: new Float32Array(n),
      groupStatuses: Array.from({ length: n }, () => []),
    },
    nextObs: [Float32Array.of(1000, -1000)],
    nextGroupObs: [],
    doneReached: end !== 'cut',
    interrupted: end === 'interrupted',
  });
}

/** A demonstration file of 12 steps of SPEC's behavior, in a new folder; returns its path. */
function writeDemonstration(): string {
  const file = path.join(tempDir('sac-cloning'), 'expert.demo');
  const writer = new DemoWriter(file, { demonstrationName: 'Expert', brainParameters: { brain_name: 'B', action_spec: { num_continuous_actions: 1, num_discrete_actions: 0 } } });
  for (let i = 0; i < 12; i++) {
    writer.record({
      agent_info: { reward: 0.1, done: i === 11, id: 1, observations: [{ shape: [2], float_data: { data: [i, -i] } }] },
      action_info: { continuous_actions: [0.05 * i - 0.3] },
    });
  }
  writer.close();
  return file;
}

/** Every row of the trainer's replay buffer, oldest first, read back from its file. */
function bufferRows(sac: SacTrainer): { nextObs: number[]; dones: number[] } {
  const file = path.join(tempDir('sac-trainer'), 'buffer.ckpt');
  sac.replayBuffer.save(file);
  const { arrays } = readCheckpointFile(file);
  return { nextObs: Array.from(arrays.get('next_obs:0')!).filter((_, i) => i % 2 === 0), dones: Array.from(arrays.get('dones')!) };
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('SacTrainer', () => {
  it('stores each step with the observation after it; done only where an episode truly ended', () => {
    const sac = trainer();
    sac.processTrajectory(trajectory(0, 3, 'cut'));
    sac.processTrajectory(trajectory(10, 3, 'done'));
    sac.processTrajectory(trajectory(20, 3, 'interrupted'));
    const { nextObs, dones } = bufferRows(sac);
    // Cut and ended episodes continue with the trajectory's next observation; an interrupted one
    // repeats its last observation, not done, so that its value is bootstrapped.
    expect(nextObs).toEqual([1, 2, 1000, 11, 12, 1000, 21, 22, 22]);
    expect(dones).toEqual([0, 0, 0, 0, 0, 1, 0, 0, 0]);
    expect(sac.step).toBe(9);
    // The cut piece and the ended one are one episode of the same agent.
    expect(sac.episodeRewards).toEqual([3, 1.5]);
  });

  it('updates once buffer_init_steps are reached, once per steps_per_update steps, and publishes the policy', () => {
    const sac = trainer();
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    const policies = new AgentManagerQueue<ActingPolicy>('B');
    const updatesAfter = (first: number) => {
      trajectories.put(trajectory(first, 6, 'cut'));
      sac.advance(trajectories, policies);
      return sac.optimizer.q1Adam.step;
    };
    expect(updatesAfter(0)).toBe(0); // step 6 < buffer_init_steps
    expect(updatesAfter(6)).toBe(0); // (12 - 10) / 1 is not above 2
    expect(policies.tryGet()).toBeUndefined();
    // (18 - 10) / k > 2 for k = 1, 2, 3: three updates, as upstream's while loop.
    expect(updatesAfter(12)).toBe(3);
    expect(policies.tryGet()).toBe(sac.policy);
    expect(updatesAfter(18)).toBe(6); // (24 - 10) / k > 2 for k = 4, 5, 6
  });

  it.each([
    ['without behavioral cloning', []],
    ['with behavioral cloning', ['Losses/Pretraining Loss']],
  ])('with threaded: true, updates in its worker thread: the same updates, weights and statistics as on this thread once each request is awaited, %s', async (cloning, cloningStats) => {
    const stats = { here: new StatsRegistry().reporter('B'), threaded: new StatsRegistry().reporter('B') };
    const extra = cloningStats.length === 0 ? '' : `    behavioral_cloning: {demo_path: ${writeDemonstration()}, num_epoch: 1, batch_size: 4}\n`;
    const here = trainer({ extra, stats: stats.here });
    const threaded = trainer({ extra: `${extra}    threaded: true\n`, stats: stats.threaded });
    const run = async (sac: SacTrainer, first: number): Promise<boolean> => {
      const trajectories = new AgentManagerQueue<Trajectory>('B');
      const policies = new AgentManagerQueue<ActingPolicy>('B');
      trajectories.put(trajectory(first, 6, 'cut'));
      sac.advance(trajectories, policies);
      await sac.finishUpdate();
      return policies.tryGet() === sac.policy;
    };
    try {
      for (const first of [0, 6, 12, 18]) {
        await run(here, first);
        // The policy is published at the advance() after the worker answered, not the one that handed it the updates.
        expect([first, await run(threaded, first)]).toEqual([first, false]);
        expect([first, threaded.optimizer.q1Adam.step]).toEqual([first, here.optimizer.q1Adam.step]);
      }
      expect(threaded.optimizer.q1Adam.step).toBe(6);
      expect(threaded.optimizer.updatedState()).toEqual(here.optimizer.updatedState());
      // With cloning, its Adam and learning rate are among the state, and its loss among the statistics.
      if (cloningStats.length > 0) expect(threaded.optimizer.updatedState().map(([key]) => key)).toContain('behavioral_cloning.adam.step');
      for (const key of ['Losses/Policy Loss', 'Losses/Value Loss', 'Losses/Q1 Loss', 'Losses/Q2 Loss', 'Policy/Continuous Entropy Coeff', 'Policy/Learning Rate', ...cloningStats]) {
        expect([key, stats.threaded.getStatsSummary(key)]).toEqual([key, stats.here.getStatsSummary(key)]);
        expect(stats.here.getStatsSummary(key)).not.toBeNull();
      }
    } finally {
      await threaded.close();
    }
  });

  it('in an inference run, stores nothing and never updates', () => {
    const sac = trainer({ trainModel: false });
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    const policies = new AgentManagerQueue<ActingPolicy>('B');
    for (let k = 0; k < 5; k++) trajectories.put(trajectory(6 * k, 6, 'done'));
    expect(sac.advance(trajectories, policies)).toBe(false);
    expect(sac.replayBuffer.size).toBe(0);
    expect(sac.optimizer.q1Adam.step).toBe(0);
    expect(sac.episodeRewards).toHaveLength(5);
  });
});

describe('SacTrainer with memory', () => {
  const memorySettings = '    network_settings: {num_layers: 1, hidden_units: 8, memory: {memory_size: 4, sequence_length: 4}}\n';
  /** settings() with memory: its network_settings line replaced. */
  function recurrentTrainer(threaded = false): SacTrainer {
    const { options } = load(
      'behaviors:\n  B:\n    trainer_type: sac\n' +
        '    hyperparameters: {batch_size: 8, buffer_size: 100, buffer_init_steps: 10, steps_per_update: 2}\n' +
        `${memorySettings}    max_steps: 100\n    threaded: ${threaded}\n`,
    );
    return new SacTrainer({
      behaviorName: 'B',
      spec: SPEC,
      settings: settingsForBehavior(options, 'B', memoryLogger()) as SacTrainerSettings,
      stats: new StatsRegistry().reporter('B'),
      seed: 1,
    });
  }

  /** trajectory() acted step by step with the agent's memories carried, as the agent processor records them. */
  function recurrentTrajectory(sac: SacTrainer, first: number, n: number, end: 'cut' | 'done' | 'interrupted'): Trajectory {
    const base = trajectory(first, n, end);
    const size = sac.model.memorySize;
    const memories = new Float32Array(n * size);
    let carried: Float32Array = new Float32Array(size);
    for (let t = 0; t < n; t++) {
      memories.set(carried, t * size);
      carried = sac.model.act([base.steps.obs[0].subarray(2 * t, 2 * t + 2)], 1, null, { memories: carried }).memories!;
    }
    return new Trajectory({ ...base, steps: { ...base.steps, memories } });
  }

  function memoryRows(sac: SacTrainer): Record<string, number[]> {
    const file = path.join(tempDir('sac-trainer'), 'memory-buffer.ckpt');
    sac.replayBuffer.save(file);
    const { arrays } = readCheckpointFile(file);
    return Object.fromEntries([...arrays].map(([key, values]) => [key, Array.from(values)]));
  }

  it('stores each trajectory as whole sequences, the last padded with mask 0, with the memories each step started from', () => {
    const sac = recurrentTrainer();
    expect(sac.replayBuffer.sequenceLength).toBe(4);
    const first = recurrentTrajectory(sac, 0, 6, 'cut');
    sac.processTrajectory(first);
    const rows = memoryRows(sac);
    expect(rows.masks).toEqual([1, 1, 1, 1, 1, 1, 0, 0]);
    expect(rows['obs:0'].filter((_, i) => i % 2 === 0)).toEqual([0, 1, 2, 3, 4, 5, 0, 0]);
    expect(rows['next_obs:0'].filter((_, i) => i % 2 === 0)).toEqual([1, 2, 3, 4, 5, 1000, 0, 0]);
    expect(rows.rewards).toEqual([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0, 0]);
    expect(rows.memories.slice(0, 24)).toEqual(Array.from(first.steps.memories!));
    // The critic's memories: zeros for the first sequence, where it ended for the second.
    const critic = sac.model.criticValuesInSequences(first.steps.obs, 6, new Float32Array(4), 4);
    expect(rows.criticMemories.slice(0, 24)).toEqual(Array.from(critic.stepMemories));
    expect(rows.criticMemories.slice(16, 20).some((v) => v !== 0)).toBe(true);
    expect(sac.step).toBe(6);
  });

  it("runs the critic's memories on across pieces of an episode and forgets them at its end; interrupted bootstraps from the last observation", () => {
    const sac = recurrentTrainer();
    const pieces = [recurrentTrajectory(sac, 0, 4, 'cut'), recurrentTrajectory(sac, 4, 4, 'interrupted'), recurrentTrajectory(sac, 8, 4, 'cut')];
    for (const piece of pieces) sac.processTrajectory(piece);
    const rows = memoryRows(sac);
    const afterFirst = sac.model.criticValuesInSequences(pieces[0].steps.obs, 4, new Float32Array(4), 4).finalMemories;
    expect(rows.criticMemories.slice(16, 20)).toEqual(Array.from(afterFirst));
    expect(rows.criticMemories.slice(32, 36)).toEqual([0, 0, 0, 0]);
    expect(rows['next_obs:0'].filter((_, i) => i % 2 === 0).slice(4, 8)).toEqual([5, 6, 7, 7]);
    expect(rows.dones).toEqual(new Array(12).fill(0));
  });

  it('updates on minibatches of whole sequences', () => {
    const sac = recurrentTrainer();
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    const policies = new AgentManagerQueue<ActingPolicy>('B');
    for (let k = 0; k < 3; k++) trajectories.put(recurrentTrajectory(sac, 6 * k, 6, 'cut'));
    sac.advance(trajectories, policies);
    // (18 - 10) / k > 2 for k = 1, 2, 3.
    expect(sac.optimizer.q1Adam.step).toBe(3);
    expect(policies.tryGet()).toBe(sac.policy);
    expect(sac.optimizer.q1.parameters.every(Number.isFinite)).toBe(true);
  });

  it('with threaded: true, the worker trains on the same sequences as this thread would', async () => {
    const here = recurrentTrainer();
    const threaded = recurrentTrainer(true);
    // The same trajectories for both, acted before any update.
    const acted = [0, 1, 2].map((k) => recurrentTrajectory(here, 6 * k, 6, 'cut'));
    try {
      for (const sac of [here, threaded]) {
        const trajectories = new AgentManagerQueue<Trajectory>('B');
        for (const piece of acted) trajectories.put(piece);
        sac.advance(trajectories, new AgentManagerQueue<ActingPolicy>('B'));
        await sac.finishUpdate();
      }
      expect(threaded.optimizer.q1Adam.step).toBe(3);
      expect(threaded.optimizer.updatedState()).toEqual(here.optimizer.updatedState());
    } finally {
      await threaded.close();
    }
  });
});
