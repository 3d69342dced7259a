/**
 * Self-play (upstream's GhostTrainer, ghost/trainer.py): one trainer per behavior name wraps the
 * learning trainer (PPO, SAC or POCA) and serves every team of that name. At any time one team
 * of the run learns; the others are ghosts, acting with frozen snapshots of past policies.
 *
 * - Only the learning team's trajectories reach the learning trainer; the ghosts' are counted
 *   (ghost steps) and dropped. The learning trainer's step is the behavior's step, so only the
 *   learning team's experiences count toward max_steps.
 * - Every save_steps of the learning trainer, its current weights join a window of `window`
 *   snapshots. Every swap_steps ghost steps, and whenever the learning team changes, each ghost
 *   team gets a new opponent: the latest weights with probability play_against_latest_model_ratio,
 *   otherwise a snapshot drawn from the window. Every team_change steps the GhostController
 *   passes learning to the next team.
 * - Each finished game of the learning team (its last reward > 0 a win, < 0 a loss, else a draw)
 *   moves the learning policy's ELO and the opponent snapshot's by upstream's formula; the
 *   rating is written as Self-play/ELO and shown on the console line.
 *
 * The learning team acts with the learning trainer's own policy; each ghost team with a policy of
 * its own, a twin of the learner's networks loaded with a snapshot. Checkpoints are the learning
 * trainer's, with the snapshots, their ratings, the current opponent and the turn of the teams
 * added, so that --resume goes on where the run stopped; the exported model is the learner's.
 */
import type { Logger } from '../../common/logger';
import { SeededRandom } from '../../common/random';
import { writeFileWhole } from '../../common/whole-files';
import type { SelfPlaySettings } from '../../config/settings';
import { ActorCritic } from '../../networks/actor-critic';
import { CheckpointArray, encodeCheckpoint, readCheckpointFile, requireCheckpointArray } from '../../networks/checkpoint-file';
import { STAT_KEYS, StatsPropertyType, StatsReporter } from '../../stats';
import type { ActingPolicy } from '../action-info';
import { AgentManagerQueue } from '../agent-manager-queue';
import type { BehaviorIdentifiers } from '../behavior-identifiers';
import type { CheckpointedTrainer } from '../checkpoints';
import { ModelPolicy, REWARD_BUFFER_LENGTH } from '../rl-trainer-base';
import type { Trainer } from '../trainer';
import type { Trajectory } from '../trajectory';
import type { GhostController, RatedOpponent } from './controller';
import { LATEST, SnapshotWindow, Weights, copyWeights } from './snapshots';

/** The queues between a team's agents and the ghost trainer (an AgentManager's). */
export interface TeamQueues {
  readonly trajectoryQueue: AgentManagerQueue<Trajectory>;
  readonly policyQueue: AgentManagerQueue<ActingPolicy>;
}

export interface GhostTrainerOptions {
  readonly brainName: string;
  /** The trainer of the learning policy. */
  readonly learner: Trainer;
  readonly selfPlay: SelfPlaySettings;
  readonly controller: GhostController;
  readonly stats: StatsReporter;
  /** Seeds the draws of opponents and the ghost policies' sampling. */
  readonly seed: number;
  readonly logger: Logger;
}

/** What a checkpoint keeps of self-play besides the learner's state (its meta `selfPlay`). */
interface SelfPlayState {
  readonly teamOrder: number[];
  readonly currentOpponent: number;
  readonly snapshots: number;
  readonly nextSlot: number;
  readonly ratings: number[];
  readonly ghostStep: number;
  readonly lastSave: number;
  readonly lastSwap: number;
  readonly lastTeamChange: number;
}

const SNAPSHOT_PREFIX = 'self_play.snapshot';

export class GhostTrainer implements RatedOpponent, CheckpointedTrainer {
  readonly learner: Trainer;
  private readonly settings: SelfPlaySettings;
  private readonly controller: GhostController;
  private readonly stats: StatsReporter;
  private readonly random: SeededRandom;
  private readonly seed: number;
  private readonly teams = new Map<number, TeamQueues & { readonly behaviorId: string }>();
  /** The policy each team acts with while it is a ghost. */
  private readonly ghostPolicies = new Map<number, ModelPolicy>();
  /** Between this trainer and the learner, as upstream's internal queues. */
  private readonly learnerTrajectories: AgentManagerQueue<Trajectory>;
  private readonly learnerPolicies: AgentManagerQueue<ActingPolicy>;
  private readonly window: SnapshotWindow;
  /** The learner's weights when it last published a policy (upstream's current_policy_snapshot). */
  private latest: Weights = new Map();
  /** The team this trainer last saw learning; -1 before its first team. */
  private learningTeam = -1;
  /** The snapshot the ghost teams play now, or LATEST. */
  private currentOpponent = 0;
  /** Steps of the ghost teams: swaps count them, so that a swap comes every swap_steps of play against it. */
  private ghostStep = 0;
  private lastSave = 0;
  private lastSwap = 0;
  private lastTeamChange = 0;
  /** Each team's finished episodes: the sum of the rewards of each (upstream's test environments' final_rewards). */
  private readonly finishedEpisodes = new Map<string, number[]>();
  private readonly episodeSums = new Map<string, number>();

  constructor(options: GhostTrainerOptions) {
    this.learner = options.learner;
    this.settings = options.selfPlay;
    this.controller = options.controller;
    this.stats = options.stats;
    this.seed = options.seed;
    // Apart from the learner's own streams (seed and seed + 1), so that drawing opponents changes none of its draws.
    this.random = new SeededRandom(options.seed + 7);
    this.learnerTrajectories = new AgentManagerQueue(options.brainName);
    this.learnerPolicies = new AgentManagerQueue(options.brainName);
    this.window = new SnapshotWindow(this.settings.window, this.settings.initial_elo);
    this.stats.addProperty(StatsPropertyType.SELF_PLAY, true);
    if (this.settings.team_change > this.learner.settings.max_steps) {
      options.logger.warning(
        `Behavior ${options.brainName}: self_play.team_change (${this.settings.team_change}) is more than max_steps ` +
          `(${this.learner.settings.max_steps}). If another behavior's trainer plays the other team (an asymmetric game), ` +
          'this team never faces an opponent that has trained.',
      );
    }
  }

  /** The learning policy's ELO rating. */
  get currentElo(): number {
    return this.window.currentElo;
  }

  get opponentElo(): number {
    return this.window.ratingOf(this.currentOpponent);
  }

  changeOpponentElo(change: number): void {
    this.window.lowerRating(this.currentOpponent, change);
  }

  /** What checkpoints export: the learning policy. */
  get model(): ActorCritic {
    return this.learner.model;
  }

  /** The rewards of the finished episodes of a team's behavior (e.g. `1D?team=1`), oldest first. */
  episodeRewardsOf(behaviorId: string): readonly number[] {
    return this.finishedEpisodes.get(behaviorId) ?? [];
  }

  /**
   * A team of this behavior appeared. It acts with the learning policy if it is the learning
   * team, otherwise as a ghost with the opponent of the moment (the learner's weights in a new
   * run). The first team's arrival is the window's first snapshot.
   */
  addTeam(id: BehaviorIdentifiers, queues: TeamQueues): void {
    const taken = this.teams.get(id.teamId);
    if (taken !== undefined) {
      throw new Error(
        `The behaviors ${taken.behaviorId} and ${id.behaviorId} are both team ${id.teamId} of ${id.brainName}: ` +
          "give each side of the game its own Team Id in Behavior Parameters.",
      );
    }
    this.controller.subscribeTeam(id.teamId, this);
    this.teams.set(id.teamId, { ...queues, behaviorId: id.behaviorId });
    if (this.window.snapshots.length === 0) {
      // The learner's weights as they start (initialized from another run, perhaps): snapshot 0, the first opponent.
      this.latest = copyWeights(this.learner.model.stateArrays());
      this.window.save(this.latest);
    }
    this.learningTeam = this.controller.learningTeam;
    const policy = id.teamId === this.learningTeam ? this.learner.policy : this.ghostPolicy(id.teamId, this.opponentWeights());
    queues.policyQueue.put(policy);
  }

  /**
   * Upstream's advance: the teams' trajectories routed, the learner advanced, then the team
   * change, the publication of the learner's policy, the snapshot and the swap that are due.
   */
  advance(): void {
    for (const [team, { trajectoryQueue, behaviorId }] of this.teams) {
      for (const trajectory of trajectoryQueue.drain()) {
        this.tallyEpisode(behaviorId, trajectory);
        if (team === this.learningTeam) {
          this.learnerTrajectories.put(trajectory);
          this.recordGame(trajectory);
        } else {
          this.ghostStep += trajectory.length;
        }
      }
    }
    this.learner.advance(this.learnerTrajectories, this.learnerPolicies);
    const step = this.learner.step;
    if (step - this.lastTeamChange > this.settings.team_change) {
      this.controller.changeTrainingTeam(step);
      this.lastTeamChange = step;
    }
    const nextLearning = this.controller.learningTeam;
    const published = this.learnerPolicies.drain().length > 0;
    if (published) this.latest = copyWeights(this.learner.model.stateArrays());
    if (published || this.learningTeam !== nextLearning) this.teams.get(nextLearning)?.policyQueue.put(this.learner.policy);
    if (step - this.lastSave > this.settings.save_steps) {
      this.window.save(this.latest);
      this.lastSave = step;
    }
    if (this.learningTeam !== nextLearning || this.ghostStep - this.lastSwap > this.settings.swap_steps) {
      this.learningTeam = nextLearning;
      this.swapSnapshots();
      this.lastSwap = this.ghostStep;
    }
  }

  /** The learner's checkpoint, with the self-play state added to the same file. */
  saveCheckpoint(file: string, step: number): void {
    this.learner.saveCheckpoint(file, step);
    const { meta, arrays } = readCheckpointFile(file);
    const state: SelfPlayState = {
      teamOrder: this.controller.teamOrder,
      currentOpponent: this.currentOpponent,
      snapshots: this.window.snapshots.length,
      nextSlot: this.window.nextSlot,
      ratings: [...this.window.ratings],
      ghostStep: this.ghostStep,
      lastSave: this.lastSave,
      lastSwap: this.lastSwap,
      lastTeamChange: this.lastTeamChange,
    };
    const all = new Map<string, CheckpointArray>(arrays);
    this.window.snapshots.forEach((snapshot, i) => {
      for (const [name, values] of snapshot) all.set(`${SNAPSHOT_PREFIX}.${i}.${name}`, values);
    });
    writeFileWhole(file, encodeCheckpoint({ ...meta, selfPlay: state }, all));
  }

  /** Restores saveCheckpoint(): the learner, then the snapshots, ratings, opponent and turns. */
  loadCheckpoint(file: string, options?: { readonly resume?: boolean }): number {
    const step = this.learner.loadCheckpoint(file, options);
    this.latest = copyWeights(this.learner.model.stateArrays());
    const { meta, arrays } = readCheckpointFile(file);
    const state = meta.selfPlay as SelfPlayState | undefined;
    if (state === undefined) {
      throw new Error('It was written by a run without self_play: start from it with --initialize-from, or remove self_play.');
    }
    if (state.ratings.length !== this.window.ratings.length) {
      throw new Error(
        `It kept a self-play window of ${state.ratings.length - 1} snapshots; self_play.window is ${this.settings.window}: set it back to resume.`,
      );
    }
    this.window.snapshots.length = 0;
    for (let i = 0; i < state.snapshots; i++) {
      this.window.snapshots.push(new Map([...this.latest].map(([name, values]) => [name, requireCheckpointArray(arrays, `${SNAPSHOT_PREFIX}.${i}.${name}`, values.length)])));
    }
    this.window.ratings.splice(0, state.ratings.length, ...state.ratings);
    this.window.nextSlot = state.nextSlot;
    this.controller.restoreTeamOrder(state.teamOrder);
    ({ currentOpponent: this.currentOpponent, ghostStep: this.ghostStep, lastSave: this.lastSave } = state);
    ({ lastSwap: this.lastSwap, lastTeamChange: this.lastTeamChange } = state);
    return step;
  }

  /** Upstream's _process_trajectory: a finished game of the learning team moves the ratings. */
  private recordGame(trajectory: Trajectory): void {
    if (!trajectory.doneReached || !trajectory.teammateDonesReached || trajectory.interrupted) return;
    const last = trajectory.length - 1;
    const finalReward = trajectory.steps.rewards[last] + trajectory.steps.groupRewards[last];
    const result = finalReward > 0 ? 1 : finalReward < 0 ? 0 : 0.5;
    this.window.currentElo += this.controller.computeEloRatingChange(this.currentElo, result);
    this.stats.addStat(STAT_KEYS.selfPlayElo, this.currentElo);
  }

  /** Every ghost team of this trainer gets the opponent drawn for the next games. */
  private swapSnapshots(): void {
    for (const [team, { policyQueue }] of this.teams) {
      if (team === this.learningTeam) continue;
      this.currentOpponent = this.window.pickOpponent(this.random, this.settings.play_against_latest_model_ratio);
      policyQueue.put(this.ghostPolicy(team, this.opponentWeights()));
    }
  }

  private opponentWeights(): Weights {
    return this.currentOpponent === LATEST ? this.latest : this.window.snapshots[this.currentOpponent];
  }

  /** The team's ghost policy (a twin of the learner's networks, made once), loaded with `weights`. */
  private ghostPolicy(team: number, weights: Weights): ModelPolicy {
    let policy = this.ghostPolicies.get(team);
    if (policy === undefined) {
      const { behaviorSpec, options } = this.learner.model;
      // A sampling stream of its own: the ghosts' actions are not the learner's noise replayed.
      policy = new ModelPolicy(new ActorCritic(behaviorSpec, { ...options, seed: this.seed + 1000 + team }));
      this.ghostPolicies.set(team, policy);
    }
    policy.model.loadStateArrays(this.learner.model.describe(), weights);
    return policy;
  }

  /** Adds a trajectory's rewards to its agent's episode; a finished episode joins its team's list. */
  private tallyEpisode(behaviorId: string, trajectory: Trajectory): void {
    const agent = `${behaviorId} ${trajectory.agentId}`;
    let sum = this.episodeSums.get(agent) ?? 0;
    for (const reward of trajectory.steps.rewards) sum += reward;
    if (!trajectory.doneReached) {
      this.episodeSums.set(agent, sum);
      return;
    }
    this.episodeSums.delete(agent);
    const list = this.finishedEpisodes.get(behaviorId) ?? [];
    list.push(sum);
    if (list.length > REWARD_BUFFER_LENGTH) list.shift();
    this.finishedEpisodes.set(behaviorId, list);
  }
}
