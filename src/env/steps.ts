/**
 * One step's agents of one behavior, batched: the agents that ask for a decision
 * (DecisionSteps) and those whose episode just ended (TerminalSteps), as upstream's base_env.py.
 * Observation i of agent k is `obs[i].subarray(k * size_i, (k + 1) * size_i)`.
 *
 * Two ways in: `stepsFromColumns` takes the columns the fast step decoder
 * (communicator/wire/step-output.ts) reads straight from the wire; `stepsFromProto` takes the
 * agent infos protobufjs decoded, for every message the fast path leaves to it, and holds the
 * clear errors about bad data. Both give the same steps for the same message.
 */
import {
  AgentInfoProto,
  BrainParametersProto,
  CompressionTypeProto,
  ObservationProto,
  SpaceTypeProto,
} from '../communicator/messages';
import {
  ActionSpec,
  BehaviorSpec,
  DimensionProperty,
  ObservationSpec,
  ObservationType,
  observationSize,
} from './behavior-spec';
import { AgentInfoColumns, AgentInfoLayout } from '../communicator/wire/step-output';
import { decodePngObservation, visualLayout } from './png-observation';
import { MAX_MESSAGE_SIZE_FLAG } from '../communicator/rpc-communicator';

/** The environment sent data that cannot be used (a NaN, a shape that does not match...). */
export class UnityObservationError extends Error {
  override name = 'UnityObservationError';
}

abstract class StepsBatch {
  private index: Map<number, number> | undefined;

  constructor(
    /** One flat Float32Array per observation, n x observation size. */
    readonly obs: readonly Float32Array[],
    readonly reward: Float32Array,
    readonly agentId: Int32Array,
    /** 0 when the agent is in no group. */
    readonly groupId: Int32Array,
    readonly groupReward: Float32Array,
  ) {}

  get length(): number {
    return this.agentId.length;
  }

  /** The row of an agent id, or -1. */
  indexOf(agentId: number): number {
    if (this.index === undefined) {
      this.index = new Map();
      for (let i = 0; i < this.agentId.length; i++) {
        this.index.set(this.agentId[i], i);
      }
    }
    return this.index.get(agentId) ?? -1;
  }

  /** Observation `obsIndex` of the agent in row `row`. */
  observation(obsIndex: number, row: number): Float32Array {
    const all = this.obs[obsIndex];
    const size = all.length / Math.max(1, this.length);
    return all.subarray(row * size, (row + 1) * size);
  }
}

export class DecisionSteps extends StepsBatch {
  constructor(
    obs: readonly Float32Array[],
    reward: Float32Array,
    agentId: Int32Array,
    /**
     * One array per discrete branch, n x branch size; 1 where the action is NOT available
     * (upstream's convention). null when the behavior has no discrete actions or no agent sent a mask.
     */
    readonly actionMask: readonly Uint8Array[] | null,
    groupId: Int32Array,
    groupReward: Float32Array,
  ) {
    super(obs, reward, agentId, groupId, groupReward);
  }

  static empty(spec: BehaviorSpec): DecisionSteps {
    return new DecisionSteps(
      spec.observationSpecs.map(() => new Float32Array(0)),
      new Float32Array(0),
      new Int32Array(0),
      null,
      new Int32Array(0),
      new Float32Array(0),
    );
  }
}

export class TerminalSteps extends StepsBatch {
  constructor(
    obs: readonly Float32Array[],
    reward: Float32Array,
    /** 1 when the episode was cut by max steps rather than ended by the agent. */
    readonly interrupted: Uint8Array,
    agentId: Int32Array,
    groupId: Int32Array,
    groupReward: Float32Array,
  ) {
    super(obs, reward, agentId, groupId, groupReward);
  }

  static empty(spec: BehaviorSpec): TerminalSteps {
    return new TerminalSteps(
      spec.observationSpecs.map(() => new Float32Array(0)),
      new Float32Array(0),
      new Uint8Array(0),
      new Int32Array(0),
      new Int32Array(0),
      new Float32Array(0),
    );
  }
}

/** The spec of a behavior, from its brain parameters and one of its agents' observations. */
export function behaviorSpecFromProto(brain: BrainParametersProto, agent: AgentInfoProto): BehaviorSpec {
  const observationSpecs: ObservationSpec[] = (agent.observations ?? []).map((obs) => ({
    shape: Object.freeze([...obs.shape]),
    dimensionProperty: Object.freeze(
      obs.dimension_properties && obs.dimension_properties.length > 0
        ? obs.dimension_properties.map((d) => d as DimensionProperty)
        : obs.shape.map(() => DimensionProperty.UNSPECIFIED),
    ),
    observationType: (obs.observation_type ?? 0) as ObservationType,
    name: obs.name ?? '',
  }));
  return { observationSpecs: Object.freeze(observationSpecs), actionSpec: actionSpecFromProto(brain) };
}

function actionSpecFromProto(brain: BrainParametersProto): ActionSpec {
  const spec = brain.action_spec;
  const continuous = spec?.num_continuous_actions ?? 0;
  const discrete = spec?.num_discrete_actions ?? 0;
  if (continuous === 0 && discrete === 0) {
    // Engines older than communication API 1.3 describe actions with the deprecated fields only.
    const sizes = brain.vector_action_size_deprecated ?? [];
    if (brain.vector_action_space_type_deprecated === SpaceTypeProto.continuous) {
      return ActionSpec.createContinuous(sizes[0] ?? 0);
    }
    return ActionSpec.createDiscrete(sizes);
  }
  return new ActionSpec(continuous, spec?.discrete_branch_sizes ?? []);
}

/** Splits one behavior's agent infos into decision and terminal steps. */
export function stepsFromProto(
  agentInfos: readonly AgentInfoProto[],
  spec: BehaviorSpec,
  behaviorName: string,
  /** The engine's com.unity.ml-agents version: it tells how images are laid out when the message does not. */
  unityPackageVersion?: string,
  /** The most bytes the observations of one message may take once decoded (images especially). */
  maxObservationBytes = Infinity,
): [DecisionSteps, TerminalSteps] {
  checkDeclaredObservationBytes(agentInfos.length, spec, behaviorName, maxObservationBytes);
  const decisionInfos: AgentInfoProto[] = [];
  const terminalInfos: AgentInfoProto[] = [];
  for (const info of agentInfos) {
    (info.done ? terminalInfos : decisionInfos).push(info);
  }

  const decisionObs = spec.observationSpecs.map((obsSpec, i) =>
    observationBatch(decisionInfos, i, obsSpec, behaviorName, unityPackageVersion),
  );
  const terminalObs = spec.observationSpecs.map((obsSpec, i) =>
    observationBatch(terminalInfos, i, obsSpec, behaviorName, unityPackageVersion),
  );

  const decision = new DecisionSteps(
    decisionObs,
    rewards(decisionInfos, behaviorName),
    agentIds(decisionInfos),
    actionMasks(decisionInfos, spec.actionSpec, behaviorName),
    groupIds(decisionInfos),
    groupRewards(decisionInfos),
  );
  const terminal = new TerminalSteps(
    terminalObs,
    rewards(terminalInfos, behaviorName),
    maxStepsReached(terminalInfos),
    agentIds(terminalInfos),
    groupIds(terminalInfos),
    groupRewards(terminalInfos),
  );
  return [decision, terminal];
}

/**
 * The spec sizes the batches, and a PNG is decoded to its declared size whatever its bytes hold:
 * the agents' observations must fit the budget before anything is allocated.
 */
function checkDeclaredObservationBytes(
  agentCount: number,
  spec: BehaviorSpec,
  behaviorName: string,
  maxObservationBytes: number,
): void {
  spec.observationSpecs.forEach((obs, i) => {
    if (obs.shape.some((dim) => dim < 0)) {
      throw new UnityObservationError(
        `Observation ${describeObservation(obs, i)} of behavior ${behaviorName} has shape ` +
          `[${obs.shape.join(', ')}]: sizes cannot be negative.`,
      );
    }
  });
  const bytesPerAgent = 4 * spec.observationSpecs.reduce((sum, obs) => sum + observationSize(obs), 0);
  const bytes = agentCount * bytesPerAgent;
  if (bytes > maxObservationBytes) {
    throw new UnityObservationError(
      `The ${agentCount} agents of behavior ${behaviorName} declare ${mib(bytes)} MiB of observations ` +
        `(shapes ${spec.observationSpecs.map((obs) => `[${obs.shape.join(', ')}]`).join(', ')}), more than ` +
        `the ${mib(maxObservationBytes)} MiB one message may decode to. When the environment really ` +
        `sends that much, raise the message size limit with ${MAX_MESSAGE_SIZE_FLAG}=<MiB>.`,
    );
  }
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

function agentIds(infos: readonly AgentInfoProto[]): Int32Array {
  return Int32Array.from(infos, (info) => info.id ?? 0);
}

function groupIds(infos: readonly AgentInfoProto[]): Int32Array {
  return Int32Array.from(infos, (info) => info.group_id ?? 0);
}

function groupRewards(infos: readonly AgentInfoProto[]): Float32Array {
  return Float32Array.from(infos, (info) => info.group_reward ?? 0);
}

function maxStepsReached(infos: readonly AgentInfoProto[]): Uint8Array {
  return Uint8Array.from(infos, (info) => (info.max_step_reached ? 1 : 0));
}

function rewards(infos: readonly AgentInfoProto[], behaviorName: string): Float32Array {
  const out = new Float32Array(infos.length);
  for (let i = 0; i < infos.length; i++) {
    const r = infos[i].reward ?? 0;
    if (!Number.isFinite(r)) {
      throw new UnityObservationError(
        `The rewards provided had ${Number.isNaN(r) ? 'NaN' : 'Infinite'} values: agent ` +
          `${infos[i].id ?? 0} of behavior ${behaviorName} got reward ${r}. Check the reward code of ` +
          `the environment.`,
      );
    }
    out[i] = r;
  }
  return out;
}

function observationBatch(
  infos: readonly AgentInfoProto[],
  obsIndex: number,
  spec: ObservationSpec,
  behaviorName: string,
  unityPackageVersion: string | undefined,
): Float32Array {
  const size = observationSize(spec);
  checkObservations(infos, obsIndex, spec, behaviorName);
  const batch = new Float32Array(infos.length * size);
  for (let row = 0; row < infos.length; row++) {
    const info = infos[row];
    const obs = info.observations![obsIndex];
    if ((obs.compression_type ?? CompressionTypeProto.NONE) === CompressionTypeProto.PNG) {
      let pixels: Float32Array;
      try {
        pixels = decodePngObservation(
          obs.compressed_data ?? new Uint8Array(0),
          spec.shape,
          obs.compressed_channel_mapping,
          { layout: visualLayout(obs.dimension_properties, unityPackageVersion) },
        );
      } catch (error) {
        throw new UnityObservationError(
          `Observation ${describeObservation(spec, obsIndex)} of agent ${info.id ?? 0} of behavior ` +
            `${behaviorName} could not be decoded: ${(error as Error).message}`,
        );
      }
      batch.set(pixels, row * size);
      continue;
    }
    const data = obs.float_data?.data ?? [];
    const offset = row * size;
    for (let j = 0; j < size; j++) {
      const v = data[j];
      if (!Number.isFinite(v)) {
        throw new UnityObservationError(
          `The observations provided had ${Number.isNaN(v) ? 'NaN' : 'Infinite'} values: observation ` +
            `${describeObservation(spec, obsIndex)} of agent ${info.id ?? 0} of behavior ${behaviorName}, ` +
            `element ${j}. Check the sensor code of the environment.`,
        );
      }
      batch[offset + j] = v;
    }
  }
  return batch;
}

/** Every agent sent this observation, of the spec's shape, and uncompressed ones hold its floats. */
function checkObservations(
  infos: readonly AgentInfoProto[],
  obsIndex: number,
  spec: ObservationSpec,
  behaviorName: string,
): void {
  const size = observationSize(spec);
  for (const info of infos) {
    const obs = info.observations?.[obsIndex];
    if (obs === undefined) {
      throw new UnityObservationError(
        `Agent ${info.id ?? 0} of behavior ${behaviorName} sent ${info.observations?.length ?? 0} ` +
          `observations, but the behavior has ${obsIndex + 1} or more.`,
      );
    }
    checkShape(obs, spec, behaviorName, info, obsIndex);
    const compressed = (obs.compression_type ?? CompressionTypeProto.NONE) === CompressionTypeProto.PNG;
    const floats = obs.float_data?.data?.length ?? 0;
    if (!compressed && floats !== size) {
      throw new UnityObservationError(
        `Observation ${describeObservation(spec, obsIndex)} of agent ${info.id ?? 0} of behavior ` +
          `${behaviorName} holds ${floats} floats; its shape [${spec.shape.join(', ')}] needs ${size}.`,
      );
    }
  }
}

function checkShape(
  obs: ObservationProto,
  spec: ObservationSpec,
  behaviorName: string,
  info: AgentInfoProto,
  obsIndex: number,
): void {
  const same = obs.shape.length === spec.shape.length && obs.shape.every((d, i) => d === spec.shape[i]);
  if (!same) {
    throw new UnityObservationError(
      `Observation ${describeObservation(spec, obsIndex)} of agent ${info.id ?? 0} of behavior ` +
        `${behaviorName} has shape [${obs.shape.join(', ')}], but the behavior's spec says ` +
        `[${spec.shape.join(', ')}]. An observation's shape must not change during a session.`,
    );
  }
}

function describeObservation(spec: ObservationSpec, index: number): string {
  return spec.name ? `${index} (${spec.name})` : `${index}`;
}

function actionMasks(
  infos: readonly AgentInfoProto[],
  actionSpec: ActionSpec,
  behaviorName: string,
): Uint8Array[] | null {
  const branches = actionSpec.discreteBranches;
  if (branches.length === 0) {
    return null;
  }
  const total = branches.reduce((a, b) => a + b, 0);
  if (!infos.some((info) => (info.action_mask?.length ?? 0) > 0)) {
    return null;
  }
  const masks = branches.map((size) => new Uint8Array(infos.length * size));
  for (let row = 0; row < infos.length; row++) {
    const mask = infos[row].action_mask ?? [];
    if (mask.length === 0) {
      continue;
    }
    if (mask.length !== total) {
      throw new UnityObservationError(
        `Agent ${infos[row].id ?? 0} of behavior ${behaviorName} sent an action mask of ${mask.length} ` +
          `entries; its discrete branches [${branches.join(', ')}] need ${total}.`,
      );
    }
    let k = 0;
    for (let b = 0; b < branches.length; b++) {
      const size = branches[b];
      for (let a = 0; a < size; a++, k++) {
        masks[b][row * size + a] = mask[k] ? 1 : 0;
      }
    }
  }
  return masks;
}

/** What the fast step decoder expects of a behavior's agent infos. */
export function agentInfoLayout(spec: BehaviorSpec): AgentInfoLayout {
  const branches = spec.actionSpec.discreteBranches;
  return {
    observationShapes: spec.observationSpecs.map((obs) => obs.shape),
    actionMaskSize: branches.length > 0 ? branches.reduce((a, b) => a + b, 0) : null,
  };
}

/**
 * Splits one behavior's agents, as the fast decoder read them, into decision and terminal steps.
 * The decoder has checked everything stepsFromProto checks (shapes, sizes, finite values).
 */
export function stepsFromColumns(columns: AgentInfoColumns, spec: BehaviorSpec): [DecisionSteps, TerminalSteps] {
  let terminalCount = 0;
  for (let row = 0; row < columns.count; row++) terminalCount += columns.done[row];
  if (terminalCount === 0) {
    // The usual step: every agent asks for a decision, and the columns are the batch as they are.
    const decision = new DecisionSteps(
      columns.observations,
      columns.reward,
      columns.id,
      actionMasksOfRows(columns, allRows(columns.count), spec.actionSpec),
      columns.groupId,
      columns.groupReward,
    );
    return [decision, TerminalSteps.empty(spec)];
  }
  const decisionRows = rowsWhereDone(columns, 0, columns.count - terminalCount);
  const terminalRows = rowsWhereDone(columns, 1, terminalCount);
  const sizes = spec.observationSpecs.map(observationSize);
  const pickObservations = (rows: Int32Array) =>
    columns.observations.map((obs, i) => copyRows(obs, rows, sizes[i], new Float32Array(rows.length * sizes[i])));
  const decision = new DecisionSteps(
    pickObservations(decisionRows),
    copyRows(columns.reward, decisionRows, 1, new Float32Array(decisionRows.length)),
    copyRows(columns.id, decisionRows, 1, new Int32Array(decisionRows.length)),
    actionMasksOfRows(columns, decisionRows, spec.actionSpec),
    copyRows(columns.groupId, decisionRows, 1, new Int32Array(decisionRows.length)),
    copyRows(columns.groupReward, decisionRows, 1, new Float32Array(decisionRows.length)),
  );
  const terminal = new TerminalSteps(
    pickObservations(terminalRows),
    copyRows(columns.reward, terminalRows, 1, new Float32Array(terminalRows.length)),
    copyRows(columns.maxStepReached, terminalRows, 1, new Uint8Array(terminalRows.length)),
    copyRows(columns.id, terminalRows, 1, new Int32Array(terminalRows.length)),
    copyRows(columns.groupId, terminalRows, 1, new Int32Array(terminalRows.length)),
    copyRows(columns.groupReward, terminalRows, 1, new Float32Array(terminalRows.length)),
  );
  return [decision, terminal];
}

function allRows(count: number): Int32Array {
  const rows = new Int32Array(count);
  for (let i = 0; i < count; i++) rows[i] = i;
  return rows;
}

/** The rows whose done flag is `done`, in order; `count` of them. */
function rowsWhereDone(columns: AgentInfoColumns, done: number, count: number): Int32Array {
  const rows = new Int32Array(count);
  let k = 0;
  for (let row = 0; row < columns.count; row++) {
    if (columns.done[row] === done) rows[k++] = row;
  }
  return rows;
}

/** Copies rows of `width` values from `from` into `into`, one after another. */
function copyRows<T extends Float32Array | Int32Array | Uint8Array>(from: T, rows: Int32Array, width: number, into: T): T {
  let k = 0;
  for (let i = 0; i < rows.length; i++) {
    const start = rows[i] * width;
    if (width >= 64) {
      into.set(from.subarray(start, start + width), k);
      k += width;
    } else {
      for (let j = 0; j < width; j++) into[k++] = from[start + j];
    }
  }
  return into;
}

/** As actionMasks does for agent infos: null unless the behavior has branches and one of the rows sent a mask. */
function actionMasksOfRows(columns: AgentInfoColumns, rows: Int32Array, actionSpec: ActionSpec): Uint8Array[] | null {
  const branches = actionSpec.discreteBranches;
  const sent = columns.actionMaskSent;
  const flat = columns.actionMask;
  if (branches.length === 0 || sent === null || flat === null) {
    return null;
  }
  let anySent = false;
  for (let i = 0; i < rows.length && !anySent; i++) anySent = sent[rows[i]] === 1;
  if (!anySent) {
    return null;
  }
  const total = branches.reduce((a, b) => a + b, 0);
  const masks = branches.map((size) => new Uint8Array(rows.length * size));
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    if (sent[row] === 0) continue;
    let k = row * total;
    for (let b = 0; b < branches.length; b++) {
      const size = branches[b];
      const mask = masks[b];
      for (let a = 0; a < size; a++) mask[i * size + a] = flat[k++];
    }
  }
  return masks;
}

/**
 * The environment's action masks (one array per branch, n x branch size, 1 where the action is
 * NOT available) in the form the models and upstream's buffer take: n x sum of branch sizes, 1
 * where the action IS available (upstream's 1 - concatenate(action_mask)). No masks: all allowed.
 * Converts `count` rows from `firstRow` on, into `out` when given (count x sum of branch sizes).
 */
export function allowedActions(
  actionMask: readonly Uint8Array[] | null,
  count: number,
  branches: readonly number[],
  firstRow = 0,
  out?: Float32Array,
): Float32Array {
  const width = branches.reduce((a, b) => a + b, 0);
  const allowed = (out ?? new Float32Array(count * width)).fill(1);
  if (actionMask === null) return allowed;
  let first = 0;
  branches.forEach((size, b) => {
    const forbidden = actionMask[b];
    for (let i = 0; i < count; i++) {
      const row = firstRow + i;
      for (let k = 0; k < size; k++) allowed[i * width + first + k] = 1 - forbidden[row * size + k];
    }
    first += size;
  });
  return allowed;
}
