/**
 * Turns the steps of one behavior into trajectories (upstream's agent_processor.py).
 *
 * Each call to addExperiences brings the steps that followed the previous decision, together with
 * that decision. For every agent that acted, the processor pairs the observation it acted on with
 * the action it took and the reward that followed, and appends that experience to the agent's
 * trajectory. A trajectory goes to the trainers' queues when it reaches time_horizon steps or when
 * the agent's episode ends. Agents are told apart across environment workers by a global id.
 *
 * An agent normally leaves with a terminal step (Unity sends one even for an agent that is
 * disabled or destroyed). One that simply stops appearing would keep its state forever, so the
 * state of agents not seen for FORGET_AFTER_STEPS steps of their worker is dropped, with a warning.
 */
import { EnvironmentStats, StatsAggregationMethod } from '../communicator/side-channels/stats-side-channel';
import { BehaviorSpec } from '../env/behavior-spec';
import { DecisionSteps, TerminalSteps, allowedActions } from '../env/steps';
import { ActionInfo } from './action-info';
import { AgentManagerQueue } from './agent-manager-queue';
import { BufferColumn } from './buffer';
import { Logger, consoleLogger } from '../common/logger';
import { StatsSink } from './stats-sink';
import { ExperienceColumns, GroupmateStatus, Trajectory } from './trajectory';

/**
 * Steps of its worker after which an agent that has not appeared is forgotten. Far more than the
 * gaps of agents that decide less often than others (Unity's decision periods go up to 20 steps).
 */
export const FORGET_AFTER_STEPS = 100;
/** How often, in steps of a worker, its agents are looked over: memory stays within 125 steps' worth. */
const FORGET_CHECK_EVERY_STEPS = 25;

/** An agent id unique across environment workers (upstream's get_global_agent_id). */
export function globalAgentId(workerId: number, agentId: number): string {
  return `agent_${workerId}-${agentId}`;
}

/** A group id unique across environment workers (upstream's get_global_group_id). */
export function globalGroupId(workerId: number, groupId: number): string {
  return `group_${workerId}-${groupId}`;
}

export interface AgentProcessorOptions {
  /** The behavior's name; every trajectory carries it. */
  behaviorId: string;
  stats: StatsSink;
  /** time_horizon: a trajectory is cut when it holds this many steps. Default: only at episode ends. */
  maxTrajectoryLength?: number;
  /** Where the warning about forgotten agents goes. */
  logger?: Logger;
}

export class AgentProcessor {
  private readonly agents = new Map<string, AgentRecord>();
  /** The latest status of each member of each group, for its groupmates' experiences. */
  private readonly groupStatus = new Map<string, Map<string, GroupmateStatus>>();
  /** The latest observation of each member of each group, for its groupmates' next observations. */
  private readonly currentGroupObs = new Map<string, Map<string, readonly Float32Array[]>>();
  private readonly trajectoryQueues: AgentManagerQueue<Trajectory>[] = [];
  private readonly behaviorId: string;
  protected readonly stats: StatsSink;
  private readonly maxTrajectoryLength: number;
  private readonly logger: Logger;
  /** Steps taken in by each worker so far. */
  private readonly workerSteps = new Map<number, number>();

  constructor(
    /** The behavior's specification its trainer was built for. */
    readonly spec: BehaviorSpec,
    options: AgentProcessorOptions,
  ) {
    this.behaviorId = options.behaviorId;
    this.stats = options.stats;
    this.maxTrajectoryLength = options.maxTrajectoryLength ?? Infinity;
    this.logger = options.logger ?? consoleLogger();
  }

  /** Every trajectory made from now on is also put in `queue`. */
  publishTrajectoryQueue(queue: AgentManagerQueue<Trajectory>): void {
    this.trajectoryQueues.push(queue);
  }

  /**
   * Takes in one step of one worker: the agents that ask for a decision, those whose episode ended
   * (an agent may be in both, ending one episode and starting the next under the same id), and the
   * decision that was taken on this worker's previous decision steps.
   * The arrays of `previousDecision` and of the steps must not be reused by their producers: the
   * processor keeps them until the agents' next step.
   */
  addExperiences(
    decisionSteps: DecisionSteps,
    terminalSteps: TerminalSteps,
    workerId: number,
    previousDecision: ActionInfo,
  ): void {
    this.checkDecision(previousDecision);
    const step = (this.workerSteps.get(workerId) ?? 0) + 1;
    this.workerSteps.set(workerId, step);
    if (previousDecision.entropy !== undefined) {
      for (const entropy of previousDecision.entropy) this.stats.addStat('Policy/Entropy', entropy);
    }
    previousDecision.agentIds.forEach((localId, row) => {
      const record = this.agents.get(globalAgentId(workerId, localId));
      // An agent whose episode just ended has no record, or one without a step: nothing to attach.
      if (record?.lastStep !== undefined) record.lastAction = { info: previousDecision, row };
    });

    // Every status of this step first, so that each groupmate's experience sees every other's.
    // Upstream adds the decision steps' statuses only after processing the terminal ones: an agent
    // that leaves at its episode's first step then sees no groupmate, which counts as its whole
    // group having ended (no bootstrap, and its reward reported as a group episode's). An agent
    // that both ended and starts again keeps its terminal status.
    const ended = new Set(terminalSteps.agentId);
    for (let row = 0; row < terminalSteps.length; row++) this.addGroupStatusAndObs(terminalSteps, row, workerId, true);
    for (let row = 0; row < decisionSteps.length; row++) {
      if (!ended.has(decisionSteps.agentId[row])) this.addGroupStatusAndObs(decisionSteps, row, workerId, false);
    }
    for (let row = 0; row < terminalSteps.length; row++) this.processStep(terminalSteps, row, workerId, true, step);
    for (let row = 0; row < decisionSteps.length; row++) this.processStep(decisionSteps, row, workerId, false, step);
    // Only now, so that the groupmates still alive saw the ended agents' last status.
    for (let row = 0; row < terminalSteps.length; row++) {
      this.clearGroupStatusAndObs(new Set([globalAgentId(workerId, terminalSteps.agentId[row])]));
    }
    if (step % FORGET_CHECK_EVERY_STEPS === 0) this.forgetVanishedAgents(workerId, step);
  }

  /** Drops the state of the worker's agents that have not appeared for FORGET_AFTER_STEPS steps. */
  private forgetVanishedAgents(workerId: number, step: number): void {
    const vanished = new Set<string>();
    for (const [agentId, record] of this.agents) {
      if (record.workerId === workerId && step - record.lastSeenStep >= FORGET_AFTER_STEPS) vanished.add(agentId);
    }
    if (vanished.size === 0) return;
    for (const agentId of vanished) this.agents.delete(agentId);
    this.clearGroupStatusAndObs(vanished);
    this.logger.warning(
      `Behavior ${this.behaviorId}: forgot ${vanished.size} agent${vanished.size === 1 ? '' : 's'} of ` +
        `environment ${workerId} not seen for ${FORGET_AFTER_STEPS} steps without a terminal step; their ` +
        `unfinished trajectories are dropped. An agent that leaves should end its episode (EndEpisode), ` +
        `which Unity does for agents that are disabled or destroyed.`,
    );
  }

  /**
   * Forgets every agent's unfinished trajectory and episode (upstream's end_episode), as when the
   * environment is reset from the trainer's side.
   */
  endEpisode(): void {
    this.agents.clear();
    this.groupStatus.clear();
    this.currentGroupObs.clear();
  }

  /**
   * With a policy of memory: each agent's memories for its decision on `steps` (n x size), those
   * its last decision left, zeros for an agent that starts its episode (upstream's
   * retrieve_memories).
   */
  memoriesOf(steps: DecisionSteps, workerId: number, size: number): Float32Array {
    const memories = new Float32Array(steps.length * size);
    for (let row = 0; row < steps.length; row++) {
      const kept = this.agents.get(globalAgentId(workerId, steps.agentId[row]))?.memories;
      if (kept !== null && kept !== undefined) memories.set(kept, row * size);
    }
    return memories;
  }

  /** The number of agents the processor holds data for. */
  get agentCount(): number {
    return this.agents.size;
  }

  private processStep(
    steps: DecisionSteps | TerminalSteps,
    row: number,
    workerId: number,
    terminated: boolean,
    step: number,
  ): void {
    const agentId = globalAgentId(workerId, steps.agentId[row]);
    let record = this.agents.get(agentId);
    const seen = record?.lastStep;
    const acted = record?.lastAction;
    if (!terminated) {
      if (record === undefined) {
        record = new AgentRecord(this.spec, workerId);
        this.agents.set(agentId, record);
      }
      record.lastStep = { steps: steps as DecisionSteps, row };
      record.lastSeenStep = step;
    }
    if (record === undefined || seen === undefined || acted === undefined) {
      // Nothing was decided on what this agent saw before: this step starts its experience.
      if (terminated) this.agents.delete(agentId);
      return;
    }

    const groupKey = globalGroupId(workerId, steps.groupId[row]);
    const groupmates = othersIn(this.groupStatus.get(groupKey), agentId);
    const interrupted = terminated && (steps as TerminalSteps).interrupted[row] === 1;
    // The experience keeps the memories the decision started from; the next decision starts from those it left.
    const memoriesAfter = acted.info.memories;
    const memorySize = memoriesAfter === undefined ? 0 : memoriesAfter.length / acted.info.agentIds.length;
    const memoriesBefore = memorySize === 0 ? null : (record.memories ?? new Float32Array(memorySize));
    record.experiences.record(seen, acted, steps.reward[row], steps.groupReward[row], record.prevAction, groupmates, memoriesBefore);
    record.memories = memorySize === 0 ? null : rowOf(memoriesAfter!, acted.row, memorySize);
    record.prevAction = rowOf(acted.info.action.discrete, acted.row, this.spec.actionSpec.discreteSize);
    // A decision belongs to the step it was taken on: never pair it with a later one.
    record.lastAction = undefined;
    record.episodeReward += steps.reward[row];
    if (!terminated) record.episodeSteps++;

    if (terminated || record.experiences.length >= this.maxTrajectoryLength) {
      const trajectory = new Trajectory({
        agentId,
        behaviorId: this.behaviorId,
        steps: record.experiences.take(),
        nextObs: observationsOf(steps, row),
        nextGroupObs: othersIn(this.currentGroupObs.get(groupKey), agentId),
        doneReached: terminated,
        interrupted,
      });
      for (const queue of this.trajectoryQueues) queue.put(trajectory);
    }
    if (terminated) {
      // As upstream, the episode length counts the steps that asked for a decision after the first.
      this.stats.addStat('Environment/Episode Length', record.episodeSteps);
      this.stats.addStat('Environment/Cumulative Reward', record.episodeReward, StatsAggregationMethod.HISTOGRAM);
      this.agents.delete(agentId);
    }
  }

  private addGroupStatusAndObs(
    steps: DecisionSteps | TerminalSteps,
    row: number,
    workerId: number,
    terminated: boolean,
  ): void {
    const groupId = steps.groupId[row];
    if (groupId <= 0) return; // 0: the agent is in no group.
    const agentId = globalAgentId(workerId, steps.agentId[row]);
    const record = this.agents.get(agentId);
    const seen = record?.lastStep;
    const acted = record?.lastAction;
    if (seen === undefined || acted === undefined) return;
    const { continuousSize, discreteSize } = this.spec.actionSpec;
    const groupKey = globalGroupId(workerId, groupId);
    inner(this.groupStatus, groupKey).set(agentId, {
      obs: observationsOf(seen.steps, seen.row),
      reward: steps.reward[row],
      continuousAction: rowOf(acted.info.action.continuous, acted.row, continuousSize),
      discreteAction: rowOf(acted.info.action.discrete, acted.row, discreteSize),
      done: terminated,
    });
    inner(this.currentGroupObs, groupKey).set(agentId, observationsOf(steps, row));
  }

  private clearGroupStatusAndObs(agentIds: ReadonlySet<string>): void {
    for (const groups of [this.groupStatus, this.currentGroupObs] as Map<string, Map<string, unknown>>[]) {
      for (const [groupKey, members] of groups) {
        for (const agentId of agentIds) members.delete(agentId);
        if (members.size === 0) groups.delete(groupKey);
      }
    }
  }

  /** A decision whose arrays do not fit its agents would silently mix agents' rows: refuse it. */
  private checkDecision(decision: ActionInfo): void {
    const n = decision.agentIds.length;
    const { continuousSize, discreteSize } = this.spec.actionSpec;
    const sizes: Array<[string, number, number]> = [
      ['action.continuous', decision.action.continuous.length, n * continuousSize],
      ['action.discrete', decision.action.discrete.length, n * discreteSize],
      ['logProbs.continuous', decision.logProbs.continuous.length, n * continuousSize],
      ['logProbs.discrete', decision.logProbs.discrete.length, n * discreteSize],
    ];
    for (const [name, got, expected] of sizes) {
      if (got !== expected) {
        throw new Error(
          `The decision for behavior ${this.behaviorId} has ${got} values in ${name}; its ${n} agents ` +
            `and ${this.spec.actionSpec} need ${expected}.`,
        );
      }
    }
  }
}

/**
 * An agent processor that owns one trajectory queue, which its trainer reads, and one policy queue,
 * through which the trainer sends back each updated policy (upstream's AgentManager).
 */
export class AgentManager<Policy> extends AgentProcessor {
  readonly trajectoryQueue: AgentManagerQueue<Trajectory>;
  readonly policyQueue: AgentManagerQueue<Policy>;

  constructor(spec: BehaviorSpec, options: AgentProcessorOptions & { threaded?: boolean }) {
    super(spec, options);
    // A trainer in its own thread may fall behind; at 20 waiting trajectories the acting side waits.
    const threaded = options.threaded ?? true;
    this.trajectoryQueue = new AgentManagerQueue(options.behaviorId, threaded ? 20 : 0);
    this.policyQueue = new AgentManagerQueue(options.behaviorId, 0);
    this.publishTrajectoryQueue(this.trajectoryQueue);
  }

  /**
   * Passes on the stats the environment sent through its stats side channel. MOST_RECENT stats are
   * taken from worker 0 only, so that several environments do not overwrite one another.
   */
  recordEnvironmentStats(environmentStats: EnvironmentStats, workerId: number): void {
    for (const [key, values] of environmentStats) {
      for (const [value, aggregation] of values) {
        if (aggregation === StatsAggregationMethod.MOST_RECENT) {
          if (workerId === 0) this.stats.setStat(key, value);
        } else {
          this.stats.addStat(key, value, aggregation);
        }
      }
    }
  }
}

/** One agent during one episode. */
class AgentRecord {
  /** The decision step the agent was last seen at, and its row there. */
  lastStep: { steps: DecisionSteps; row: number } | undefined;
  /** The decision taken on that step, and the agent's row in it. */
  lastAction: { info: ActionInfo; row: number } | undefined;
  readonly experiences: ExperienceRecorder;
  /** The discrete action taken before the latest observation. */
  prevAction: Int32Array;
  /** With memory: the memories the agent's last decision left; null before its first. */
  memories: Float32Array | null = null;
  episodeSteps = 0;
  episodeReward = 0;
  /** The step of its worker at which the agent last asked for a decision. */
  lastSeenStep = 0;

  constructor(
    spec: BehaviorSpec,
    readonly workerId: number,
  ) {
    this.experiences = new ExperienceRecorder(spec);
    this.prevAction = new Int32Array(spec.actionSpec.discreteSize);
  }
}

/** The unfinished trajectory of one agent, as growing columns. */
class ExperienceRecorder {
  private readonly obs: BufferColumn[];
  private readonly continuousActions = new BufferColumn('continuous actions');
  private readonly discreteActions = new BufferColumn('discrete actions');
  private readonly continuousLogProbs = new BufferColumn('continuous log probs');
  private readonly discreteLogProbs = new BufferColumn('discrete log probs');
  private readonly actionMasks = new BufferColumn('action masks');
  private readonly prevActions = new BufferColumn('previous actions');
  private readonly rewards = new BufferColumn('rewards');
  private readonly groupRewards = new BufferColumn('group rewards');
  private readonly memories = new BufferColumn('memories');
  private groupStatuses: (readonly GroupmateStatus[])[] = [];
  private readonly maskRow: Float32Array;

  constructor(private readonly spec: BehaviorSpec) {
    this.obs = spec.observationSpecs.map((_, i) => new BufferColumn(`observation ${i}`));
    this.maskRow = new Float32Array(spec.actionSpec.discreteBranches.reduce((a, b) => a + b, 0));
  }

  get length(): number {
    return this.rewards.length;
  }

  /** Appends the experience of acting on `seen` with `acted` and getting `reward`. */
  record(
    seen: { steps: DecisionSteps; row: number },
    acted: { info: ActionInfo; row: number },
    reward: number,
    groupReward: number,
    prevAction: Int32Array,
    groupmates: readonly GroupmateStatus[],
    memories: Float32Array | null,
  ): void {
    const { continuousSize, discreteSize } = this.spec.actionSpec;
    this.obs.forEach((column, i) => column.append(seen.steps.observation(i, seen.row)));
    const { action, logProbs } = acted.info;
    this.continuousActions.append(rowOf(action.continuous, acted.row, continuousSize));
    this.discreteActions.append(rowOf(action.discrete, acted.row, discreteSize));
    this.continuousLogProbs.append(rowOf(logProbs.continuous, acted.row, continuousSize));
    this.discreteLogProbs.append(rowOf(logProbs.discrete, acted.row, discreteSize));
    this.actionMasks.append(allowedActions(seen.steps.actionMask, 1, this.spec.actionSpec.discreteBranches, seen.row, this.maskRow));
    this.prevActions.append(prevAction);
    this.rewards.append(reward);
    this.groupRewards.append(groupReward);
    if (memories !== null) this.memories.append(memories);
    this.groupStatuses.push(groupmates);
  }

  /** Hands the rows over as a trajectory's steps and starts empty. */
  take(): ExperienceColumns {
    const steps: ExperienceColumns = {
      length: this.length,
      obs: this.obs.map((column) => column.rows.slice()),
      continuousActions: this.continuousActions.rows.slice(),
      discreteActions: Int32Array.from(this.discreteActions.rows),
      continuousLogProbs: this.continuousLogProbs.rows.slice(),
      discreteLogProbs: this.discreteLogProbs.rows.slice(),
      actionMasks: this.actionMasks.rows.slice(),
      prevActions: Int32Array.from(this.prevActions.rows),
      rewards: this.rewards.rows.slice(),
      groupRewards: this.groupRewards.rows.slice(),
      groupStatuses: this.groupStatuses,
      ...(this.memories.length === 0 ? {} : { memories: this.memories.rows.slice() }),
    };
    for (const column of [
      ...this.obs,
      this.continuousActions,
      this.discreteActions,
      this.continuousLogProbs,
      this.discreteLogProbs,
      this.actionMasks,
      this.prevActions,
      this.rewards,
      this.groupRewards,
      this.memories,
    ]) {
      column.clear();
    }
    this.groupStatuses = [];
    return steps;
  }

}

function rowOf<T extends Float32Array | Int32Array>(all: T, row: number, width: number): T {
  return all.subarray(row * width, (row + 1) * width) as T;
}

function observationsOf(steps: DecisionSteps | TerminalSteps, row: number): Float32Array[] {
  return steps.obs.map((_, i) => steps.observation(i, row));
}

/** The values of `members` other than `agentId`'s, in insertion order; empty without members. */
function othersIn<T>(members: Map<string, T> | undefined, agentId: string): T[] {
  const others: T[] = [];
  if (members === undefined) return others;
  for (const [id, value] of members) if (id !== agentId) others.push(value);
  return others;
}

function inner<T>(outer: Map<string, Map<string, T>>, key: string): Map<string, T> {
  let map = outer.get(key);
  if (map === undefined) {
    map = new Map();
    outer.set(key, map);
  }
  return map;
}
