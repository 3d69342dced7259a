/**
 * The trainer's step message (UnityMessageProto carrying unity_input.rl_input: the agents'
 * actions, the command and the side channel), written and read by hand.
 *
 * Why: protobufjs needs an AgentActionProto object and three arrays per agent; at a thousand
 * agents building and encoding them costs over half a millisecond a step. The trainer writes
 * this message straight from the action typed arrays, measured up front; the engine side
 * (src/sims) reads the actions straight back into typed arrays.
 *
 * As upstream's trainer does, each agent's deprecated vector_actions field is filled beside its
 * continuous and discrete actions, so that older engines read the same actions.
 */
import { AgentActionProto, CommandProto, UnityMessageProto } from '../messages';
import { FastDecoding, SlowPathNeeded, tryFastPath } from './fast-path';
import { AgentActionField, AgentListField, UnityInputField, UnityRLInputField } from './fields';
import {
  UNITY_INPUT,
  countListedAgents,
  mapEntryBytes,
  readMapEntry,
  readStepMessage,
  startStepMessage,
  writeMapEntryStart,
} from './message-parts';
import {
  WireFormatError,
  WireReader,
  WireType,
  WireWriter,
  fieldNumberSet,
  int32Size,
  lengthDelimitedFieldSize,
  tagOf,
  taggedFieldSize,
  utf8Bytes,
} from './protobuf-wire';

const { VARINT, FIXED32, LENGTH_DELIMITED } = WireType;

/**
 * The tags (field number and wire type in one) of the fields written and read per agent, and the
 * helpers those loops call, as constants of this module: under tsx (esbuild's CommonJS output,
 * which npm run bench:comm runs the trainer through) each use of an imported name is a getter
 * call, ten times the cost of the work in these loops. The decoder switches on whole tags, so a
 * known field that comes with another wire type falls to skipUnread, which refuses it.
 */
const Tag = {
  agentActionsEntry: tagOf(UnityRLInputField.agent_actions, LENGTH_DELIMITED),
  command: tagOf(UnityRLInputField.command, VARINT),
  sideChannel: tagOf(UnityRLInputField.side_channel, LENGTH_DELIMITED),
  agentAction: tagOf(AgentListField.value, LENGTH_DELIMITED),
  deprecatedActionsPacked: tagOf(AgentActionField.vector_actions_deprecated, LENGTH_DELIMITED),
  deprecatedAction: tagOf(AgentActionField.vector_actions_deprecated, FIXED32),
  value: tagOf(AgentActionField.value, FIXED32),
  continuousPacked: tagOf(AgentActionField.continuous_actions, LENGTH_DELIMITED),
  continuous: tagOf(AgentActionField.continuous_actions, FIXED32),
  discretePacked: tagOf(AgentActionField.discrete_actions, LENGTH_DELIMITED),
  discrete: tagOf(AgentActionField.discrete_actions, VARINT),
};

/** Each message's field numbers, for skipUnread. */
const Fields = {
  rlInput: fieldNumberSet(UnityRLInputField),
  agentList: fieldNumberSet(AgentListField),
  agentAction: fieldNumberSet(AgentActionField),
};

const sizeOfInt32 = int32Size;
const sizeOfField = taggedFieldSize;

// ---------------------------------------------------------------------------------------------
// Trainer side: encoding

/** The actions of one behavior's agents: row i is agent i. */
export interface BehaviorActionsToSend {
  readonly name: string;
  readonly count: number;
  readonly continuousSize: number;
  readonly discreteSize: number;
  /** count x continuousSize */
  readonly continuous: Float32Array;
  /** count x discreteSize */
  readonly discrete: Int32Array;
}

export interface StepInputToSend {
  readonly command: CommandProto;
  readonly sideChannel?: Uint8Array;
  readonly actions: readonly BehaviorActionsToSend[];
}

/** UnityMessageProto { header { status: 200 }, unity_input { rl_input { agent_actions, command, side_channel } } }. */
export function encodeStepInputMessage(input: StepInputToSend): Buffer {
  const sideChannel = input.sideChannel ?? new Uint8Array(0);
  const behaviors = input.actions.map((actions) => new MeasuredActions(actions));
  let rlInputBytes = 0;
  for (const b of behaviors) rlInputBytes += lengthDelimitedFieldSize(UnityRLInputField.agent_actions, b.entryBytes);
  if (input.command !== CommandProto.STEP) rlInputBytes += 1 + int32Size(input.command);
  if (sideChannel.length > 0) rlInputBytes += lengthDelimitedFieldSize(UnityRLInputField.side_channel, sideChannel.length);
  const unityInputBytes = lengthDelimitedFieldSize(UnityInputField.rl_input, rlInputBytes);

  const w = startStepMessage(UNITY_INPUT, unityInputBytes);
  w.lengthDelimited(UnityInputField.rl_input, rlInputBytes);
  for (const b of behaviors) b.write(w);
  if (input.command !== CommandProto.STEP) {
    w.uint32(Tag.command);
    w.int32(input.command);
  }
  if (sideChannel.length > 0) w.bytesField(UnityRLInputField.side_channel, sideChannel);
  return w.finish();
}

/** One map entry of agent_actions, measured; each agent's AgentActionProto size is kept for the write. */
class MeasuredActions {
  private readonly nameBytes: Uint8Array;
  /** Bytes of the packed discrete actions of each agent (they are varints: sizes differ). */
  private readonly discreteBytes: Int32Array;
  /** Bytes of vector_actions_deprecated (every action as a float) and continuous_actions: the same for all. */
  private readonly floatFieldsBytes: number;
  private readonly listBytes: number;
  readonly entryBytes: number;

  constructor(private readonly actions: BehaviorActionsToSend) {
    const { count, continuousSize, discreteSize, discrete } = actions;
    this.nameBytes = utf8Bytes(actions.name);
    this.discreteBytes = new Int32Array(count);
    const allFloats = continuousSize + discreteSize;
    this.floatFieldsBytes =
      (allFloats > 0 ? sizeOfField(Tag.deprecatedActionsPacked, allFloats * 4) : 0) +
      (continuousSize > 0 ? sizeOfField(Tag.continuousPacked, continuousSize * 4) : 0);
    let list = 0;
    for (let row = 0; row < count; row++) {
      let agentBytes = this.floatFieldsBytes;
      if (discreteSize > 0) {
        let packed = 0;
        for (let j = row * discreteSize, stop = j + discreteSize; j < stop; j++) packed += sizeOfInt32(discrete[j]);
        this.discreteBytes[row] = packed;
        agentBytes += sizeOfField(Tag.discretePacked, packed);
      }
      list += sizeOfField(Tag.agentAction, agentBytes);
    }
    this.listBytes = list;
    this.entryBytes = mapEntryBytes(this.nameBytes, list);
  }

  write(w: WireWriter): void {
    const { count, continuousSize, discreteSize, continuous, discrete } = this.actions;
    const allFloats = continuousSize + discreteSize;
    writeMapEntryStart(w, UnityRLInputField.agent_actions, this.entryBytes, this.nameBytes, this.listBytes);
    for (let row = 0; row < count; row++) {
      const c0 = row * continuousSize;
      const d0 = row * discreteSize;
      const packedDiscrete = this.discreteBytes[row];
      const discreteFieldBytes = discreteSize > 0 ? sizeOfField(Tag.discretePacked, packedDiscrete) : 0;
      w.tagged(Tag.agentAction, this.floatFieldsBytes + discreteFieldBytes);
      if (allFloats > 0) {
        w.tagged(Tag.deprecatedActionsPacked, allFloats * 4);
        for (let j = 0; j < continuousSize; j++) w.float(continuous[c0 + j]);
        for (let j = 0; j < discreteSize; j++) w.float(discrete[d0 + j]);
      }
      if (continuousSize > 0) {
        w.tagged(Tag.continuousPacked, continuousSize * 4);
        for (let j = 0; j < continuousSize; j++) w.float(continuous[c0 + j]);
      }
      if (discreteSize > 0) {
        w.tagged(Tag.discretePacked, packedDiscrete);
        for (let j = 0; j < discreteSize; j++) w.int32(discrete[d0 + j]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Engine side: decoding

/** How many actions of each kind an agent of a behavior takes. */
export interface ActionSizes {
  readonly continuous: number;
  readonly discrete: number;
}

/** One behavior's actions, row i for the i-th agent of the list the trainer sent. */
export interface AgentActionColumns {
  readonly count: number;
  /** count x continuous size */
  readonly continuous: Float32Array;
  /** count x discrete size */
  readonly discrete: Int32Array;
}

export interface StepInputMessage {
  /** header.status; null when the message has no header. */
  readonly headerStatus: number | null;
  readonly command: CommandProto;
  readonly sideChannel: Uint8Array;
  /** The actions of each behavior the environment knows; those of other behaviors are left out. */
  readonly actions: ReadonlyMap<string, AgentActionColumns>;
}

/** Decodes the trainer's message on the fast path, or returns null when it needs protobufjs. */
export function decodeStepInputMessage(
  bytes: Uint8Array,
  sizes: ReadonlyMap<string, ActionSizes>,
): StepInputMessage | null {
  const decoding = tryDecodeStepInputMessage(bytes, sizes);
  return 'message' in decoding ? decoding.message : null;
}

/** The same, saying why a message needs the slow path. */
export function tryDecodeStepInputMessage(
  bytes: Uint8Array,
  sizes: ReadonlyMap<string, ActionSizes>,
): FastDecoding<StepInputMessage> {
  return tryFastPath(() => new StepInputDecoder(bytes, sizes).readUnityMessage());
}

/**
 * The slow path's result in the fast path's form, from a message protobufjs decoded. Each agent's
 * row takes its first continuous and discrete actions up to the behavior's sizes, zeros for
 * those missing.
 */
export function stepInputFromProto(
  message: UnityMessageProto,
  sizes: ReadonlyMap<string, ActionSizes>,
): StepInputMessage {
  const rlInput = message.unity_input?.rl_input ?? {};
  const actions = new Map<string, AgentActionColumns>();
  for (const [name, list] of Object.entries(rlInput.agent_actions ?? {})) {
    const size = sizes.get(name);
    if (size === undefined) continue;
    actions.set(name, actionColumnsFromProto(list?.value ?? [], size));
  }
  return {
    headerStatus: message.header ? message.header.status ?? 0 : null,
    command: rlInput.command ?? CommandProto.STEP,
    sideChannel: rlInput.side_channel ?? new Uint8Array(0),
    actions,
  };
}

function actionColumnsFromProto(agents: readonly AgentActionProto[], size: ActionSizes): AgentActionColumns {
  const count = agents.length;
  const continuous = new Float32Array(count * size.continuous);
  const discrete = new Int32Array(count * size.discrete);
  for (let row = 0; row < count; row++) {
    const c = agents[row].continuous_actions ?? [];
    const d = agents[row].discrete_actions ?? [];
    for (let j = 0; j < Math.min(size.continuous, c.length); j++) continuous[row * size.continuous + j] = c[j];
    for (let j = 0; j < Math.min(size.discrete, d.length); j++) discrete[row * size.discrete + j] = d[j];
  }
  return { count, continuous, discrete };
}

class StepInputDecoder {
  private readonly r: WireReader;
  private command: CommandProto = CommandProto.STEP;
  private sideChannel: Uint8Array = new Uint8Array(0);
  private readonly actions = new Map<string, AgentActionColumns>();
  private readonly namesSeen = new Set<string>();

  constructor(
    bytes: Uint8Array,
    private readonly sizes: ReadonlyMap<string, ActionSizes>,
  ) {
    this.r = new WireReader(bytes);
  }

  readUnityMessage(): StepInputMessage {
    const headerStatus = readStepMessage(this.r, UNITY_INPUT, (end) => this.readRlInput(end));
    return { headerStatus, command: this.command, sideChannel: this.sideChannel, actions: this.actions };
  }

  private readRlInput(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      switch (tag) {
        case Tag.agentActionsEntry:
          this.readAgentActionsEntry(r.lengthDelimitedEnd(end));
          break;
        case Tag.command:
          this.command = r.int32();
          break;
        case Tag.sideChannel:
          this.sideChannel = r.lengthDelimited(end);
          break;
        default:
          r.skipUnread(tag, end, Fields.rlInput);
      }
    }
    r.expectEnd(end);
  }

  /** One entry of map<string, ListAgentActionProto>: the key may come before or after the value. */
  private readAgentActionsEntry(end: number): void {
    const r = this.r;
    const { key: name, valueStart: listStart, valueEnd: listEnd } = readMapEntry(r, end, 'a ListAgentActionProto');
    if (this.namesSeen.has(name)) throw new SlowPathNeeded(`behavior ${name} came twice`);
    this.namesSeen.add(name);
    const size = this.sizes.get(name);
    if (size !== undefined) {
      this.actions.set(name, listStart < 0 ? noActions() : this.readActionList(listStart, listEnd, size));
    }
    r.pos = end;
  }

  private readActionList(start: number, end: number, size: ActionSizes): AgentActionColumns {
    const r = this.r;
    const count = countListedAgents(r, start, end);
    const columns: AgentActionColumns = {
      count,
      continuous: new Float32Array(count * size.continuous),
      discrete: new Int32Array(count * size.discrete),
    };
    let row = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag === Tag.agentAction) {
        this.readAgentAction(r.lengthDelimitedEnd(end), row++, size, columns);
      } else {
        r.skipUnread(tag, end, Fields.agentList);
      }
    }
    r.expectEnd(end);
    return columns;
  }

  private readAgentAction(end: number, row: number, size: ActionSizes, columns: AgentActionColumns): void {
    const r = this.r;
    let continuousCount = 0;
    let discreteCount = 0;
    const c0 = row * size.continuous;
    const d0 = row * size.discrete;
    while (r.pos < end) {
      const tag = r.uint32();
      switch (tag) {
        case Tag.continuousPacked: {
          const packedEnd = r.lengthDelimitedEnd(end);
          if ((packedEnd - r.pos) % 4 !== 0) throw new WireFormatError('packed floats of a length not a multiple of 4');
          while (r.pos < packedEnd) {
            if (continuousCount >= size.continuous) throw tooManyActions();
            columns.continuous[c0 + continuousCount++] = r.float();
          }
          break;
        }
        case Tag.continuous:
          if (continuousCount >= size.continuous) throw tooManyActions();
          columns.continuous[c0 + continuousCount++] = r.float();
          break;
        case Tag.discretePacked: {
          const packedEnd = r.lengthDelimitedEnd(end);
          while (r.pos < packedEnd) {
            if (discreteCount >= size.discrete) throw tooManyActions();
            columns.discrete[d0 + discreteCount++] = r.int32();
          }
          r.expectEnd(packedEnd);
          break;
        }
        case Tag.discrete:
          if (discreteCount >= size.discrete) throw tooManyActions();
          columns.discrete[d0 + discreteCount++] = r.int32();
          break;
        case Tag.deprecatedActionsPacked:
        case Tag.deprecatedAction:
        case Tag.value:
          // The engine reads the newer fields.
          r.skip(tag & 7, end);
          break;
        default:
          r.skipUnread(tag, end, Fields.agentAction);
      }
    }
    r.expectEnd(end);
    if (continuousCount !== size.continuous || discreteCount !== size.discrete) {
      throw new SlowPathNeeded('an agent has not the number of actions its behavior takes');
    }
  }
}

function tooManyActions(): SlowPathNeeded {
  return new SlowPathNeeded('an agent has more actions than its behavior takes');
}

function noActions(): AgentActionColumns {
  return { count: 0, continuous: new Float32Array(0), discrete: new Int32Array(0) };
}
