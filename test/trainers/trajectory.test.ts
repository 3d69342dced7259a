import { BufferKey, nextObservationKey, observationKey } from '../../src/trainers/buffer';
import { ExperienceColumns, GroupmateStatus, Trajectory } from '../../src/trainers/trajectory';

const f32 = (values: number[]) => Float32Array.from(values);
const i32 = (values: number[]) => Int32Array.from(values);

/** Three steps of a hybrid behavior: 2 observations (sizes 2 and 1), 1 continuous action, branches [3, 2]. */
function hybridSteps(): ExperienceColumns {
  return {
    length: 3,
    obs: [f32([0, 1, 10, 11, 20, 21]), f32([5, 15, 25])],
    continuousActions: f32([0.1, 0.2, 0.3]),
    discreteActions: i32([2, 1, 0, 0, 1, 1]),
    continuousLogProbs: f32([-1, -2, -3]),
    discreteLogProbs: f32([-0.5, -0.6, -0.7, -0.8, -0.9, -1]),
    actionMasks: f32([1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0]),
    prevActions: i32([0, 0, 2, 1, 0, 0]),
    rewards: f32([0.5, -1, 2]),
    groupRewards: f32([0, 0, 0.25]),
    groupStatuses: [[], [], []],
  };
}

function trajectory(steps: ExperienceColumns, doneReached: boolean, interrupted = false): Trajectory {
  return new Trajectory({
    agentId: 'agent_0-7',
    behaviorId: 'Hybrid',
    steps,
    nextObs: [f32([30, 31]), f32([35])],
    nextGroupObs: [],
    doneReached,
    interrupted,
  });
}

const rows = (values: Float32Array) => Array.from(values);

describe('Trajectory.toAgentBuffer', () => {
  it('pairs each observation with the next one, the last with nextObs', () => {
    const buffer = trajectory(hybridSteps(), false).toAgentBuffer();
    expect(buffer.numExperiences).toBe(3);
    expect(rows(buffer.get(observationKey(0)).rows)).toEqual([0, 1, 10, 11, 20, 21]);
    expect(buffer.get(observationKey(0)).width).toBe(2);
    expect(rows(buffer.get(nextObservationKey(0)).rows)).toEqual([10, 11, 20, 21, 30, 31]);
    expect(rows(buffer.get(nextObservationKey(1)).rows)).toEqual([15, 25, 35]);
  });

  it('writes actions, next actions, log probs, masks, previous actions and rewards', () => {
    const buffer = trajectory(hybridSteps(), true).toAgentBuffer();
    expect(rows(buffer.get(BufferKey.CONTINUOUS_ACTION).rows)).toEqual(rows(f32([0.1, 0.2, 0.3])));
    expect(rows(buffer.get(BufferKey.DISCRETE_ACTION).rows)).toEqual([2, 1, 0, 0, 1, 1]);
    expect(buffer.get(BufferKey.DISCRETE_ACTION).width).toBe(2);
    expect(rows(buffer.get(BufferKey.NEXT_CONT_ACTION).rows)).toEqual(rows(f32([0.2, 0.3, 0])));
    expect(rows(buffer.get(BufferKey.NEXT_DISC_ACTION).rows)).toEqual([0, 0, 1, 1, 0, 0]);
    expect(rows(buffer.get(BufferKey.CONTINUOUS_LOG_PROBS).rows)).toEqual([-1, -2, -3]);
    expect(buffer.get(BufferKey.DISCRETE_LOG_PROBS).width).toBe(2);
    expect(buffer.get(BufferKey.ACTION_MASK).width).toBe(5);
    expect(buffer.get(BufferKey.ACTION_MASK).paddingValue).toBe(1);
    expect(rows(buffer.get(BufferKey.PREV_ACTION).rows)).toEqual([0, 0, 2, 1, 0, 0]);
    expect(rows(buffer.get(BufferKey.ENVIRONMENT_REWARDS).rows)).toEqual([0.5, -1, 2]);
    expect(rows(buffer.get(BufferKey.GROUP_REWARD).rows)).toEqual([0, 0, 0.25]);
    expect(rows(buffer.get(BufferKey.MASKS).rows)).toEqual([1, 1, 1]);
    expect(rows(buffer.get(BufferKey.DONE).rows)).toEqual([0, 0, 1]);
    const keys = buffer.keys();
    expect(buffer.checkLength(keys)).toBe(true);
  });

  it('marks no step done when the trajectory was cut before the episode ended', () => {
    const cut = trajectory(hybridSteps(), false);
    expect(cut.doneReached).toBe(false);
    expect(rows(cut.toAgentBuffer().get(BufferKey.DONE).rows)).toEqual([0, 0, 0]);
    const interrupted = trajectory(hybridSteps(), true, true);
    expect(interrupted.doneReached).toBe(true);
    expect(interrupted.interrupted).toBe(true);
    expect(interrupted.length).toBe(3);
  });

  it('leaves out the columns a continuous behavior has no values for', () => {
    const steps: ExperienceColumns = {
      ...hybridSteps(),
      discreteActions: i32([]),
      discreteLogProbs: f32([]),
      actionMasks: f32([]),
      prevActions: i32([]),
    };
    const buffer = trajectory(steps, false).toAgentBuffer();
    for (const key of [
      BufferKey.DISCRETE_ACTION,
      BufferKey.NEXT_DISC_ACTION,
      BufferKey.DISCRETE_LOG_PROBS,
      BufferKey.ACTION_MASK,
      BufferKey.PREV_ACTION,
    ]) {
      expect(buffer.has(key)).toBe(false);
    }
    expect(buffer.has(BufferKey.CONTINUOUS_ACTION)).toBe(true);
  });
});

describe('Trajectory.teammateDonesReached', () => {
  const mate = (done: boolean): GroupmateStatus => ({
    obs: [],
    reward: 0,
    continuousAction: f32([]),
    discreteAction: i32([]),
    done,
  });

  it('is true when every groupmate at the last step had ended', () => {
    const steps = { ...hybridSteps(), groupStatuses: [[mate(false)], [mate(false)], [mate(true), mate(true)]] };
    expect(trajectory(steps, true).teammateDonesReached).toBe(true);
    const alive = { ...hybridSteps(), groupStatuses: [[], [], [mate(true), mate(false)]] };
    expect(trajectory(alive, true).teammateDonesReached).toBe(false);
  });
});
