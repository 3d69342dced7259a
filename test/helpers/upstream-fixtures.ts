/**
 * What the fixtures recorded from upstream's trainers (test/trainers/*\/fixtures/record-*.py)
 * hold, as ours: trajectories (one vector observation, one branch of 2, maybe a continuous
 * action, memories and groupmates), weights by torch's names, and the update buffer as upstream's
 * update starts on it.
 */
import { blockValues, ParameterBlock } from '../../src/networks/layers/layer';
import { AgentBuffer, BufferKey } from '../../src/trainers/buffer';
import { standardized } from '../../src/trainers/ppo/update';
import { GroupmateStatus, Trajectory } from '../../src/trainers/trajectory';
import { expectCloseToScale } from './expect-close';

export interface RecordedStatus {
  readonly obs: number[];
  readonly reward: number;
  /** The branch's choice: `action`, or `discrete_action` beside a continuous one. */
  readonly action?: number;
  readonly discrete_action?: number;
  readonly done: boolean;
}

export interface RecordedStep extends RecordedStatus {
  readonly interrupted: boolean;
  readonly continuous_action?: number[];
  readonly log_prob?: number[];
  /** The memories the decision started from. */
  readonly memory?: number[];
  readonly group_reward?: number;
  readonly groupmates?: RecordedStatus[];
}

export interface RecordedTrajectory {
  readonly agent_id: string;
  readonly steps: readonly RecordedStep[];
  readonly next_obs: number[];
  readonly next_group_obs?: number[][];
  readonly done_reached: boolean;
  /** Where absent, the last step's flag. */
  readonly interrupted?: boolean;
}

const choice = (status: RecordedStatus): number => status.action ?? status.discrete_action!;

function groupmate(recorded: RecordedStatus): GroupmateStatus {
  return {
    obs: [Float32Array.from(recorded.obs)],
    reward: recorded.reward,
    continuousAction: new Float32Array(0),
    discreteAction: Int32Array.from([choice(recorded)]),
    done: recorded.done,
  };
}

/** A recorded trajectory as ours, of behavior 1D (a branch of 2, every action allowed). */
export function trajectoryOf(recorded: RecordedTrajectory): Trajectory {
  const steps = recorded.steps;
  const n = steps.length;
  const flat = (values: (step: RecordedStep) => number[] | undefined): Float32Array => Float32Array.from(steps.flatMap((s) => values(s) ?? []));
  return new Trajectory({
    agentId: recorded.agent_id,
    behaviorId: '1D',
    steps: {
      length: n,
      obs: [flat((s) => s.obs)],
      continuousActions: flat((s) => s.continuous_action),
      discreteActions: Int32Array.from(steps.map(choice)),
      continuousLogProbs: steps[0].continuous_action === undefined ? new Float32Array(0) : new Float32Array(n),
      discreteLogProbs: steps[0].log_prob === undefined ? new Float32Array(n) : flat((s) => s.log_prob),
      actionMasks: new Float32Array(n * 2).fill(1),
      prevActions: new Int32Array(n),
      rewards: Float32Array.from(steps.map((s) => s.reward)),
      groupRewards: Float32Array.from(steps.map((s) => s.group_reward ?? 0)),
      groupStatuses: steps.map((s) => (s.groupmates ?? []).map(groupmate)),
      ...(steps[0].memory === undefined ? {} : { memories: flat((s) => s.memory) }),
    },
    nextObs: [Float32Array.from(recorded.next_obs)],
    nextGroupObs: (recorded.next_group_obs ?? []).map((obs) => [Float32Array.from(obs)]),
    doneReached: recorded.done_reached,
    interrupted: recorded.interrupted ?? steps[n - 1].interrupted,
  });
}

/** Each of `blocks` from the fixture's values under its torch name. */
export function loadTorchWeights(parameters: Float32Array, blocks: readonly ParameterBlock[], values: (block: string) => Record<string, number[]>, torchName: (block: string) => string): void {
  for (const block of blocks) {
    const theirs = values(block.name)[torchName(block.name)];
    if (theirs === undefined) throw new Error(`The fixture has no ${torchName(block.name)} for ${block.name}.`);
    blockValues(parameters, block).set(theirs);
  }
}

/**
 * The first `batchSize` rows of an on-policy trainer's update buffer once its advantages are
 * standardized as upstream's update does, after checking them against the fixture's.
 */
export function firstMinibatchAsUpstream(buffer: AgentBuffer, batchSize: number, standardizedAdvantages: readonly number[]): AgentBuffer {
  const advantages = buffer.get(BufferKey.ADVANTAGES);
  advantages.set(standardized(advantages.rows), 1);
  expectCloseToScale(advantages.rows, standardizedAdvantages, 'standardized advantages');
  return buffer.makeMiniBatch(0, batchSize);
}
