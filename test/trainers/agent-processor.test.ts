/**
 * The agent processor fed with hand-built steps, step by step as an environment manager feeds it:
 * each call brings one worker's new steps and the decision taken on that worker's previous
 * decision steps. Every observation is [worker, agent id, t], so each row tells where it came from.
 */
import { StatsAggregationMethod } from '../../src/communicator/side-channels/stats-side-channel';
import { ActionSpec, BehaviorSpec, DimensionProperty, ObservationType } from '../../src/env/behavior-spec';
import { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import { ActionInfo, EMPTY_ACTION_INFO } from '../../src/trainers/action-info';
import { AgentManagerQueue } from '../../src/trainers/agent-manager-queue';
import { AgentManager, AgentProcessor, AgentProcessorOptions, FORGET_AFTER_STEPS } from '../../src/trainers/agent-processor';
import { memoryLogger } from '../../src/common/logger';
import { BufferKey, groupObservationKey, groupSlots, nextObservationKey, observationKey, padGroupSlots } from '../../src/trainers/buffer';
import { StatsSink } from '../../src/trainers/stats-sink';
import { Trajectory } from '../../src/trainers/trajectory';

/** One continuous action and two discrete branches of 3 and 2 choices. */
const SPEC: BehaviorSpec = {
  observationSpecs: [
    { shape: [3], dimensionProperty: [DimensionProperty.NONE], observationType: ObservationType.DEFAULT, name: '' },
  ],
  actionSpec: new ActionSpec(1, [3, 2]),
};

interface AgentAt {
  id: number;
  t: number;
  reward?: number;
  group?: number;
  groupReward?: number;
  /** Flattened over the branches, 1 = forbidden, as the environment sends it. */
  mask?: number[];
  interrupted?: boolean;
}

function columns(worker: number, agents: AgentAt[]) {
  const obs = new Float32Array(agents.length * 3);
  agents.forEach((a, i) => obs.set([worker, a.id, a.t], i * 3));
  return {
    obs: [obs],
    reward: Float32Array.from(agents, (a) => a.reward ?? 0),
    agentId: Int32Array.from(agents, (a) => a.id),
    groupId: Int32Array.from(agents, (a) => a.group ?? 0),
    groupReward: Float32Array.from(agents, (a) => a.groupReward ?? 0),
  };
}

function decisionSteps(worker: number, agents: AgentAt[]): DecisionSteps {
  const c = columns(worker, agents);
  let masks: Uint8Array[] | null = null;
  if (agents.some((a) => a.mask !== undefined)) {
    masks = [new Uint8Array(agents.length * 3), new Uint8Array(agents.length * 2)];
    agents.forEach((a, i) => {
      const mask = a.mask ?? [0, 0, 0, 0, 0];
      masks![0].set(mask.slice(0, 3), i * 3);
      masks![1].set(mask.slice(3), i * 2);
    });
  }
  return new DecisionSteps(c.obs, c.reward, c.agentId, masks, c.groupId, c.groupReward);
}

function terminalSteps(worker: number, agents: AgentAt[]): TerminalSteps {
  const c = columns(worker, agents);
  const interrupted = Uint8Array.from(agents, (a) => (a.interrupted ? 1 : 0));
  return new TerminalSteps(c.obs, c.reward, interrupted, c.agentId, c.groupId, c.groupReward);
}

/** What the test policy does for an agent at time t on a worker: easy to recognize, exact in float32. */
function actionAt(worker: number, id: number, t: number) {
  return {
    continuous: 1000 * worker + 10 * t + id,
    discrete: [(t + id) % 3, t % 2],
    continuousLogProb: -t,
    discreteLogProbs: [-(t + 1), -(t + 2)],
  };
}

/** A deterministic policy that reads [worker, id, t] from each observation. */
function decide(steps: DecisionSteps): ActionInfo {
  const n = steps.length;
  const continuous = new Float32Array(n);
  const discrete = new Int32Array(n * 2);
  const continuousLogProbs = new Float32Array(n);
  const discreteLogProbs = new Float32Array(n * 2);
  for (let i = 0; i < n; i++) {
    const [worker, id, t] = steps.observation(0, i);
    const a = actionAt(worker, id, t);
    continuous[i] = a.continuous;
    discrete.set(a.discrete, i * 2);
    continuousLogProbs[i] = a.continuousLogProb;
    discreteLogProbs.set(a.discreteLogProbs, i * 2);
  }
  const action = { continuous, discrete };
  return {
    action,
    envAction: action,
    logProbs: { continuous: continuousLogProbs, discrete: discreteLogProbs },
    entropy: new Float32Array(n).fill(0.5),
    agentIds: steps.agentId,
  };
}

/** One environment worker: steps it, and remembers the decision for the next call. */
class Worker {
  private previous: ActionInfo = EMPTY_ACTION_INFO;

  constructor(
    private readonly processor: AgentProcessor,
    readonly id: number,
  ) {}

  step(decision: AgentAt[], terminal: AgentAt[] = []): void {
    const steps = decisionSteps(this.id, decision);
    this.processor.addExperiences(steps, terminalSteps(this.id, terminal), this.id, this.previous);
    this.previous = decide(steps);
  }
}

class RecordedStats implements StatsSink {
  readonly added = new Map<string, number[]>();
  readonly aggregation = new Map<string, StatsAggregationMethod>();
  readonly set = new Map<string, number>();

  addStat(key: string, value: number, aggregation = StatsAggregationMethod.AVERAGE): void {
    this.added.set(key, [...(this.added.get(key) ?? []), value]);
    this.aggregation.set(key, aggregation);
  }

  setStat(key: string, value: number): void {
    this.set.set(key, value);
  }
}

function setup(options: Partial<AgentProcessorOptions> = {}) {
  const stats = new RecordedStats();
  const processor = new AgentProcessor(SPEC, { behaviorId: 'Hybrid', stats, ...options });
  const queue = new AgentManagerQueue<Trajectory>('Hybrid');
  processor.publishTrajectoryQueue(queue);
  return { processor, queue, stats };
}

/** The observations of a trajectory's steps, as [worker, id, t] rows. */
function observed(trajectory: Trajectory): number[][] {
  const obs = Array.from(trajectory.steps.obs[0]);
  return Array.from({ length: trajectory.length }, (_, i) => obs.slice(i * 3, i * 3 + 3));
}

function pairs(values: Int32Array | Float32Array): number[][] {
  return Array.from({ length: values.length / 2 }, (_, i) => [values[2 * i], values[2 * i + 1]]);
}

describe('AgentProcessor: trajectories cut at time_horizon', () => {
  it('pairs each observation with the action taken on it and the reward that followed', () => {
    const { processor, queue, stats } = setup({ maxTrajectoryLength: 3 });
    const worker = new Worker(processor, 0);
    for (let t = 0; t < 7; t++) worker.step([{ id: 5, t, reward: t }]);

    const [first, second, ...rest] = queue.drain();
    expect(rest).toEqual([]);
    expect(first.agentId).toBe('agent_0-5');
    expect(first.behaviorId).toBe('Hybrid');
    expect(observed(first)).toEqual([[0, 5, 0], [0, 5, 1], [0, 5, 2]]);
    expect(Array.from(first.nextObs[0])).toEqual([0, 5, 3]);
    expect(Array.from(first.steps.rewards)).toEqual([1, 2, 3]);
    expect(Array.from(first.steps.continuousActions)).toEqual([5, 15, 25]);
    expect(pairs(first.steps.discreteActions)).toEqual([[2, 0], [0, 1], [1, 0]]);
    expect(Array.from(first.steps.continuousLogProbs)).toEqual([-0, -1, -2]);
    expect(pairs(first.steps.discreteLogProbs)).toEqual([[-1, -2], [-2, -3], [-3, -4]]);
    // The action before each observation: none before the first.
    expect(pairs(first.steps.prevActions)).toEqual([[0, 0], [2, 0], [0, 1]]);
    expect(first.doneReached).toBe(false);
    expect(first.interrupted).toBe(false);

    // The episode goes on across the cut: the second piece starts where the first stopped.
    expect(observed(second)).toEqual([[0, 5, 3], [0, 5, 4], [0, 5, 5]]);
    expect(Array.from(second.nextObs[0])).toEqual([0, 5, 6]);
    expect(pairs(second.steps.prevActions)[0]).toEqual([1, 0]);
    expect(processor.agentCount).toBe(1);

    const buffer = first.toAgentBuffer();
    expect(Array.from(buffer.get(nextObservationKey(0)).rows)).toEqual([0, 5, 1, 0, 5, 2, 0, 5, 3]);
    expect(Array.from(buffer.get(BufferKey.DONE).rows)).toEqual([0, 0, 0]);
    expect(Array.from(buffer.get(BufferKey.ACTION_MASK).rows)).toEqual(new Array(15).fill(1));

    expect(stats.added.get('Policy/Entropy')).toEqual(new Array(6).fill(0.5));
    expect(stats.added.has('Environment/Episode Length')).toBe(false);
  });

  it('never pairs a decision with a later step than the one it was taken on', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const none = terminalSteps(0, []);
    const t0 = decisionSteps(0, [{ id: 0, t: 0 }]);
    const t1 = decisionSteps(0, [{ id: 0, t: 1 }]);
    const t2 = decisionSteps(0, [{ id: 0, t: 2 }]);
    processor.addExperiences(t0, none, 0, EMPTY_ACTION_INFO);
    processor.addExperiences(t1, none, 0, decide(t0));
    // The decision taken on t = 1 never comes: no experience can start at t = 1.
    processor.addExperiences(t2, none, 0, EMPTY_ACTION_INFO);
    processor.addExperiences(decisionSteps(0, [{ id: 0, t: 3 }]), none, 0, decide(t2));
    const [trajectory] = queue.drain();
    expect(observed(trajectory)).toEqual([[0, 0, 0], [0, 0, 2]]);
    expect(Array.from(trajectory.steps.continuousActions)).toEqual([0, 20]);
  });

  it('stores the action mask of the step acted on, inverted to 1 = allowed', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const worker = new Worker(processor, 0);
    worker.step([{ id: 0, t: 0, mask: [0, 1, 0, 1, 0] }, { id: 1, t: 0 }]);
    worker.step([{ id: 0, t: 1 }, { id: 1, t: 1 }]);
    worker.step([{ id: 0, t: 2 }, { id: 1, t: 2 }]);
    const [agent0, agent1] = queue.drain();
    expect(Array.from(agent0.steps.actionMasks)).toEqual([1, 0, 1, 0, 1, 1, 1, 1, 1, 1]);
    expect(Array.from(agent1.steps.actionMasks)).toEqual(new Array(10).fill(1));
  });
});

describe('AgentProcessor: episode ends', () => {
  it('tells a true end from an interrupted one and reports each episode', () => {
    const { processor, queue, stats } = setup();
    const worker = new Worker(processor, 0);
    worker.step([{ id: 1, t: 0 }]);
    worker.step([{ id: 1, t: 1, reward: 1 }]);
    worker.step([{ id: 1, t: 2, reward: 2 }]);
    worker.step([], [{ id: 1, t: 3, reward: 4 }]);
    // Upstream's test environments give each episode a new id.
    worker.step([{ id: 2, t: 4 }]);
    worker.step([{ id: 2, t: 5, reward: 1 }]);
    worker.step([], [{ id: 2, t: 6, reward: 3, interrupted: true }]);

    const [ended, interrupted] = queue.drain();
    expect(observed(ended)).toEqual([[0, 1, 0], [0, 1, 1], [0, 1, 2]]);
    expect(Array.from(ended.nextObs[0])).toEqual([0, 1, 3]);
    expect(Array.from(ended.steps.rewards)).toEqual([1, 2, 4]);
    expect(ended.doneReached).toBe(true);
    expect(ended.interrupted).toBe(false);
    expect(Array.from(ended.toAgentBuffer().get(BufferKey.DONE).rows)).toEqual([0, 0, 1]);

    expect(observed(interrupted)).toEqual([[0, 2, 4], [0, 2, 5]]);
    expect(Array.from(interrupted.nextObs[0])).toEqual([0, 2, 6]);
    expect(interrupted.doneReached).toBe(true);
    expect(interrupted.interrupted).toBe(true);

    // Upstream counts the steps after the first that asked for a decision.
    expect(stats.added.get('Environment/Episode Length')).toEqual([2, 1]);
    expect(stats.added.get('Environment/Cumulative Reward')).toEqual([7, 4]);
    expect(stats.aggregation.get('Environment/Cumulative Reward')).toBe(StatsAggregationMethod.HISTOGRAM);
    expect(stats.aggregation.get('Environment/Episode Length')).toBe(StatsAggregationMethod.AVERAGE);
    expect(stats.added.has('Environment/Group Cumulative Reward')).toBe(false);
    expect(processor.agentCount).toBe(0);
  });

  it('ends an episode and starts the next when one message holds both for the same id', () => {
    const { processor, queue, stats } = setup();
    const worker = new Worker(processor, 0);
    worker.step([{ id: 0, t: 0 }]);
    worker.step([{ id: 0, t: 1, reward: 1 }]);
    // Unity keeps the id: the episode's last step and the next episode's first come together.
    worker.step([{ id: 0, t: 10, reward: 100 }], [{ id: 0, t: 2, reward: 5 }]);
    worker.step([{ id: 0, t: 11, reward: 1 }]);
    worker.step([{ id: 0, t: 12, reward: 1 }]);
    worker.step([], [{ id: 0, t: 13, reward: 2 }]);

    const [first, second, ...rest] = queue.drain();
    expect(rest).toEqual([]);
    expect(observed(first)).toEqual([[0, 0, 0], [0, 0, 1]]);
    expect(Array.from(first.nextObs[0])).toEqual([0, 0, 2]);
    expect(Array.from(first.steps.rewards)).toEqual([1, 5]);
    expect(Array.from(first.steps.continuousActions)).toEqual([0, 10]);
    expect(first.doneReached).toBe(true);

    expect(observed(second)).toEqual([[0, 0, 10], [0, 0, 11], [0, 0, 12]]);
    expect(Array.from(second.nextObs[0])).toEqual([0, 0, 13]);
    expect(Array.from(second.steps.continuousActions)).toEqual([100, 110, 120]);
    expect(Array.from(second.steps.rewards)).toEqual([1, 1, 2]);
    // A new episode starts with no previous action, not with the last one of the episode before.
    expect(pairs(second.steps.prevActions)).toEqual([[0, 0], [1, 0], [2, 1]]);

    expect(stats.added.get('Environment/Episode Length')).toEqual([1, 2]);
    expect(stats.added.get('Environment/Cumulative Reward')).toEqual([6, 4]);
  });

  it('makes nothing of an agent that ends before any decision was taken for it', () => {
    const { processor, queue, stats } = setup();
    const worker = new Worker(processor, 0);
    processor.addExperiences(decisionSteps(0, [{ id: 3, t: 0 }]), terminalSteps(0, []), 0, EMPTY_ACTION_INFO);
    expect(processor.agentCount).toBe(1);
    worker.step([], [{ id: 3, t: 1, reward: 1 }]);
    worker.step([], [{ id: 4, t: 0, reward: 1 }]);
    expect(queue.empty()).toBe(true);
    expect(stats.added.has('Environment/Episode Length')).toBe(false);
    expect(processor.agentCount).toBe(0);
  });

  it('forgets every agent on endEpisode and starts afresh from the next steps', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const worker = new Worker(processor, 0);
    worker.step([{ id: 0, t: 0 }, { id: 1, t: 0 }]);
    worker.step([{ id: 0, t: 1 }, { id: 1, t: 1 }]);
    processor.endEpisode();
    expect(processor.agentCount).toBe(0);
    // The decision taken on t = 1 comes with the first steps after the reset: it belongs to no one now.
    worker.step([{ id: 0, t: 50 }, { id: 1, t: 50 }]);
    worker.step([{ id: 0, t: 51 }, { id: 1, t: 51 }]);
    worker.step([{ id: 0, t: 52 }, { id: 1, t: 52 }]);
    const trajectories = queue.drain();
    expect(trajectories.map(observed)).toEqual([
      [[0, 0, 50], [0, 0, 51]],
      [[0, 1, 50], [0, 1, 51]],
    ]);
  });
});

describe('AgentProcessor: several workers', () => {
  it('keeps the same agent ids of two workers apart', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const w0 = new Worker(processor, 0);
    const w1 = new Worker(processor, 1);
    for (let t = 0; t < 3; t++) {
      w0.step([{ id: 0, t, reward: 1 }, { id: 1, t, reward: 2 }]);
      w1.step([{ id: 1, t, reward: 20 }, { id: 0, t, reward: 10 }]);
    }
    const trajectories = queue.drain();
    expect(trajectories.map((tr) => tr.agentId)).toEqual(['agent_0-0', 'agent_0-1', 'agent_1-1', 'agent_1-0']);
    for (const trajectory of trajectories) {
      const [worker, id] = [Number(trajectory.agentId[6]), Number(trajectory.agentId[8])];
      expect(observed(trajectory)).toEqual([[worker, id, 0], [worker, id, 1]]);
      expect(Array.from(trajectory.nextObs[0])).toEqual([worker, id, 2]);
      expect(Array.from(trajectory.steps.continuousActions)).toEqual([1000 * worker + id, 1000 * worker + 10 + id]);
      expect(pairs(trajectory.steps.prevActions)).toEqual([[0, 0], actionAt(worker, id, 0).discrete]);
      const reward = worker === 0 ? id + 1 : 10 * (id + 1);
      expect(Array.from(trajectory.steps.rewards)).toEqual([reward, reward]);
    }
  });
});

describe('AgentProcessor: groups', () => {
  const g = (id: number, t: number, extra: Partial<AgentAt> = {}): AgentAt => ({ id, t, group: 1, ...extra });

  it("records each groupmate's status, and ended groupmates until the end of their last step", () => {
    const { processor, queue, stats } = setup();
    const worker = new Worker(processor, 0);
    worker.step([g(0, 0), g(1, 0), g(2, 0)]);
    worker.step([g(0, 1), g(1, 1), g(2, 1)]);
    worker.step([g(0, 2), g(1, 2)], [g(2, 2, { reward: 7, groupReward: 3 })]);
    worker.step([g(0, 3, { groupReward: 1 }), g(1, 3)]);
    worker.step([], [g(0, 4, { groupReward: 2 }), g(1, 4)]);

    const [agent2, agent0, agent1] = queue.drain();
    expect(agent2.agentId).toBe('agent_0-2');
    expect(agent2.steps.groupStatuses.map((mates) => mates.length)).toEqual([2, 2]);

    expect(agent0.agentId).toBe('agent_0-0');
    expect(agent0.steps.groupStatuses.map((mates) => mates.length)).toEqual([2, 2, 1, 1]);
    const [mate1, mate2] = agent0.steps.groupStatuses[1];
    // Agent 2's last status: what it saw at t = 1, what it did there, the reward of its end.
    expect(Array.from(mate2.obs[0])).toEqual([0, 2, 1]);
    expect(Array.from(mate2.continuousAction)).toEqual([12]);
    expect(Array.from(mate2.discreteAction)).toEqual([0, 1]);
    expect(mate2.reward).toBe(7);
    expect(mate2.done).toBe(true);
    expect(Array.from(mate1.obs[0])).toEqual([0, 1, 1]);
    expect(mate1.done).toBe(false);
    expect(agent0.teammateDonesReached).toBe(true);
    expect(Array.from(agent0.steps.groupRewards)).toEqual([0, 0, 1, 2]);
    expect(agent0.nextGroupObs.map((obs) => Array.from(obs[0]))).toEqual([[0, 1, 4]]);
    expect(agent1.steps.groupStatuses[3].map((mate) => Array.from(mate.obs[0]))).toEqual([[0, 0, 3]]);

    // The group reward is POCA's trainer's to report (upstream's), once per group episode.
    expect(stats.added.has('Environment/Group Cumulative Reward')).toBe(false);
  });

  it('lays the groupmates out in slots for the critic: absent ones NaN observations, 0 actions and rewards', () => {
    const { processor, queue } = setup();
    const worker = new Worker(processor, 0);
    worker.step([g(0, 0), g(1, 0), g(2, 0)]);
    worker.step([g(0, 1), g(1, 1)], [g(2, 1, { reward: 7 })]);
    worker.step([], [g(0, 2), g(1, 2, { reward: 5 })]);
    const agent0 = queue.drain().find((trajectory) => trajectory.agentId === 'agent_0-0')!;
    const buffer = agent0.toAgentBuffer(true);
    expect(groupSlots(buffer)).toBe(2);
    // Step 0: agents 2 and 1 (as upstream, the statuses of ended agents are taken first); step 1:
    // agent 1 only, agent 2 having left.
    expect(Array.from(buffer.get(groupObservationKey(0)).rows)).toEqual([0, 2, 0, 0, 1, 0, 0, 1, 1, NaN, NaN, NaN]);
    expect(Array.from(buffer.get(BufferKey.GROUP_CONTINUOUS_ACTION).rows)).toEqual([2, 1, 11, 0]);
    expect(Array.from(buffer.get(BufferKey.GROUP_DISCRETE_ACTION).rows)).toEqual([2, 0, 1, 0, 2, 1, 0, 0]);
    expect(Array.from(buffer.get(BufferKey.GROUPMATE_REWARDS).rows)).toEqual([7, 0, 5, 0]);
    // PPO and SAC take no group columns.
    expect(agent0.toAgentBuffer().has(groupObservationKey(0))).toBe(false);
  });

  it('shows an agent that leaves at its first step the groupmates still playing, not its group\'s end (unlike upstream)', () => {
    const { processor, queue } = setup();
    const worker = new Worker(processor, 0);
    worker.step([g(0, 0), g(1, 0), g(2, 0)]);
    worker.step([g(0, 1), g(1, 1)], [g(2, 1, { groupReward: -1 })]);
    const [agent2] = queue.drain();
    expect(agent2.agentId).toBe('agent_0-2');
    expect(agent2.steps.groupStatuses[0].map((mate) => [Array.from(mate.obs[0]), mate.done])).toEqual([
      [[0, 0, 0], false],
      [[0, 1, 0], false],
    ]);
    expect(agent2.teammateDonesReached).toBe(false);
    expect(agent2.nextGroupObs.map((obs) => Array.from(obs[0]))).toEqual([[0, 0, 1], [0, 1, 1]]);
  });

  it('counts an agent that joins the group as a groupmate from its first action on', () => {
    const { processor, queue } = setup();
    const worker = new Worker(processor, 0);
    worker.step([g(0, 0)]);
    worker.step([g(0, 1), g(1, 1)]);
    worker.step([g(0, 2), g(1, 2)]);
    worker.step([], [g(0, 3), g(1, 3)]);
    const [agent0] = queue.drain();
    expect(agent0.steps.groupStatuses.map((mates) => mates.map((mate) => Array.from(mate.obs[0])))).toEqual([
      [],
      [[0, 1, 1]],
      [[0, 1, 2]],
    ]);
    const buffer = agent0.toAgentBuffer(true);
    expect(groupSlots(buffer)).toBe(1);
    expect(Array.from(buffer.get(groupObservationKey(0)).rows)).toEqual([NaN, NaN, NaN, 0, 1, 1, 0, 1, 2]);
  });

  it('widens buffers of fewer groupmates to more slots, padding them as absent groupmates', () => {
    const { processor, queue } = setup();
    const worker = new Worker(processor, 0);
    worker.step([g(0, 0), g(1, 0)]);
    worker.step([], [g(0, 1), g(1, 1, { reward: 3 })]);
    const buffer = queue.drain()[0].toAgentBuffer(true);
    padGroupSlots(buffer, 3);
    expect(groupSlots(buffer)).toBe(3);
    expect(Array.from(buffer.get(groupObservationKey(0)).rows)).toEqual([0, 1, 0, NaN, NaN, NaN, NaN, NaN, NaN]);
    expect(Array.from(buffer.get(BufferKey.GROUPMATE_REWARDS).rows)).toEqual([3, 0, 0]);
    expect(Array.from(buffer.get(BufferKey.GROUP_CONTINUOUS_ACTION).rows)).toEqual([1, 0, 0]);
  });

  it('gives agents in no group no groupmates', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const worker = new Worker(processor, 0);
    for (let t = 0; t < 3; t++) worker.step([{ id: 0, t }, { id: 1, t }]);
    for (const trajectory of queue.drain()) {
      expect(trajectory.steps.groupStatuses).toEqual([[], []]);
      expect(trajectory.nextGroupObs).toEqual([]);
    }
  });
});

describe('AgentProcessor: bad decisions', () => {
  it('refuses a decision whose arrays do not fit its agents', () => {
    const { processor } = setup();
    const steps = decisionSteps(0, [{ id: 0, t: 0 }]);
    const good = decide(steps);
    const bad: ActionInfo = { ...good, action: { continuous: new Float32Array(2), discrete: good.action.discrete } };
    expect(() => processor.addExperiences(steps, terminalSteps(0, []), 0, bad)).toThrow(
      /behavior Hybrid has 2 values in action.continuous; its 1 agents .* need 1/,
    );
  });
});

describe('AgentManager', () => {
  it('owns a trajectory queue (bounded when threaded) and an unbounded policy queue', () => {
    const stats = new RecordedStats();
    const threaded = new AgentManager<string>(SPEC, { behaviorId: 'Hybrid', stats, maxTrajectoryLength: 2 });
    expect(threaded.trajectoryQueue.maxlen).toBe(20);
    expect(threaded.policyQueue.maxlen).toBe(0);
    expect(new AgentManager<string>(SPEC, { behaviorId: 'Hybrid', stats, threaded: false }).trajectoryQueue.maxlen).toBe(0);

    const worker = new Worker(threaded, 0);
    for (let t = 0; t < 3; t++) worker.step([{ id: 0, t }]);
    expect(threaded.trajectoryQueue.size).toBe(1);
    threaded.policyQueue.put('weights v2');
    expect(threaded.policyQueue.drain()).toEqual(['weights v2']);
  });

  it("passes the environment's stats on, MOST_RECENT ones from worker 0 only", () => {
    const stats = new RecordedStats();
    const manager = new AgentManager<string>(SPEC, { behaviorId: 'Hybrid', stats });
    const fromWorker = (averaged: number, recent: number, summed: number) =>
      new Map([
        ['averaged', [[averaged, StatsAggregationMethod.AVERAGE]] as Array<[number, StatsAggregationMethod]>],
        ['most_recent', [[recent, StatsAggregationMethod.MOST_RECENT]] as Array<[number, StatsAggregationMethod]>],
        ['summed', [[summed, StatsAggregationMethod.SUM]] as Array<[number, StatsAggregationMethod]>],
      ]);
    manager.recordEnvironmentStats(fromWorker(1, 2, 3), 0);
    manager.recordEnvironmentStats(fromWorker(3, 4, 1), 0);
    manager.recordEnvironmentStats(fromWorker(5, 6, 2), 1);
    expect(stats.added.get('averaged')).toEqual([1, 3, 5]);
    expect(stats.added.get('summed')).toEqual([3, 1, 2]);
    expect(stats.aggregation.get('summed')).toBe(StatsAggregationMethod.SUM);
    expect(stats.set.get('most_recent')).toBe(4);
    expect(stats.added.has('most_recent')).toBe(false);
  });
});

describe('agents that vanish without a terminal step', () => {
  it('are forgotten after a bounded number of steps, with one warning naming the behavior and the count', () => {
    const logger = memoryLogger();
    const processor = new AgentProcessor(SPEC, { behaviorId: 'Vanishing', stats: new RecordedStats(), logger });
    const worker = new Worker(processor, 0);
    // Agent 1 stays; at every step 20 new agents appear once and are never seen again.
    let nextId = 100;
    let most = 0;
    for (let t = 0; t < 500; t++) {
      const newcomers = Array.from({ length: 20 }, () => ({ id: nextId++, t }));
      worker.step([{ id: 1, t }, ...newcomers]);
      most = Math.max(most, processor.agentCount);
    }
    // Without forgetting, 10,000 agents would be held; now at most 125 steps' worth.
    expect(most).toBeLessThanOrEqual(1 + 20 * (FORGET_AFTER_STEPS + 25));
    expect(processor.agentCount).toBeLessThanOrEqual(1 + 20 * (FORGET_AFTER_STEPS + 25));
    const warnings = logger.lines.filter((line) => line.level === 'warning').map((line) => line.message);
    expect(warnings.length).toBeGreaterThan(0);
    // One line a sweep that forgets any, with the behavior and the count; no agent is lost track of.
    expect(warnings[0]).toMatch(/^Behavior Vanishing: forgot \d+ agents of environment 0 not seen for 100 steps without a terminal step/);
    const forgotten = warnings.reduce((sum, w) => sum + Number(/forgot (\d+) agents/.exec(w)![1]), 0);
    expect(forgotten + processor.agentCount).toBe(1 + 20 * 500);
  });

  it('keeps agents that decide less often, and the trajectories of those that come back in time', () => {
    const logger = memoryLogger();
    const queue = new AgentManagerQueue<Trajectory>('Slow');
    const processor = new AgentProcessor(SPEC, { behaviorId: 'Slow', stats: new RecordedStats(), logger });
    processor.publishTrajectoryQueue(queue);
    const worker = new Worker(processor, 0);
    for (let t = 0; t < 300; t++) {
      // Agent 2 asks for a decision every 50 steps only.
      worker.step(t % 50 === 0 ? [{ id: 1, t }, { id: 2, t }] : [{ id: 1, t }]);
    }
    worker.step([], [{ id: 2, t: 300 }]);
    expect(logger.lines.filter((line) => line.level === 'warning')).toEqual([]);
    const trajectories = queue.drain();
    expect(trajectories.map((t) => [t.agentId, t.steps.length, t.doneReached])).toEqual([['agent_0-2', 6, true]]);
  });
});

describe('AgentProcessor: memories of a recurrent policy', () => {
  /** The test policy with memory: an agent's memories after a decision on t are [worker, id, t]. */
  function decideWithMemory(steps: DecisionSteps): ActionInfo {
    return { ...decide(steps), memories: steps.obs[0].slice() };
  }

  it('hands each decision the memories the agent last left, zeros at an episode start, and records those each step started from', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 3 });
    const given: number[][] = [];
    let previous: ActionInfo = EMPTY_ACTION_INFO;
    const step = (decision: AgentAt[], terminal: AgentAt[] = []) => {
      const steps = decisionSteps(0, decision);
      processor.addExperiences(steps, terminalSteps(0, terminal), 0, previous);
      const memories = processor.memoriesOf(steps, 0, 3);
      given.push(Array.from(memories));
      previous = decideWithMemory(steps);
    };
    step([{ id: 4, t: 0 }, { id: 6, t: 0 }]);
    step([{ id: 4, t: 1 }, { id: 6, t: 1 }]);
    step([{ id: 4, t: 2 }]); // agent 6 skips a decision: it keeps its memories
    // Agent 4's episode ends at t = 3 and a new one starts under the same id.
    step([{ id: 4, t: 0 }, { id: 6, t: 3 }], [{ id: 4, t: 3 }]);
    step([{ id: 4, t: 1 }, { id: 6, t: 4 }]);

    expect(given).toEqual([
      [0, 0, 0, 0, 0, 0],
      [0, 4, 0, 0, 6, 0],
      [0, 4, 1],
      [0, 0, 0, 0, 6, 1],
      [0, 4, 0, 0, 6, 3],
    ]);
    const [ended, cut] = queue.drain();
    expect(ended.agentId).toBe('agent_0-4');
    expect(ended.doneReached).toBe(true);
    // The memories each of its decisions started from.
    expect(Array.from(ended.steps.memories!)).toEqual([0, 0, 0, 0, 4, 0, 0, 4, 1]);
    expect(Array.from(ended.toAgentBuffer().get(BufferKey.MEMORY).rows)).toEqual([0, 0, 0, 0, 4, 0, 0, 4, 1]);
    expect(cut.agentId).toBe('agent_0-6');
    expect(Array.from(cut.steps.memories!)).toEqual([0, 0, 0, 0, 6, 0, 0, 6, 1]);
  });

  it('keeps no memories column for a policy without memory', () => {
    const { processor, queue } = setup({ maxTrajectoryLength: 2 });
    const worker = new Worker(processor, 0);
    for (let t = 0; t < 3; t++) worker.step([{ id: 1, t }]);
    const [trajectory] = queue.drain();
    expect(trajectory.steps.memories).toBeUndefined();
    expect(trajectory.toAgentBuffer().has(BufferKey.MEMORY)).toBe(false);
  });
});
