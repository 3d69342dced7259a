#!/usr/bin/env node
/**
 * SimpleGoal, the environments of ML-Agents' own trainer test suite
 * (ml-agents/mlagents/trainers/tests/simple_test_envs.py: SimpleEnvironment, MemoryEnvironment,
 * MultiAgentEnvironment), played over gRPC as a Unity build is, so that the success thresholds of
 * upstream's test_simple_rl.py hold unchanged here.
 *
 * The game: an agent has one position in [-1, 1] per action (continuous actions first, then
 * discrete branches of 2), all starting at 0, and a goal of -1 or +1 drawn at each episode start
 * from upstream's own random stream (UpstreamGoals: the same goals whatever the training seed).
 * Every observation is filled with the goal value: vector ones, images (every pixel) and
 * variable-length ones (every value of every entity, so none is padding), as upstream's _make_obs. A continuous action moves its position by the
 * action clamped to [-step size, step size]; a discrete choice 1 moves by +step size, 0 by
 * -step size. The episode ends when every position is at -1 or +1 and pays
 * SUCCESS_REWARD * position * goal / positions, summed over the positions; every other step
 * costs TIME_PENALTY. No maximum step: upstream has none.
 *
 * Variants: --memory shows the goal for the first steps only (MemoryEnvironment); --group puts
 * the agents of a training area in one group (MultiAgentEnvironment): an agent that finishes
 * first stops asking for decisions and waits for the others, and the last one to finish brings
 * the group reward (the waiting ones listed after it then repeat their last action once, as in
 * upstream's loop).
 */
import { Academy } from '../sdk/academy';
import { ActionBuffers, Agent, ObservationSpecDef, ObservationWriter, PausableBehavior } from '../sdk/agent';
import { PythonRandom, pythonFloatRepr, pythonStringListRepr, pythonTupleRepr } from '../../common/python-random';
import {
  SimDefinition,
  SimOptionValues,
  asksForHelp,
  intOption,
  numberOption,
  parseSimArgs,
  runEnvironmentMain,
} from '../sdk/run-environment';

// Upstream's constants, with the same names and formulas.
export const OBS_SIZE = 1;
/**
 * The default image shape, channel-first as upstream's newest VIS_OBS_SIZE (3, 20, 20) and
 * com.unity.ml-agents 2+ images; upstream's tests also build (3, 36, 36) and (5, 5, 5).
 */
export const VIS_OBS_SIZE: readonly [number, number, number] = [3, 20, 20];
/** Upstream's VAR_LEN_SIZE: [max entities, entity size] of each variable-length observation. */
export const VAR_LEN_SIZE: readonly [number, number] = [10, 5];
export const STEP_SIZE = 0.2;
export const TIME_PENALTY = 0.01;
export const MIN_STEPS = Math.trunc(1.0 / STEP_SIZE) + 1;
export const SUCCESS_REWARD = 1.0 + MIN_STEPS * TIME_PENALTY;
/** MemoryEnvironment's num_show_steps: the goal shows while upstream's step count is at most this. */
export const NUM_SHOW_STEPS = 2;
/** The behavior name of upstream's test_simple_rl.py (BRAIN_NAME). */
export const DEFAULT_BEHAVIOR_NAME = '1D';
/** MultiAgentEnvironment's num_agents default. */
export const DEFAULT_GROUP_SIZE = 2;

/** ObservationType.GOAL_SIGNAL on the wire. */
const GOAL_SIGNAL = 1;

export interface SimpleGoalConfig {
  /** One set of agents per name (upstream's brain_names; '1D?team=0,1D?team=1' for self-play). */
  readonly behaviorNames: readonly string[];
  readonly continuousActions: number;
  /** Discrete branches, each of 2 choices. */
  readonly discreteBranches: number;
  readonly numVector: number;
  readonly numVisual: number;
  /** [channels, height, width] of every visual observation (upstream's vis_obs_size). */
  readonly visObsSize: readonly [number, number, number];
  /** Variable-length observations (upstream's num_var_len), after the visual ones. */
  readonly numVarLen: number;
  /** [max entities, entity size] of each (upstream's var_len_obs_size). */
  readonly varLenObsSize: readonly [number, number];
  readonly stepSize: number;
  readonly memory: boolean;
  readonly group: boolean;
  /** Agents per training area and behavior name (the group size with --group). */
  readonly agents: number;
  /** Observations sent as goal signals (upstream's goal_indices). */
  readonly goalIndices: readonly number[];
}

/** Reads and checks the options; the errors say what to change. */
export function readSimpleGoalConfig(options: SimOptionValues): SimpleGoalConfig {
  const group = options.group === true;
  const config: SimpleGoalConfig = {
    behaviorNames: String(options['behavior-name'] ?? DEFAULT_BEHAVIOR_NAME)
      .split(',')
      .map((name) => name.trim()),
    continuousActions: intOption(options, 'continuous'),
    discreteBranches: intOption(options, 'discrete'),
    numVector: intOption(options, 'num-vector'),
    numVisual: intOption(options, 'num-visual'),
    visObsSize: parseVisObsSize(options['vis-obs-size']),
    numVarLen: intOption(options, 'num-var-len'),
    varLenObsSize: parseVarLenObsSize(options['var-len-obs-size']),
    stepSize: numberOption(options, 'step-size'),
    memory: options.memory === true,
    group,
    agents: options.agents === undefined ? (group ? DEFAULT_GROUP_SIZE : 1) : intOption(options, 'agents'),
    goalIndices: parseGoalIndices(options['goal-indices']),
  };
  checkConfig(config);
  return config;
}

/**
 * `--vis-obs-size CxHxW`: channels, height and width, three whole numbers of at least 1. The
 * images travel as raw floats, so any channel count is fine (upstream's tests use 5).
 */
export function parseVisObsSize(raw: string | boolean | undefined): [number, number, number] {
  if (raw === undefined) return [...VIS_OBS_SIZE];
  const match = typeof raw === 'string' ? /^\s*(\d+)\s*x\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(raw) : null;
  const size = match === null ? [] : match.slice(1).map(Number);
  if (size.length !== 3 || size.some((n) => !Number.isSafeInteger(n) || n < 1)) {
    throw new Error(
      `--vis-obs-size needs CHANNELSxHEIGHTxWIDTH, three whole numbers of at least 1, channel-first ` +
        `(upstream's default ${VIS_OBS_SIZE.join('x')}; its tests also use 3x36x36 and 5x5x5), got ${JSON.stringify(raw)}.`,
    );
  }
  return [size[0], size[1], size[2]];
}

/** `--var-len-obs-size ENTITIESxSIZE`: two whole numbers of at least 1. */
export function parseVarLenObsSize(raw: string | boolean | undefined): [number, number] {
  if (raw === undefined) return [...VAR_LEN_SIZE];
  const match = typeof raw === 'string' ? /^\s*(\d+)\s*x\s*(\d+)\s*$/i.exec(raw) : null;
  const size = match === null ? [] : match.slice(1).map(Number);
  if (size.length !== 2 || size.some((n) => !Number.isSafeInteger(n) || n < 1)) {
    throw new Error(
      `--var-len-obs-size needs ENTITIESxSIZE, the most entities and each one's values, two whole numbers of at ` +
        `least 1 (upstream's default ${VAR_LEN_SIZE.join('x')}), got ${JSON.stringify(raw)}.`,
    );
  }
  return [size[0], size[1]];
}

function parseGoalIndices(raw: string | boolean | undefined): number[] {
  if (raw === undefined || raw === '') return [];
  return String(raw)
    .split(',')
    .map((part) => {
      const n = Number(part.trim());
      if (!Number.isInteger(n) || n < 0) throw new Error(`--goal-indices needs observation indices like 0 or 0,2, got ${JSON.stringify(raw)}.`);
      return n;
    });
}

function checkConfig(config: SimpleGoalConfig): void {
  const nonNegative: Array<[string, number]> = [
    ['continuous', config.continuousActions],
    ['discrete', config.discreteBranches],
    ['num-vector', config.numVector],
    ['num-visual', config.numVisual],
    ['num-var-len', config.numVarLen],
  ];
  for (const [name, value] of nonNegative) {
    if (value < 0) throw new Error(`--${name} cannot be negative (got ${value}).`);
  }
  if (config.continuousActions + config.discreteBranches === 0) {
    throw new Error('SimpleGoal needs at least one action: give --continuous N or --discrete N (upstream\'s action_sizes).');
  }
  const observations = config.numVector + config.numVisual + config.numVarLen;
  if (observations === 0) {
    throw new Error('SimpleGoal needs at least one observation: give --num-vector N, --num-visual N or --num-var-len N.');
  }
  if (!(config.stepSize > 0)) throw new Error(`--step-size must be positive (got ${config.stepSize}).`);
  if (config.agents < 1) throw new Error(`--agents must be at least 1 (got ${config.agents}).`);
  if (config.behaviorNames.some((name) => name === '')) {
    throw new Error('--behavior-name needs a name, or names separated by commas.');
  }
  for (const index of config.goalIndices) {
    if (index >= observations) throw new Error(`--goal-indices: there is no observation ${index} (${observations} observations).`);
  }
}

/**
 * Vector observations first, then visual ones, then variable-length ones (described
 * VARIABLE_SIZE, NONE), as upstream's _make_observation_specs; those at goal_indices are goal signals.
 */
export function simpleGoalObservations(config: SimpleGoalConfig): ObservationSpecDef[] {
  const specs: ObservationSpecDef[] = [];
  const described = (shape: readonly number[]) => ({
    name: `observation ${specs.length} with shape ${pythonTupleRepr(shape)}`,
    observationType: config.goalIndices.includes(specs.length) ? GOAL_SIGNAL : 0,
  });
  for (let i = 0; i < config.numVector; i++) specs.push({ kind: 'vector', shape: [OBS_SIZE], ...described([OBS_SIZE]) });
  for (let i = 0; i < config.numVisual; i++) {
    const [channels, height, width] = config.visObsSize;
    // Raw floats: the values are -1 and +1, which an image in [0, 1] (PNG) cannot hold.
    specs.push({ kind: 'visual', channels, height, width, compressed: false, ...described(config.visObsSize) });
  }
  for (let i = 0; i < config.numVarLen; i++) {
    specs.push({ kind: 'vector', shape: [...config.varLenObsSize], variableLength: true, ...described(config.varLenObsSize) });
  }
  return specs;
}

/** Upstream's per-behavior agent id counter: every episode start takes the next id. */
class EpisodeIds {
  private last = 0;

  next(): number {
    this.last += 1;
    return this.last;
  }
}

/** The agents of one training area under --group (upstream's MultiAgentEnvironment). */
class GoalGroup {
  private readonly members: SimpleGoalAgent[] = [];
  private readonly finished = new Set<SimpleGoalAgent>();

  constructor(readonly id: number) {}

  join(agent: SimpleGoalAgent): void {
    this.members.push(agent);
  }

  /**
   * Records that `agent` reached the end; true when it was the last of the group to do so, in
   * which case the whole group asks for decisions again from the next step. Upstream clears its
   * done flags in the middle of its loop over the agents, so the members after the last finisher
   * (all finished before it) take their last action once more at the same step, from the start of
   * their new episode: that step's reward comes with their first decision, which trainers ignore,
   * but they start it one step away from 0.
   */
  finish(agent: SimpleGoalAgent): boolean {
    this.finished.add(agent);
    agent.pauseDecisions(true);
    if (this.finished.size < this.members.length) return false;
    this.restart();
    for (const later of this.members.slice(this.members.indexOf(agent) + 1)) later.repeatLastAction();
    return true;
  }

  restart(): void {
    this.finished.clear();
    for (const member of this.members) member.pauseDecisions(false);
  }
}

/** How an agent gets its id: a new one per episode (upstream's SimpleEnvironment) or a fixed one (its MultiAgentEnvironment). */
type AgentIdentity = { kind: 'per-episode'; ids: EpisodeIds } | { kind: 'fixed'; id: number };

const GOALS = [-1, 1] as const;

/**
 * Upstream's goal draws. Each of its SimpleEnvironments seeds Python's random.Random with the text
 * of its own arguments, not with the training seed, so that every run of one configuration meets
 * the same goals: two draws per behavior name as it is built, then one at each episode start
 * (random.choice([-1, 1])). Its MultiAgentEnvironment builds one SimpleEnvironment per agent with
 * the same arguments: identical streams, so the agents of a group share each episode's goal.
 */
export class UpstreamGoals {
  private readonly random: PythonRandom;

  constructor(config: SimpleGoalConfig, brainNames: readonly string[]) {
    this.random = new PythonRandom(upstreamSeedText(config, brainNames));
    for (let i = 0; i < 2 * brainNames.length; i++) this.draw();
  }

  draw(): number {
    return this.random.choice(GOALS);
  }
}

/** str() of the tuple of arguments upstream's SimpleEnvironment seeds its random source with. */
export function upstreamSeedText(config: SimpleGoalConfig, brainNames: readonly string[]): string {
  const parts = [
    pythonStringListRepr(brainNames),
    pythonFloatRepr(config.stepSize),
    config.numVisual,
    config.numVector,
    config.numVarLen,
    pythonTupleRepr(config.visObsSize),
    OBS_SIZE,
    pythonTupleRepr(config.varLenObsSize),
    pythonTupleRepr([config.continuousActions, config.discreteBranches]),
  ];
  return `(${parts.join(', ')})`;
}

function clamp(value: number, min: number, max: number): number {
  return Math.max(min, Math.min(value, max));
}

export class SimpleGoalAgent extends Agent {
  /** Continuous positions first, then one per discrete branch. */
  readonly positions: Float64Array;
  goal = 1;
  /** Upstream's step_count: it goes up once per action dimension at each step. */
  private actionSteps = 0;
  private readonly decisions: PausableBehavior;
  /** The last action taken, which a waiting member of a group repeats when its group starts again (GoalGroup.finish). */
  private readonly lastAction: ActionBuffers;

  constructor(
    private readonly config: SimpleGoalConfig,
    behaviorName: string,
    private readonly identity: AgentIdentity,
    private readonly group: GoalGroup | null,
    /** Where its goals come from: shared by the agents of an area, or its own with --group. */
    private readonly goals: UpstreamGoals,
  ) {
    const behavior = new PausableBehavior(
      behaviorName,
      simpleGoalObservations(config),
      config.continuousActions,
      new Array<number>(config.discreteBranches).fill(2),
    );
    super(behavior);
    this.decisions = behavior;
    this.lastAction = new ActionBuffers(config.continuousActions, config.discreteBranches);
    this.positions = new Float64Array(config.continuousActions + config.discreteBranches);
    if (group !== null) {
      this.groupId = group.id;
      group.join(this);
    }
  }

  override initialize(): void {
    // The Academy has given its own id: use upstream's instead.
    this.id = this.identity.kind === 'fixed' ? this.identity.id : this.identity.ids.next();
  }

  override onEpisodeBegin(): void {
    this.goal = this.goals.draw();
    this.positions.fill(0);
    this.actionSteps = 0;
    if (this.identity.kind === 'per-episode') this.id = this.identity.ids.next();
  }

  pauseDecisions(paused: boolean): void {
    this.decisions.paused = paused;
  }

  /** The value every observation shows: the goal, or 0 once a memory agent's goal is hidden. */
  shownValue(): number {
    return !this.config.memory || this.actionSteps <= NUM_SHOW_STEPS ? this.goal : 0;
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    writer.values.fill(this.shownValue());
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.lastAction.continuous.set(actions.continuous);
    this.lastAction.discrete.set(actions.discrete);
    this.move(actions);
    const done = this.atAnEnd();
    const reward = done ? this.endReward() : -TIME_PENALTY;
    if (!done) {
      this.addReward(reward);
      return;
    }
    if (this.group === null) {
      this.addReward(reward);
    } else if (this.group.finish(this)) {
      // The last of the group to finish: no reward of its own, its end reward as the group's.
      this.addGroupReward(reward);
    } else {
      // Finished before the others: a success is worth no more than a time penalty.
      this.addReward(Math.min(-TIME_PENALTY, reward));
    }
    this.endEpisode();
  }

  /** Takes the last action again, as an action of the current episode. */
  repeatLastAction(): void {
    this.onActionReceived(this.lastAction);
  }

  /** Goes straight to the goal at full speed: the episode ends after int(1 / step size) steps. */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.continuous.fill(this.goal);
    actionsOut.discrete.fill(this.goal > 0 ? 1 : 0);
  }

  private move(actions: ActionBuffers): void {
    const step = this.config.stepSize;
    const deltas: number[] = [];
    for (const value of actions.continuous) deltas.push(value);
    for (const choice of actions.discrete) deltas.push(choice !== 0 ? 1 : -1);
    deltas.forEach((delta, i) => {
      this.positions[i] = clamp(this.positions[i] + clamp(delta, -step, step), -1, 1);
      this.actionSteps += 1;
    });
  }

  private atAnEnd(): boolean {
    return this.positions.every((position) => position >= 1 || position <= -1);
  }

  /** Summed in upstream's order, so that the float is the same. */
  private endReward(): number {
    let reward = 0.0;
    for (const position of this.positions) reward += (SUCCESS_REWARD * position * this.goal) / this.positions.length;
    return reward;
  }
}

export const SIMPLE_GOAL: SimDefinition = {
  name: 'SimpleGoal',
  description: 'ML-Agents\' trainer test environments (simple_test_envs.py): move to the goal shown, -1 or +1',
  options: {
    continuous: { type: 'string', default: '1', description: 'continuous actions (upstream\'s action_sizes[0])' },
    discrete: { type: 'string', default: '0', description: 'discrete branches of 2 choices (upstream\'s action_sizes[1])' },
    'num-vector': { type: 'string', default: '1', description: `vector observations of size ${OBS_SIZE}` },
    'num-visual': { type: 'string', default: '0', description: 'visual observations (raw floats, every pixel the shown goal)' },
    'vis-obs-size': {
      type: 'string',
      default: VIS_OBS_SIZE.join('x'),
      description: 'shape of each visual observation, CHANNELSxHEIGHTxWIDTH (channel-first; upstream\'s vis_obs_size)',
    },
    'num-var-len': { type: 'string', default: '0', description: 'variable-length observations (every entity the shown goal)' },
    'var-len-obs-size': {
      type: 'string',
      default: VAR_LEN_SIZE.join('x'),
      description: 'shape of each variable-length observation, ENTITIESxSIZE (upstream\'s var_len_obs_size)',
    },
    'step-size': { type: 'string', default: String(STEP_SIZE), description: 'largest move per step' },
    memory: { type: 'boolean', default: false, description: `show the goal for the first ${NUM_SHOW_STEPS + 1} observations only (MemoryEnvironment)` },
    group: { type: 'boolean', default: false, description: 'the agents of an area form a group with a group reward (MultiAgentEnvironment)' },
    agents: { type: 'string', description: `agents per area and behavior (default 1, ${DEFAULT_GROUP_SIZE} with --group)` },
    'behavior-name': { type: 'string', default: DEFAULT_BEHAVIOR_NAME, description: 'behavior name, or names separated by commas' },
    'goal-indices': { type: 'string', description: 'observations sent as goal signals, e.g. 0 or 0,1 (upstream\'s goal_indices)' },
  },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const config = readSimpleGoalConfig(options);
    const groups: GoalGroup[] = [];
    // Without --group, one SimpleEnvironment per area holds every behavior name: one stream.
    const areaGoals = Array.from({ length: numAreas }, () => (config.group ? null : new UpstreamGoals(config, config.behaviorNames)));
    for (const behaviorName of config.behaviorNames) {
      const ids = new EpisodeIds();
      for (let area = 0; area < numAreas; area++) {
        const group = config.group ? new GoalGroup(area + 1) : null;
        if (group !== null) groups.push(group);
        for (let i = 0; i < config.agents; i++) {
          const identity: AgentIdentity =
            group !== null ? { kind: 'fixed', id: area * config.agents + i } : { kind: 'per-episode', ids };
          const goals = areaGoals[area] ?? new UpstreamGoals(config, [behaviorName]);
          academy.addAgent(new SimpleGoalAgent(config, behaviorName, identity, group, goals));
        }
      }
    }
    if (groups.length > 0) {
      const previous = academy.onReset;
      academy.onReset = () => {
        previous?.();
        for (const group of groups) group.restart();
      };
    }
  },
};

if (require.main === module) {
  const argv = process.argv.slice(2);
  try {
    // Checked before connecting, so that a bad option fails at once rather than after the handshake.
    if (!asksForHelp(argv)) readSimpleGoalConfig(parseSimArgs(SIMPLE_GOAL, argv).values);
  } catch (error) {
    process.stderr.write(`${SIMPLE_GOAL.name}: ${(error as Error).message}\n`);
    process.exit(1);
  }
  runEnvironmentMain(SIMPLE_GOAL, argv).then((code) => process.exit(code));
}
