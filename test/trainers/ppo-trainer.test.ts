/**
 * PPO's trainer on hand-made trajectories: the buffer columns upstream's _process_trajectory
 * writes (value estimates, rewards, GAE advantages and returns, bootstrapped except at a true
 * episode end), an update every buffer_size experiences that publishes the policy, and summaries
 * and checkpoints at their intervals.
 */
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { settingsForBehavior } from '../../src/config';
import { memoryLogger } from '../../src/common/logger';
import { selectBackend } from '../../src/networks/backend';
import { StatsRegistry, StatsSummary } from '../../src/stats';
import { gae } from '../../src/trainers/advantages';
import { AgentManagerQueue } from '../../src/trainers/agent-manager-queue';
import { AgentBuffer, BufferKey, RewardSignalKeys, nextObservationKey, observationKey } from '../../src/trainers/buffer';
import { PpoTrainer, PpoTrainerSettings } from '../../src/trainers/ppo/trainer';
import { ModelPolicy } from '../../src/trainers/rl-trainer-base';
import { Trajectory } from '../../src/trainers/trajectory';
import { load } from '../config/config-helpers';

const SPEC: BehaviorSpec = {
  observationSpecs: [
    { shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'vector' },
  ],
  actionSpec: new ActionSpec(1, []),
};

function settings(extra = '', network = ''): PpoTrainerSettings {
  const { options } = load(
    'behaviors:\n  B:\n    trainer_type: ppo\n' +
      '    hyperparameters: {batch_size: 4, buffer_size: 8, num_epoch: 2, lambd: 0.9}\n' +
      `    network_settings: {num_layers: 1, hidden_units: 8${network}}\n` +
      `    summary_freq: 10\n    checkpoint_interval: 12\n    max_steps: 100\n${extra}`,
  );
  return settingsForBehavior(options, 'B', memoryLogger()) as PpoTrainerSettings;
}

/** Collects what the trainer writes: the step of each summary and its values. */
function recordingStats() {
  const written: Array<{ step: number; values: ReadonlyMap<string, StatsSummary> }> = [];
  const registry = new StatsRegistry();
  registry.addWriter({ writeStats: (_category, values, step) => written.push({ step, values }) });
  return { reporter: registry.reporter('B'), written };
}

/** A trajectory of `n` steps acted by the trainer's own policy, with the given rewards. */
function trajectory(trainer: PpoTrainer, rewards: number[], end: 'cut' | 'done' | 'interrupted', agentId = 'agent_0-1'): Trajectory {
  const n = rewards.length;
  const obs = Float32Array.from({ length: n * 2 }, (_, i) => Math.sin(i));
  const acted = trainer.model.act([obs], n);
  return new Trajectory({
    agentId,
    behaviorId: 'B',
    steps: {
      length: n,
      obs: [obs],
      continuousActions: acted.action.continuous,
      discreteActions: new Int32Array(0),
      continuousLogProbs: acted.logProbs.continuous,
      discreteLogProbs: new Float32Array(0),
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(0),
      rewards: Float32Array.from(rewards),
      groupRewards: new Float32Array(n),
      groupStatuses: Array.from({ length: n }, () => []),
    },
    nextObs: [Float32Array.from([0.5, -0.5])],
    nextGroupObs: [],
    doneReached: end !== 'cut',
    interrupted: end === 'interrupted',
  });
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('PpoTrainer: processing a trajectory (upstream _process_trajectory)', () => {
  it.each([
    ['cut at time_horizon: bootstraps from the next observation', 'cut' as const],
    ['interrupted by max steps: still bootstraps', 'interrupted' as const],
    ['a true episode end: nothing follows', 'done' as const],
  ])('%s', (_name, end) => {
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: settings(), stats: recordingStats().reporter, seed: 1 });
    const rewards = [0.1, -0.2, 0.3, 1];
    const t = trajectory(trainer, rewards, end);
    trainer.processTrajectory(t);
    const values = trainer.model.values(t.steps.obs, 4).extrinsic;
    const bootstrap = end === 'done' ? null : trainer.model.values(t.nextObs, 1).extrinsic[0];
    const expected = gae(Float32Array.from(rewards), values, bootstrap, 0.99, 0.9);
    const buffer = trainer.updateBuffer;
    expect(Array.from(buffer.get(RewardSignalKeys.advantage('extrinsic')).rows)).toEqual(Array.from(expected.advantages));
    expect(Array.from(buffer.get(RewardSignalKeys.returns('extrinsic')).rows)).toEqual(Array.from(expected.returns));
    expect(Array.from(buffer.get(BufferKey.ADVANTAGES).rows)).toEqual(Array.from(expected.advantages));
    expect(trainer.step).toBe(4);
    expect(trainer.episodeRewards).toEqual(end === 'cut' ? [] : [Math.fround(0.1) + Math.fround(-0.2) + Math.fround(0.3) + 1]);
  });

  it.each([
    ['extrinsic only: no next observations (nothing reads them)', '', false],
    ['with curiosity, which trains on them: the next observations too', '      curiosity: {strength: 0.1, gamma: 0.9}\n', true],
  ])('keeps in the update buffer: %s', (_name, curiosity, kept) => {
    const signals = `    reward_signals:\n      extrinsic: {strength: 1.0, gamma: 0.99}\n${curiosity}`;
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: settings(signals), stats: recordingStats().reporter, seed: 1 });
    trainer.processTrajectory(trajectory(trainer, [0.1, -0.2, 0.3], 'cut'));
    expect(trainer.updateBuffer.has(nextObservationKey(0))).toBe(kept);
    expect(Array.from(trainer.updateBuffer.get(observationKey(0)).rows)).toEqual(Array.from({ length: 6 }, (_, i) => Math.fround(Math.sin(i))));
    // Each step's next observation: the following step's, then the trajectory's nextObs.
    const following = [Math.sin(2), Math.sin(3), Math.sin(4), Math.sin(5), 0.5, -0.5].map(Math.fround);
    if (kept) expect(Array.from(trainer.updateBuffer.get(nextObservationKey(0)).rows)).toEqual(following);
  });

  it('sums an episode\'s reward over the trajectories it was cut into', () => {
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: settings(), stats: recordingStats().reporter, seed: 1 });
    trainer.processTrajectory(trajectory(trainer, [1, 1], 'cut'));
    trainer.processTrajectory(trajectory(trainer, [0.5], 'cut', 'agent_0-2'));
    trainer.processTrajectory(trajectory(trainer, [2], 'done'));
    expect(trainer.episodeRewards).toEqual([4]);
  });
});

describe('PpoTrainer: updates, summaries and checkpoints', () => {
  it('updates once buffer_size experiences wait, publishes the policy and empties the buffer', () => {
    const stats = recordingStats();
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: settings(), stats: stats.reporter, seed: 1 });
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const before = Float32Array.from(trainer.model.parameters);

    trajectories.put(trajectory(trainer, [0, 0, 0, 0, 0], 'cut'));
    expect(trainer.advance(trajectories, policies)).toBe(false);
    expect(policies.empty()).toBe(true);

    trajectories.put(trajectory(trainer, [1, 0, 0, 1], 'done'));
    expect(trainer.advance(trajectories, policies)).toBe(true);
    expect(policies.tryGet()).toBe(trainer.policy);
    expect(trainer.updateBuffer.numExperiences).toBe(0);
    expect(trainer.model.parameters).not.toEqual(before);
    // 9 experiences, batches of 4: 2 minibatches per epoch, 2 epochs.
    expect(trainer.optimizer.adam.step).toBe(4);
  });

  it('writes a summary at each multiple of summary_freq and asks for a checkpoint at each checkpoint_interval', () => {
    const stats = recordingStats();
    const checkpoints: number[] = [];
    const trainer = new PpoTrainer({
      behaviorName: 'B',
      spec: SPEC,
      settings: settings(),
      stats: stats.reporter,
      seed: 1,
      onCheckpoint: (step) => checkpoints.push(step),
    });
    for (let i = 0; i < 9; i++) trainer.processTrajectory(trajectory(trainer, [0, 0, 1], 'done'));
    // Steps go 3, 6, ..., 27: summaries at 10 and 20 (the step they are due at), checkpoints once past 12 and 24.
    expect(stats.written.map((w) => w.step)).toEqual([10, 20]);
    expect(stats.written[0].values.get('Is Training')?.aggregatedValue).toBe(1);
    expect(stats.written[0].values.get('Policy/Extrinsic Reward')?.mean).toBe(1);
    expect(checkpoints).toEqual([12, 24]);
  });

  it('stops collecting experience for updates at max_steps', () => {
    const trainer = new PpoTrainer({
      behaviorName: 'B',
      spec: SPEC,
      settings: { ...settings(), max_steps: 4 },
      stats: recordingStats().reporter,
      seed: 1,
    });
    trainer.processTrajectory(trajectory(trainer, [0, 0, 0, 0], 'cut'));
    expect(trainer.shouldStillTrain).toBe(false);
    trainer.processTrajectory(trajectory(trainer, [0, 0], 'cut'));
    expect(trainer.updateBuffer.numExperiences).toBe(4);
  });
});

describe('PpoTrainer with memory', () => {
  /** A trajectory acted step by step with memories carried, as the agent processor records it. */
  function recurrentTrajectory(trainer: PpoTrainer, n: number, end: 'cut' | 'done', agentId = 'agent_0-1'): Trajectory {
    const base = trajectory(trainer, new Array(n).fill(0.25), end, agentId);
    const size = trainer.model.memorySize;
    const memories = new Float32Array(n * size);
    let carried: Float32Array = new Float32Array(size);
    for (let t = 0; t < n; t++) {
      memories.set(carried, t * size);
      carried = trainer.model.act([base.steps.obs[0].subarray(2 * t, 2 * t + 2)], 1, null, { memories: carried }).memories!;
    }
    return new Trajectory({ ...base, steps: { ...base.steps, memories } });
  }

  const memorySettings = () => settings('', ', memory: {memory_size: 6, sequence_length: 4}');

  it('appends whole sequences, the last padded with mask 0, with the critic memories each sequence starts from', () => {
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: memorySettings(), stats: recordingStats().reporter, seed: 3 });
    trainer.processTrajectory(recurrentTrajectory(trainer, 6, 'cut'));
    const buffer = trainer.updateBuffer;
    expect(buffer.numExperiences).toBe(8);
    expect(Array.from(buffer.get(BufferKey.MASKS).rows)).toEqual([1, 1, 1, 1, 1, 1, 0, 0]);
    const critic = buffer.get(BufferKey.CRITIC_MEMORY);
    expect(critic.width).toBe(6);
    // The first sequence starts from zeros (a new agent); the second from where the first ended.
    expect(Array.from(critic.row(0))).toEqual(new Array(6).fill(0));
    expect(Array.from(critic.row(3))).toEqual(new Array(6).fill(0));
    expect(Array.from(critic.row(4)).some((v) => v !== 0)).toBe(true);
    expect(Array.from(critic.row(5))).toEqual(Array.from(critic.row(4)));
    expect(buffer.get(BufferKey.MEMORY).width).toBe(6);
    // Padding rows are zeros: they never count.
    expect(Array.from(buffer.get(BufferKey.ADVANTAGES).rows.subarray(6))).toEqual([0, 0]);

    // The next piece of the same episode starts the critic where this one left it; after the end, from zeros again.
    const carried = trainer.model.criticValuesInSequences(recurrentTrajectory(trainer, 6, 'cut').steps.obs, 6, new Float32Array(6), 4).finalMemories;
    trainer.updateBuffer = new AgentBuffer();
    trainer.processTrajectory(recurrentTrajectory(trainer, 3, 'done'));
    expect(Array.from(trainer.updateBuffer.get(BufferKey.CRITIC_MEMORY).row(0)).map((v) => v.toFixed(5))).toEqual(Array.from(carried).map((v) => v.toFixed(5)));
    trainer.processTrajectory(recurrentTrajectory(trainer, 3, 'cut'));
    expect(Array.from(trainer.updateBuffer.get(BufferKey.CRITIC_MEMORY).row(4))).toEqual(new Array(6).fill(0));
  });

  it('updates on whole sequences and publishes the policy, which acts with memories', () => {
    const trainer = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: memorySettings(), stats: recordingStats().reporter, seed: 3 });
    const before = trainer.model.parameters.slice();
    const policies = new AgentManagerQueue<ModelPolicy>('B');
    const trajectories = new AgentManagerQueue<Trajectory>('B');
    trajectories.put(recurrentTrajectory(trainer, 5, 'done', 'agent_0-1'));
    trajectories.put(recurrentTrajectory(trainer, 7, 'cut', 'agent_0-2'));
    expect(trainer.advance(trajectories, policies)).toBe(true);
    const lstm = trainer.model.block('actor.lstm.weight_hh');
    expect(trainer.model.parameters.subarray(lstm.offset, lstm.offset + 36)).not.toEqual(before.subarray(lstm.offset, lstm.offset + 36));
    expect(policies.drain()[0].memorySize).toBe(6);
  });
});
