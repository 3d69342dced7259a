/**
 * A piece of one agent's episode, as the agent processor hands it to a trainer (upstream's
 * Trajectory, trajectory.py). The steps are columns: row t of every column is step t, the
 * observation the agent acted on, the action it took and the reward that followed.
 */
import { AgentBuffer, BufferKey, groupObservationKey, nextObservationKey, observationKey } from './buffer';

/** What one groupmate saw, did and got at a step (upstream's GroupmateStatus). */
export interface GroupmateStatus {
  readonly obs: readonly Float32Array[];
  readonly reward: number;
  readonly continuousAction: Float32Array;
  readonly discreteAction: Int32Array;
  readonly done: boolean;
}

/** The steps of a trajectory, one row per step (upstream's list of AgentExperience). */
export interface ExperienceColumns {
  readonly length: number;
  /** One array per observation, length x observation size: what the agent saw before acting. */
  readonly obs: readonly Float32Array[];
  /** length x continuous action size */
  readonly continuousActions: Float32Array;
  /** length x number of discrete branches */
  readonly discreteActions: Int32Array;
  readonly continuousLogProbs: Float32Array;
  readonly discreteLogProbs: Float32Array;
  /**
   * length x sum of the branch sizes, 1 where the action was allowed: the environment's mask
   * inverted, as the buffer stores it. All ones when the environment sent no mask.
   */
  readonly actionMasks: Float32Array;
  /** The discrete actions taken before each step's observation; zeros at an episode's first step. */
  readonly prevActions: Int32Array;
  /** The reward that followed each step's action. */
  readonly rewards: Float32Array;
  readonly groupRewards: Float32Array;
  /** The other members of the agent's group at each step; empty lists for an agent in no group. */
  readonly groupStatuses: readonly (readonly GroupmateStatus[])[];
  /** A policy with memory: length x memory size, the memories each step's decision started from. */
  readonly memories?: Float32Array;
}

export class Trajectory {
  readonly agentId: string;
  readonly behaviorId: string;
  readonly steps: ExperienceColumns;
  /** The observation after the last step, one array per observation: the critic bootstraps from it. */
  readonly nextObs: readonly Float32Array[];
  /** The groupmates' observations after the last step. */
  readonly nextGroupObs: readonly (readonly Float32Array[])[];
  /** The last step ended the episode (upstream's done_reached), by the agent or by max steps. */
  readonly doneReached: boolean;
  /** The episode ended because it reached its max steps, not by the agent: its value is still bootstrapped. */
  readonly interrupted: boolean;

  constructor(init: {
    agentId: string;
    behaviorId: string;
    steps: ExperienceColumns;
    nextObs: readonly Float32Array[];
    nextGroupObs: readonly (readonly Float32Array[])[];
    doneReached: boolean;
    interrupted: boolean;
  }) {
    this.agentId = init.agentId;
    this.behaviorId = init.behaviorId;
    this.steps = init.steps;
    this.nextObs = init.nextObs;
    this.nextGroupObs = init.nextGroupObs;
    this.doneReached = init.doneReached;
    this.interrupted = init.interrupted;
  }

  get length(): number {
    return this.steps.length;
  }

  /** Every groupmate had ended its episode at the last step (upstream's teammate_dones_reached). */
  get teammateDonesReached(): boolean {
    const last = this.steps.groupStatuses[this.steps.length - 1] ?? [];
    return last.every((status) => status.done);
  }

  /**
   * The steps as buffer columns (upstream's to_agentbuffer): obs:i and next_obs:i, the actions,
   * the next step's actions (zeros after the last), log probabilities, action masks (padded with
   * ones), previous actions, rewards, masks (all 1), done (1 only at the end of an episode) and,
   * with memory, the memories each decision started from.
   * Columns whose rows would be empty (the discrete ones of a continuous behavior, and so on) are
   * left out. With `groups` (POCA's critic reads them), the groupmates at each step fill the
   * group columns (writeGroupColumns).
   */
  toAgentBuffer(groups = false): AgentBuffer {
    const steps = this.steps;
    const n = steps.length;
    const buffer = new AgentBuffer();
    steps.obs.forEach((obs, i) => {
      const size = obs.length / n;
      buffer.get(observationKey(i)).set(obs, size);
      buffer.get(nextObservationKey(i)).set(shiftedUp(obs, size, this.nextObs[i]), size);
    });
    buffer.get(BufferKey.GROUP_REWARD).set(steps.groupRewards, 1);
    buffer.get(BufferKey.MASKS).set(new Float32Array(n).fill(1), 1);
    const done = new Float32Array(n);
    done[n - 1] = this.doneReached ? 1 : 0;
    buffer.get(BufferKey.DONE).set(done, 1);

    const continuousSize = steps.continuousActions.length / n;
    const branches = steps.discreteActions.length / n;
    setIfNotEmpty(buffer, BufferKey.CONTINUOUS_ACTION, steps.continuousActions, continuousSize);
    setIfNotEmpty(buffer, BufferKey.DISCRETE_ACTION, steps.discreteActions, branches);
    setIfNotEmpty(
      buffer,
      BufferKey.NEXT_CONT_ACTION,
      shiftedUp(steps.continuousActions, continuousSize, new Float32Array(continuousSize)),
      continuousSize,
    );
    setIfNotEmpty(
      buffer,
      BufferKey.NEXT_DISC_ACTION,
      shiftedUp(steps.discreteActions, branches, new Float32Array(branches)),
      branches,
    );
    setIfNotEmpty(buffer, BufferKey.CONTINUOUS_LOG_PROBS, steps.continuousLogProbs, continuousSize);
    setIfNotEmpty(buffer, BufferKey.DISCRETE_LOG_PROBS, steps.discreteLogProbs, branches);
    if (setIfNotEmpty(buffer, BufferKey.ACTION_MASK, steps.actionMasks, steps.actionMasks.length / n)) {
      buffer.get(BufferKey.ACTION_MASK).paddingValue = 1;
    }
    setIfNotEmpty(buffer, BufferKey.PREV_ACTION, steps.prevActions, branches);
    if (steps.memories !== undefined) buffer.get(BufferKey.MEMORY).set(steps.memories, steps.memories.length / n);
    buffer.get(BufferKey.ENVIRONMENT_REWARDS).set(steps.rewards, 1);
    if (groups) this.writeGroupColumns(buffer);
    return buffer;
  }

  /**
   * Each step's groupmates, slot after slot in the order the processor lists them (upstream's
   * group_obs:i, group_continuous_action, group_discrete_aaction and groupmate_reward): as many
   * slots as the most groupmates at a step, and at least one, so that a lone agent's rows have a
   * width; an absent groupmate's observations are NaN (which is how the critic tells it is absent,
   * as upstream's), its actions and reward 0.
   */
  private writeGroupColumns(buffer: AgentBuffer): void {
    const { length: n, groupStatuses, obs } = this.steps;
    const slots = Math.max(1, ...groupStatuses.map((mates) => mates.length));
    const continuousSize = this.steps.continuousActions.length / n;
    const branches = this.steps.discreteActions.length / n;
    const obsSizes = obs.map((column) => column.length / n);
    const groupObs = obsSizes.map((size) => new Float32Array(n * slots * size).fill(NaN));
    const continuous = new Float32Array(n * slots * continuousSize);
    const discrete = new Float32Array(n * slots * branches);
    const rewards = new Float32Array(n * slots);
    groupStatuses.forEach((mates, t) => {
      mates.forEach((mate, m) => {
        const slot = t * slots + m;
        obsSizes.forEach((size, i) => groupObs[i].set(mate.obs[i], slot * size));
        continuous.set(mate.continuousAction, slot * continuousSize);
        discrete.set(mate.discreteAction, slot * branches);
        rewards[slot] = mate.reward;
      });
    });
    groupObs.forEach((values, i) => buffer.get(groupObservationKey(i)).set(values, slots * obsSizes[i]));
    setIfNotEmpty(buffer, BufferKey.GROUP_CONTINUOUS_ACTION, continuous, slots * continuousSize);
    setIfNotEmpty(buffer, BufferKey.GROUP_DISCRETE_ACTION, discrete, slots * branches);
    buffer.get(BufferKey.GROUPMATE_REWARDS).set(rewards, slots);
  }
}

/** Rows 1..n-1 of `rows` followed by `last`: each step paired with what came after it. */
function shiftedUp(rows: Float32Array | Int32Array, width: number, last: ArrayLike<number>): Float32Array {
  const out = new Float32Array(rows.length);
  out.set(rows.subarray(width), 0);
  out.set(last, rows.length - width);
  return out;
}

function setIfNotEmpty(buffer: AgentBuffer, key: string, rows: ArrayLike<number>, width: number): boolean {
  if (width === 0) return false;
  buffer.get(key).set(rows, width);
  return true;
}
