/**
 * The Academy steps the world, as Unity's Academy.EnvironmentStep does, in this order:
 *   1. decision requests: an agent asks for a decision every `decisionPeriod` academy steps and,
 *      in between, repeats its last action (DecisionRequester);
 *   2. every agent's step count goes up;
 *   3. the agents that asked report their observations, reward and action mask;
 *   4. the brain (the trainer over gRPC, or the agents' heuristics) decides their actions;
 *   5. the agents act, the world advances one fixed step, and agents whose episode ended
 *      (EndEpisode, EpisodeInterrupted, MaxStep) report a terminal step and start again.
 * A terminal step is reported with the next message, beside the first decision of the agent's
 * next episode, under the same id, as Unity does.
 */
import { ActionBuffers, ActionMask, Agent, DoneReason, ObservationWriter, frameLength, observationLength } from './agent';
import { EngineConfigurationReceiver, EnvironmentParametersReceiver, StatsRecorder } from './engine-channels';
import { SeededRandom } from '../../common/random';

/** Unity's default fixed timestep: simulated seconds per academy step. */
export const FIXED_DELTA_TIME = 0.02;

/** The agents of one behavior that report at one step, as columns (terminal steps first). */
export class InfoBatch {
  count = 0;
  readonly agents: Agent[] = [];
  readonly id: Int32Array;
  readonly reward: Float32Array;
  readonly done: Uint8Array;
  readonly maxStepReached: Uint8Array;
  readonly groupId: Int32Array;
  readonly groupReward: Float32Array;
  readonly actionMaskSize: number;
  /** count x actionMaskSize; 1 where the action is not available. */
  readonly actionMask: Uint8Array;
  /** One buffer per observation, count x its length. */
  readonly observations: Float32Array[];
  /** The actions each agent took last (Unity's storedActions), for demonstrations. */
  readonly storedContinuous: Float32Array;
  readonly storedDiscrete: Int32Array;

  constructor(readonly group: BehaviorGroup) {
    const capacity = 2 * Math.max(1, group.agents.length); // a terminal and a decision per agent
    this.id = new Int32Array(capacity);
    this.reward = new Float32Array(capacity);
    this.done = new Uint8Array(capacity);
    this.maxStepReached = new Uint8Array(capacity);
    this.groupId = new Int32Array(capacity);
    this.groupReward = new Float32Array(capacity);
    this.actionMaskSize = group.mask.masked.length;
    this.actionMask = new Uint8Array(capacity * this.actionMaskSize);
    this.observations = group.template.behavior.observations.map((spec) => new Float32Array(capacity * observationLength(spec)));
    this.storedContinuous = new Float32Array(capacity * group.continuousSize);
    this.storedDiscrete = new Int32Array(capacity * group.discreteSize);
  }

  /** Agents of this batch that ask for a decision, in order: the rows the trainer's actions follow. */
  decidingAgents(): Agent[] {
    const out: Agent[] = [];
    for (let i = 0; i < this.count; i++) if (!this.done[i]) out.push(this.agents[i]);
    return out;
  }

  clear(): void {
    this.count = 0;
    this.agents.length = 0;
  }
}

/** The agents that share a behavior name, and their working buffers. */
export class BehaviorGroup {
  readonly agents: Agent[] = [];
  readonly writers: ObservationWriter[];
  readonly mask: ActionMask;
  readonly continuousSize: number;
  readonly discreteSize: number;
  pending: InfoBatch;
  /** Whether the trainer has been told of this behavior (brain parameters sent). */
  announced = false;

  constructor(readonly name: string, readonly template: Agent) {
    const behavior = template.behavior;
    this.writers = behavior.observations.map((o) => new ObservationWriter(new Float32Array(frameLength(o))));
    this.mask = new ActionMask(behavior.discreteBranches);
    this.continuousSize = behavior.continuousActions;
    this.discreteSize = behavior.discreteBranches.length;
    this.pending = new InfoBatch(this);
  }

  /** Rebuilds the batch buffers after agents were added. */
  resize(): void {
    this.pending = new InfoBatch(this);
  }
}

/** Decides the actions of the agents that asked: the trainer, or the agents' own heuristics. */
export interface Brain {
  decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision>;
}

/** Per behavior, one row of actions per deciding agent of its batch. */
export type ActionsByBehavior = ReadonlyMap<string, { continuous: Float32Array; discrete: Int32Array }>;

export type Decision = { kind: 'actions'; actions: ActionsByBehavior } | { kind: 'reset' } | { kind: 'quit' };

/** Per-agent state the Academy keeps beside the Agent. */
interface AgentState {
  readonly group: BehaviorGroup;
  readonly action: ActionBuffers;
  /** Per observation, its stacked frames oldest first (a stacked camera's); null when not stacked. */
  readonly stacks: ReadonlyArray<Float32Array | null>;
  requestDecision: boolean;
  requestAction: boolean;
}

export class Academy {
  /** The world's random source: seeded from the trainer's seed at the handshake. */
  readonly random = new SeededRandom(0);
  readonly engineConfiguration = new EngineConfigurationReceiver();
  readonly environmentParameters = new EnvironmentParametersReceiver();
  readonly stats = new StatsRecorder();
  /** Academy steps since the last reset. */
  stepCount = 0;
  totalStepCount = 0;
  /** Advances the world one fixed step after the agents acted (physics), if the world has any. */
  onWorldStep: ((deltaTime: number) => void) | undefined;
  /** Called when the trainer resets the environment, before the agents' episodes begin. */
  onReset: (() => void) | undefined;

  private readonly groups = new Map<string, BehaviorGroup>();
  private readonly states = new Map<Agent, AgentState>();
  private nextAgentId = 1;
  /** Listeners that see every batch just before the brain decides (demonstration recording). */
  private readonly batchListeners: Array<(batches: ReadonlyMap<string, InfoBatch>) => void> = [];

  constructor(readonly deltaTime: number = FIXED_DELTA_TIME) {}

  /** Adds an agent; agents of one behavior name must have the same observations and actions. */
  addAgent(agent: Agent): void {
    const name = agent.behavior.behaviorName;
    let group = this.groups.get(name);
    if (group === undefined) {
      group = new BehaviorGroup(name, agent);
      this.groups.set(name, group);
    } else if (!sameSpecs(group.template, agent)) {
      throw new Error(`Agents of behavior ${name} must all have the same observations and actions.`);
    }
    group.agents.push(agent);
    group.resize();
    agent.id = this.nextAgentId++;
    agent.random = this.random;
    this.states.set(agent, {
      group,
      action: new ActionBuffers(group.continuousSize, group.discreteSize),
      stacks: agent.behavior.observations.map((spec) => (observationLength(spec) > frameLength(spec) ? new Float32Array(observationLength(spec)) : null)),
      requestDecision: false,
      requestAction: false,
    });
    agent.initialize();
  }

  get behaviors(): ReadonlyMap<string, BehaviorGroup> {
    return this.groups;
  }

  get agents(): Agent[] {
    return [...this.states.keys()];
  }

  /** Reseeds the world (the trainer's seed arrives with the handshake). */
  seed(seed: number): void {
    this.random.reseed(seed);
  }

  addBatchListener(listener: (batches: ReadonlyMap<string, InfoBatch>) => void): void {
    this.batchListeners.push(listener);
  }

  /** Starts every agent's episode anew, without terminal steps (the trainer's RESET). */
  reset(): void {
    this.stepCount = 0;
    this.onReset?.();
    for (const [agent, state] of this.states) {
      state.requestAction = false;
      state.requestDecision = false;
      state.action.clear();
      clearStacks(state);
      agent.beginEpisode(false);
    }
    for (const group of this.groups.values()) group.pending.clear();
  }

  /** One environment step. Returns what the brain said when it did not give actions. */
  async step(brain: Brain): Promise<'stepped' | 'reset' | 'quit'> {
    for (const [agent, state] of this.states) {
      const behavior = agent.behavior;
      if (this.stepCount % (behavior.decisionPeriod ?? 1) === 0) {
        state.requestDecision = true;
        state.requestAction = true;
      } else if (behavior.takeActionsBetweenDecisions ?? true) {
        state.requestAction = true;
      }
    }
    this.stepCount += 1;
    this.totalStepCount += 1;
    for (const agent of this.states.keys()) agent.incrementStep();

    for (const [agent, state] of this.states) {
      if (state.requestDecision) {
        this.report(agent, state, false, false);
        state.requestDecision = false;
      }
    }

    // As Unity's communicator, ask the brain only at steps where some agent reported: with a
    // decision period of 5, the trainer hears from the environment every fifth step.
    if ([...this.groups.values()].some((group) => group.pending.count > 0)) {
      const outcome = await this.decide(brain);
      if (outcome !== 'stepped') return outcome;
    }

    for (const [agent, state] of this.states) {
      if (state.requestAction) {
        state.requestAction = false;
        agent.onActionReceived(state.action);
      }
    }
    this.onWorldStep?.(this.deltaTime);
    for (const [agent, state] of this.states) {
      const maxStep = agent.behavior.maxStep ?? 0;
      let reason = agent.endRequest;
      if (reason === null && maxStep > 0 && agent.stepCount >= maxStep) reason = DoneReason.MaxStepReached;
      if (reason !== null) {
        this.report(agent, state, true, reason === DoneReason.MaxStepReached);
        state.requestDecision = false;
        state.requestAction = false;
        state.action.clear();
        clearStacks(state);
        agent.beginEpisode(true);
      }
    }
    return 'stepped';
  }

  private async decide(brain: Brain): Promise<'stepped' | 'reset' | 'quit'> {
    const batches = new Map<string, InfoBatch>();
    for (const [name, group] of this.groups) batches.set(name, group.pending);
    for (const listener of this.batchListeners) listener(batches);
    const decision = await brain.decide(batches);
    if (decision.kind !== 'actions') {
      for (const group of this.groups.values()) group.pending.clear();
      if (decision.kind === 'reset') this.reset();
      return decision.kind;
    }
    for (const [name, group] of this.groups) {
      this.storeActions(group, decision.actions.get(name));
      group.pending.clear();
    }
    return 'stepped';
  }

  /** Writes the agent's observations, mask and reward as a row of its behavior's pending batch. */
  private report(agent: Agent, state: AgentState, done: boolean, maxStepReached: boolean): void {
    const group = state.group;
    const batch = group.pending;
    const row = batch.count++;
    batch.agents.push(agent);
    const { reward, groupReward } = agent.takeReward();
    batch.id[row] = agent.id;
    batch.reward[row] = reward;
    batch.done[row] = done ? 1 : 0;
    batch.maxStepReached[row] = maxStepReached ? 1 : 0;
    batch.groupId[row] = agent.groupId;
    batch.groupReward[row] = groupReward;
    group.writers.forEach((writer, i) => {
      writer.reset();
      agent.collectObservations(i, writer);
      const stack = state.stacks[i];
      if (stack === null) {
        batch.observations[i].set(writer.values, row * writer.values.length);
        return;
      }
      // As Unity's StackingSensor: the oldest frame leaves, the new one comes last.
      const frame = writer.values.length;
      stack.copyWithin(0, frame);
      stack.set(writer.values, stack.length - frame);
      batch.observations[i].set(stack, row * stack.length);
    });
    if (batch.actionMaskSize > 0) {
      group.mask.clear();
      if (!done) agent.writeDiscreteActionMask(group.mask);
      batch.actionMask.set(group.mask.masked, row * batch.actionMaskSize);
    }
    batch.storedContinuous.set(state.action.continuous, row * group.continuousSize);
    batch.storedDiscrete.set(state.action.discrete, row * group.discreteSize);
  }

  private storeActions(group: BehaviorGroup, actions: { continuous: Float32Array; discrete: Int32Array } | undefined): void {
    const batch = group.pending;
    let decisionRow = 0;
    for (let i = 0; i < batch.count; i++) {
      if (batch.done[i]) continue;
      const state = this.states.get(batch.agents[i])!;
      const c = group.continuousSize;
      const d = group.discreteSize;
      if (actions === undefined) {
        state.action.clear();
      } else {
        state.action.continuous.set(actions.continuous.subarray(decisionRow * c, (decisionRow + 1) * c));
        state.action.discrete.set(actions.discrete.subarray(decisionRow * d, (decisionRow + 1) * d));
      }
      decisionRow += 1;
    }
  }
}

/** A new episode starts with empty stacks (Unity resets its sensors with the agent). */
function clearStacks(state: AgentState): void {
  for (const stack of state.stacks) stack?.fill(0);
}

function sameSpecs(a: Agent, b: Agent): boolean {
  return JSON.stringify([a.behavior.observations, a.behavior.continuousActions, a.behavior.discreteBranches]) ===
    JSON.stringify([b.behavior.observations, b.behavior.continuousActions, b.behavior.discreteBranches]);
}
