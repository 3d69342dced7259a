/**
 * Demonstrations as training data (upstream's demo_loader.py: demo_to_buffer and make_demo_buffer):
 * the records of a .demo file, or of every .demo file in a folder, in one buffer for GAIL's
 * discriminator and behavioral cloning.
 *
 * As upstream, consecutive records pair up: row t holds record t's observations with record t + 1's
 * reward and done flag (the reward a record carries is the one its previous action earned), so the
 * last record gives no row of its own; the records of several files run on as one stream. An
 * episode's rows go in as whole sequences of `sequenceLength` (the last one padded), as upstream's
 * resequence_and_append. Upstream builds no next observations here, and neither do we.
 *
 * One deliberate difference: the action. Unity's recorder writes each record when the agent asks for
 * a decision, before the decision is made, so a record holds the action stored from the decision
 * before it (Agent.SendInfoToBrain copies m_ActuatorManager.StoredActions; an episode's first
 * record holds the cleared action, zeros). Upstream's make_demo_buffer takes record t's own action,
 * so each observation is cloned with the action taken one decision earlier. Here row t takes the
 * action decided at record t, which record t + 1 holds (a terminal record, from which no decision
 * is made, keeps its own, as does the last of a recording closed before its next record).
 * Measured on the built-in Basic (config/imitation/Basic.yaml with only behavioral cloning,
 * demonstrations from its heuristic): upstream's pairing teaches "stay" at the start, which every
 * episode's first record holds, and the mean reward falls from 0.91 at step 8000 to -1.9 at 30000
 * (episodes that never end); with this pairing it holds the heuristic's 0.93 from step 8000 on.
 */
import * as path from 'path';
import { configError, namedTrainerSettings, optionsSource } from '../config/reader';
import type { RunOptions, TrainerSettings } from '../config/settings';
import { DemoFile, demoFiles, readDemoFile } from '../communicator/demo-file';
import type { AgentActionProto, AgentInfoActionPairProto } from '../communicator/messages';
import { BehaviorSpec, describeBehaviorSpec } from '../env/behavior-spec';
import { behaviorSpecFromProto, stepsFromProto } from '../env/steps';
import { AgentBuffer, BufferKey, observationKey } from './buffer';

export interface Demonstrations {
  /** The spec the files describe (upstream's behavior_spec_from_proto on the first record). */
  readonly spec: BehaviorSpec;
  /** obs:i, continuous_action and/or discrete_action, environment_rewards, done. */
  readonly buffer: AgentBuffer;
  readonly files: readonly string[];
}

/**
 * The run's options with every demo_path (gail's and behavioral_cloning's) taken from `cwd`, as
 * the other paths of a run are, and checked to name a .demo file or a folder holding some: a
 * wrong path is refused before any environment starts, naming its key. The options are copied.
 */
export function resolveDemonstrationPaths(options: RunOptions, cwd: string): RunOptions {
  const source = optionsSource(options);
  const resolve = (settings: TrainerSettings | null, at: string): TrainerSettings | null => {
    if (settings === null) return null;
    const located = (demoPath: string, key: string): string => {
      const absolute = path.resolve(cwd, demoPath);
      try {
        demoFiles(absolute);
      } catch (error) {
        throw configError(source, `${at}.${key}`, `${(error as Error).message} Give the path of a .demo file, or of a folder of them.`);
      }
      return absolute;
    };
    const { gail } = settings.reward_signals;
    const cloning = settings.behavioral_cloning;
    return {
      ...settings,
      reward_signals: { ...settings.reward_signals, ...(gail === undefined ? {} : { gail: { ...gail, demo_path: located(gail.demo_path, 'reward_signals.gail.demo_path') } }) },
      behavioral_cloning: cloning === null ? null : { ...cloning, demo_path: located(cloning.demo_path, 'behavioral_cloning.demo_path') },
    };
  };
  const named = new Map(namedTrainerSettings(options));
  return {
    ...options,
    default_settings: resolve(options.default_settings, 'default_settings'),
    behaviors: Object.fromEntries(Object.entries(options.behaviors).map(([name, settings]) => [name, resolve(named.get(`behaviors.${name}`)!, `behaviors.${name}`)!])),
  };
}

/** What the demonstrations must match, and the behavior and setting that named them (for errors). */
export interface ExpectedBehavior {
  readonly behavior: string;
  readonly spec: BehaviorSpec;
  /** Within the behavior's settings, e.g. reward_signals.gail.demo_path */
  readonly setting: string;
}

/**
 * Loads the demonstrations at `demoPath` (a .demo file or a folder of them). With `expected`,
 * demonstrations whose observation shapes or actions differ from the behavior's are refused,
 * naming the behavior, its setting, both specs and the files.
 */
export function loadDemonstrations(demoPath: string, sequenceLength: number, expected?: ExpectedBehavior): Demonstrations {
  const files = demoFiles(demoPath);
  const demos: DemoFile[] = files.map(readDemoFile);
  const records = demos.flatMap((demo) => demo.records);
  const first = records[0].agent_info ?? {};
  const spec = behaviorSpecFromProto(demos[0].brainParameters, first);
  const source = `the demonstrations in ${files.join(', ')}`;
  if (expected !== undefined) checkSpec(spec, expected, source);
  return { spec, buffer: demoBuffer(records, spec, sequenceLength, source), files };
}

function checkSpec(demo: BehaviorSpec, expected: ExpectedBehavior, source: string): void {
  const shapes = (spec: BehaviorSpec) => spec.observationSpecs.map((obs) => obs.shape.join('x')).join(',');
  if (demo.actionSpec.equals(expected.spec.actionSpec) && shapes(demo) === shapes(expected.spec)) return;
  const { behavior } = expected;
  throw new Error(
    `behaviors.${behavior}.${expected.setting}: ${source} have ${describeBehaviorSpec(demo)}, but behavior ${behavior}, ` +
      `which trains on them, has ${describeBehaviorSpec(expected.spec)}. Record the demonstrations again with ` +
      `${behavior}'s observations and actions, or point demo_path at demonstrations of ${behavior}.`,
  );
}

/** Upstream's make_demo_buffer, each observation with the action decided at it (see above). */
function demoBuffer(records: readonly AgentInfoActionPairProto[], spec: BehaviorSpec, sequenceLength: number, source: string): AgentBuffer {
  const episode = new AgentBuffer();
  const buffer = new AgentBuffer();
  const { continuousSize, discreteBranches } = spec.actionSpec;
  for (let t = 0; t + 1 < records.length; t++) {
    const info = records[t].agent_info ?? {};
    const next = records[t + 1].agent_info ?? {};
    const [decision, terminal] = stepsFromProto([info], spec, source);
    const observations = terminal.length === 1 ? terminal.obs : decision.obs;
    observations.forEach((obs, k) => episode.get(observationKey(k)).append(obs));
    const nextDone = next.done === true;
    episode.get(BufferKey.DONE).append(nextDone ? 1 : 0);
    episode.get(BufferKey.ENVIRONMENT_REWARDS).append(next.reward ?? 0);
    // The decision taken at record t is the stored action of the record after it, unless that one
    // holds none (a recording closed before it: Unity's ExpertBasic.demo ends so).
    const decided = terminal.length === 1 || holdsNoAction(records[t + 1]) ? t : t + 1;
    const { continuous, discrete } = recordedActions(records[decided].action_info ?? {}, continuousSize > 0);
    if (continuousSize > 0) episode.get(BufferKey.CONTINUOUS_ACTION).append(checkedActions(continuous, continuousSize, 'continuous', decided, source));
    if (discreteBranches.length > 0) episode.get(BufferKey.DISCRETE_ACTION).append(checkedActions(discrete, discreteBranches.length, 'discrete', decided, source));
    if (nextDone) {
      episode.resequenceAndAppend(buffer, { trainingLength: sequenceLength });
      episode.resetAgent();
    }
  }
  episode.resequenceAndAppend(buffer, { trainingLength: sequenceLength });
  return buffer;
}

/** Whether a record holds no action in any of its fields. */
function holdsNoAction(record: AgentInfoActionPairProto): boolean {
  const action = record.action_info ?? {};
  return [action.continuous_actions, action.discrete_actions, action.vector_actions_deprecated].every((values) => (values?.length ?? 0) === 0);
}

/** A record's actions; records from before hybrid actions hold them in vector_actions_deprecated only. */
function recordedActions(action: AgentActionProto, continuousSpec: boolean): { continuous: ArrayLike<number>; discrete: ArrayLike<number> } {
  const continuous = action.continuous_actions ?? [];
  const discrete = action.discrete_actions ?? [];
  if (continuous.length > 0 || discrete.length > 0) return { continuous, discrete };
  const legacy = action.vector_actions_deprecated ?? [];
  return continuousSpec ? { continuous: legacy, discrete: [] } : { continuous: [], discrete: legacy };
}

function checkedActions(values: ArrayLike<number>, size: number, kind: string, record: number, source: string): ArrayLike<number> {
  if (values.length !== size) {
    throw new Error(`Record ${record} of ${source} holds ${values.length} ${kind} actions where their brain parameters announce ${size}.`);
  }
  return values;
}
