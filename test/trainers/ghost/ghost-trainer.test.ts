/**
 * The GhostTrainer around a real PPO trainer, fed hand-made trajectories of two teams of one
 * behavior (a symmetric game): which trajectories the learner gets, the policies each team acts
 * with, snapshots every save_steps in a window, swaps every swap_steps ghost steps, the team
 * change every team_change steps, the ELO of finished games, and the checkpoint round trip.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../../src/common/logger';
import { settingsForBehavior } from '../../../src/config';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../../src/env/behavior-spec';
import { selectBackend } from '../../../src/networks/backend';
import { readCheckpointFile } from '../../../src/networks/checkpoint-file';
import { STAT_KEYS, StatsRegistry, StatsSummary } from '../../../src/stats';
import type { ActingPolicy } from '../../../src/trainers/action-info';
import { AgentManagerQueue } from '../../../src/trainers/agent-manager-queue';
import { parseBehaviorId } from '../../../src/trainers/behavior-identifiers';
import { GhostController } from '../../../src/trainers/ghost/controller';
import { GhostTrainer, TeamQueues } from '../../../src/trainers/ghost/trainer';
import { PpoTrainer, PpoTrainerSettings } from '../../../src/trainers/ppo/trainer';
import { ModelPolicy } from '../../../src/trainers/rl-trainer-base';
import { Trajectory } from '../../../src/trainers/trajectory';
import { load } from '../../config/config-helpers';
import { tempDir } from '../../helpers/paths';

const SPEC: BehaviorSpec = {
  observationSpecs: [{ shape: [2], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: 'vector' }],
  actionSpec: new ActionSpec(1, []),
};

function settings(selfPlay: string): PpoTrainerSettings {
  const { options } = load(
    'behaviors:\n  B:\n    trainer_type: ppo\n' +
      '    hyperparameters: {batch_size: 4, buffer_size: 8, num_epoch: 1}\n' +
      '    network_settings: {num_layers: 1, hidden_units: 8}\n' +
      `    summary_freq: 1000\n    max_steps: 1000\n    self_play: {${selfPlay}}\n`,
  );
  return settingsForBehavior(options, 'B', memoryLogger()) as PpoTrainerSettings;
}

interface Game {
  readonly ghost: GhostTrainer;
  readonly learner: PpoTrainer;
  readonly controller: GhostController;
  readonly teams: [TeamQueues, TeamQueues];
  readonly elo: () => number[];
}

function game(selfPlay: string, seed = 1): Game {
  const registry = new StatsRegistry();
  const written: Array<ReadonlyMap<string, StatsSummary>> = [];
  registry.addWriter({ writeStats: (_category, values) => written.push(values) });
  const stats = registry.reporter('B');
  const s = settings(selfPlay);
  const learner = new PpoTrainer({ behaviorName: 'B', spec: SPEC, settings: s, stats, seed });
  const controller = new GhostController(memoryLogger());
  const ghost = new GhostTrainer({ brainName: 'B', learner, selfPlay: s.self_play!, controller, stats, seed, logger: memoryLogger() });
  const teams: [TeamQueues, TeamQueues] = [0, 1].map(() => ({
    trajectoryQueue: new AgentManagerQueue<Trajectory>('B'),
    policyQueue: new AgentManagerQueue<ActingPolicy>('B'),
  })) as [TeamQueues, TeamQueues];
  ghost.addTeam(parseBehaviorId('B?team=0'), teams[0]);
  ghost.addTeam(parseBehaviorId('B?team=1'), teams[1]);
  const elo = () => {
    stats.writeStats(0);
    return written.flatMap((values) => (values.has(STAT_KEYS.selfPlayElo) ? [values.get(STAT_KEYS.selfPlayElo)!.mean] : []));
  };
  return { ghost, learner, controller, teams, elo };
}

/** A trajectory of `n` steps of a team's agent; `last` is the final reward when the episode ends there. */
function trajectory(behaviorId: string, n: number, last: number | null, agentId = 'agent_0-1', interrupted = false): Trajectory {
  const obs = Float32Array.from({ length: n * 2 }, (_, i) => Math.sin(i));
  const rewards = new Float32Array(n).fill(-0.01);
  if (last !== null) rewards[n - 1] = last;
  return new Trajectory({
    agentId,
    behaviorId,
    steps: {
      length: n,
      obs: [obs],
      continuousActions: new Float32Array(n).fill(0.1),
      discreteActions: new Int32Array(0),
      continuousLogProbs: new Float32Array(n).fill(-1),
      discreteLogProbs: new Float32Array(0),
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(0),
      rewards,
      groupRewards: new Float32Array(n),
      groupStatuses: Array.from({ length: n }, () => []),
    },
    nextObs: [Float32Array.from([0.5, -0.5])],
    nextGroupObs: [],
    doneReached: last !== null,
    interrupted,
  });
}

/** The policy a team acts with now: the newest in its queue (what the environment manager takes). */
function actingPolicy(team: TeamQueues): ActingPolicy {
  const published = team.policyQueue.drain();
  return published[published.length - 1];
}

function weightsOf(policy: ActingPolicy): Float32Array {
  return (policy as ModelPolicy).model.parameters.slice();
}

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

describe('GhostTrainer: who learns and who plays what', () => {
  it('team 0 learns with the learner\'s own policy; team 1 plays a frozen copy of the initial weights', () => {
    const { learner, teams } = game('save_steps: 1000, swap_steps: 1000');
    const learning = actingPolicy(teams[0]);
    const ghostPolicy = actingPolicy(teams[1]);
    expect(learning).toBe(learner.policy);
    expect(ghostPolicy).not.toBe(learner.policy);
    expect(weightsOf(ghostPolicy)).toEqual(learner.model.parameters);
  });

  it('only the learning team\'s trajectories reach the learner and count as its steps', () => {
    const { ghost, learner, teams } = game('save_steps: 1000, swap_steps: 1000');
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, null));
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 5, null));
    ghost.advance();
    expect(learner.step).toBe(3);
    expect(learner.updateBuffer.numExperiences).toBe(3);
    expect(teams[1].trajectoryQueue.empty()).toBe(true);
  });

  it('keeps each team\'s finished episodes, ghosts included, across trajectory pieces', () => {
    const { ghost, teams } = game('save_steps: 1000, swap_steps: 1000');
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 2, null));
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 2, 1));
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 3, -1));
    ghost.advance();
    expect(ghost.episodeRewardsOf('B?team=0')).toEqual([expect.closeTo(0.97, 6)]);
    expect(ghost.episodeRewardsOf('B?team=1')).toEqual([expect.closeTo(-1.02, 6)]);
  });

  it('swaps the ghost team\'s opponent once more than swap_steps ghost steps were played: the latest weights at ratio 1', () => {
    const { ghost, learner, teams } = game('save_steps: 1000, swap_steps: 10, play_against_latest_model_ratio: 1.0');
    const initial = weightsOf(actingPolicy(teams[1]));
    actingPolicy(teams[0]);
    // 8 steps of the learning team fill the buffer: PPO updates and publishes its policy.
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 8, null));
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 10, null));
    ghost.advance();
    expect(learner.model.parameters).not.toEqual(initial);
    expect(teams[1].policyQueue.empty()).toBe(true); // 10 ghost steps: not more than swap_steps
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 1, null));
    ghost.advance();
    const swapped = actingPolicy(teams[1]);
    expect(swapped).not.toBe(learner.policy);
    expect(weightsOf(swapped)).toEqual(learner.model.parameters);
    expect(ghost.opponentElo).toBe(ghost.currentElo);
  });

  it('at ratio 0 the opponent is drawn from the window of snapshots, one saved each time more than save_steps passed', () => {
    const { ghost, teams } = game('save_steps: 3, swap_steps: 2, window: 2, play_against_latest_model_ratio: 0.0, team_change: 1000');
    const initial = weightsOf(actingPolicy(teams[1]));
    const snapshots: Float32Array[] = [initial];
    for (let round = 0; round < 6; round++) {
      teams[0].trajectoryQueue.put(trajectory('B?team=0', 4, null));
      teams[1].trajectoryQueue.put(trajectory('B?team=1', 3, null));
      ghost.advance();
      const opponent = actingPolicy(teams[1]);
      expect(opponent).toBeDefined();
      snapshots.push(weightsOf(ghost.learner.policy));
      // Any opponent is one of the policies the learner had at a save, never a later one.
      expect(snapshots.some((s) => s.every((v, i) => v === weightsOf(opponent)[i]))).toBe(true);
    }
  });
});

describe('GhostTrainer: team changes', () => {
  it('after more than team_change steps team 1 learns with the learner\'s policy, team 0 plays a snapshot, and the run resets', () => {
    const { ghost, learner, controller, teams } = game('save_steps: 1000, swap_steps: 1000, team_change: 5');
    actingPolicy(teams[0]);
    actingPolicy(teams[1]);
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 6, null));
    ghost.advance();
    expect(controller.learningTeam).toBe(1);
    expect(controller.shouldReset()).toBe(true);
    expect(actingPolicy(teams[1])).toBe(learner.policy);
    const ghostPolicy = actingPolicy(teams[0]);
    expect(ghostPolicy).not.toBe(learner.policy);
    // Team 1's trajectories are now the learner's; team 0's are dropped.
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, null));
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 2, null));
    ghost.advance();
    expect(learner.step).toBe(8);
  });
});

describe('GhostTrainer: ELO', () => {
  it('a won game of the learning team moves its rating and the snapshot\'s by upstream\'s formula; cut or interrupted ones do not', () => {
    const { ghost, teams, elo } = game('save_steps: 1000, swap_steps: 1000, initial_elo: 1200');
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, null));
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, 1, 'agent_0-3', true));
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, 1, 'agent_0-2'));
    teams[1].trajectoryQueue.put(trajectory('B?team=1', 3, -1));
    ghost.advance();
    // Symmetric game, opponent snapshot 0 at 1200: expected score 0.5, a win gains 0.5.
    expect(ghost.currentElo).toBe(1200.5);
    expect(ghost.opponentElo).toBe(1199.5);
    expect(elo()).toEqual([1200.5]);
    teams[0].trajectoryQueue.put(trajectory('B?team=0', 3, -1));
    ghost.advance();
    // A loss: expected 10^(1200.5/400) / (10^(1200.5/400) + 10^(1199.5/400)).
    const expected = 1 / (1 + 10 ** (-1 / 400));
    expect(ghost.currentElo).toBeCloseTo(1200.5 - expected, 10);
  });
});

describe('GhostTrainer: checkpoints', () => {
  it('--resume restores the snapshots, their ratings, the current opponent and the turn of the teams', () => {
    const { ghost, teams } = game('save_steps: 3, swap_steps: 2, window: 3, play_against_latest_model_ratio: 0.0, team_change: 12');
    for (let round = 0; round < 4; round++) {
      teams[0].trajectoryQueue.put(trajectory('B?team=0', 4, round % 2 === 0 ? 1 : -1));
      teams[1].trajectoryQueue.put(trajectory('B?team=1', 3, null));
      ghost.advance();
    }
    // 16 steps: team 1 learns now, and team 0 plays the opponent drawn at the change.
    expect(actingPolicy(teams[1])).toBe(ghost.learner.policy);
    const ghostWeights = weightsOf(actingPolicy(teams[0]));
    const file = path.join(tempDir('ghost-checkpoint'), 'B-16.ckpt');
    ghost.saveCheckpoint(file, 16);
    const { meta } = readCheckpointFile(file);
    expect(meta.kind).toBe('ppo');
    expect(meta.selfPlay).toMatchObject({ teamOrder: [1, 0], snapshots: 3 });

    // A new run: the learner's weights differ until the checkpoint is loaded.
    const resumed = game('save_steps: 3, swap_steps: 2, window: 3, play_against_latest_model_ratio: 0.0, team_change: 12', 99);
    const fresh = new GhostController(memoryLogger());
    const s = settings('save_steps: 3, swap_steps: 2, window: 3, play_against_latest_model_ratio: 0.0, team_change: 12');
    const again = new GhostTrainer({
      brainName: 'B',
      learner: resumed.learner,
      selfPlay: s.self_play!,
      controller: fresh,
      stats: new StatsRegistry().reporter('B'),
      seed: 99,
      logger: memoryLogger(),
    });
    expect(again.loadCheckpoint(file, { resume: true })).toBe(16);
    expect(again.currentElo).toBe(ghost.currentElo);
    expect(again.opponentElo).toBe(ghost.opponentElo);
    const queues: TeamQueues[] = [0, 1].map(() => ({ trajectoryQueue: new AgentManagerQueue<Trajectory>('B'), policyQueue: new AgentManagerQueue<ActingPolicy>('B') }));
    again.addTeam(parseBehaviorId('B?team=0'), queues[0]);
    again.addTeam(parseBehaviorId('B?team=1'), queues[1]);
    expect(fresh.teamOrder).toEqual([1, 0]);
    // Team 1 learns again; team 0 plays the opponent it played when the checkpoint was written.
    expect(actingPolicy(queues[1])).toBe(resumed.learner.policy);
    expect(weightsOf(actingPolicy(queues[0]))).toEqual(ghostWeights);
    expect(fs.existsSync(file)).toBe(true);
  });

  it('refuses to resume from a checkpoint of a run without self_play, saying what to do', () => {
    const { ghost, learner } = game('save_steps: 1000');
    const file = path.join(tempDir('ghost-checkpoint'), 'plain.ckpt');
    learner.saveCheckpoint(file, 0);
    expect(() => ghost.loadCheckpoint(file)).toThrow(/run without self_play: start from it with --initialize-from/);
  });
});
