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
import { FastDecoding, SlowPathNeeded, expectWireType, tryFastPath } from './fast-path';
import {
  AgentActionField,
  AgentListField,
  MapEntryField,
  UnityInputField,
  UnityMessageField,
  UnityRLInputField,
} from './fields';
import {
  WireFormatError,
  WireReader,
  WireType,
  WireWriter,
  int32Size,
  lengthDelimitedFieldSize,
  utf8Bytes,
} from './protobuf-wire';
import { OK_HEADER_FIELD_BYTES, readHeaderStatus, readMapEntry, writeOkHeader } from './message-parts';

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

  const w = new WireWriter(
    OK_HEADER_FIELD_BYTES +
      lengthDelimitedFieldSize(UnityMessageField.unity_input, unityInputBytes),
  );
  writeOkHeader(w);
  w.lengthDelimited(UnityMessageField.unity_input, unityInputBytes);
  w.lengthDelimited(UnityInputField.rl_input, rlInputBytes);
  for (const b of behaviors) b.write(w);
  if (input.command !== CommandProto.STEP) {
    w.tag(UnityRLInputField.command, WireType.VARINT);
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
  private readonly listBytes: number;
  readonly entryBytes: number;

  constructor(private readonly actions: BehaviorActionsToSend) {
    const { count, continuousSize, discreteSize, discrete } = actions;
    this.nameBytes = utf8Bytes(actions.name);
    this.discreteBytes = new Int32Array(count);
    const allFloats = continuousSize + discreteSize;
    // vector_actions_deprecated (every action as a float) and continuous_actions: the same size for all.
    let floatFieldsBytes = 0;
    if (allFloats > 0) floatFieldsBytes += lengthDelimitedFieldSize(AgentActionField.vector_actions_deprecated, allFloats * 4);
    if (continuousSize > 0) floatFieldsBytes += lengthDelimitedFieldSize(AgentActionField.continuous_actions, continuousSize * 4);
    let list = 0;
    for (let row = 0; row < count; row++) {
      let agentBytes = floatFieldsBytes;
      if (discreteSize > 0) {
        let packed = 0;
        for (let j = row * discreteSize, stop = j + discreteSize; j < stop; j++) packed += int32Size(discrete[j]);
        this.discreteBytes[row] = packed;
        agentBytes += lengthDelimitedFieldSize(AgentActionField.discrete_actions, packed);
      }
      list += lengthDelimitedFieldSize(AgentListField.value, agentBytes);
    }
    this.listBytes = list;
    this.entryBytes =
      lengthDelimitedFieldSize(MapEntryField.key, this.nameBytes.length) +
      lengthDelimitedFieldSize(MapEntryField.value, list);
  }

  write(w: WireWriter): void {
    const { count, continuousSize, discreteSize, continuous, discrete } = this.actions;
    const allFloats = continuousSize + discreteSize;
    const deprecatedBytes = allFloats > 0 ? lengthDelimitedFieldSize(AgentActionField.vector_actions_deprecated, allFloats * 4) : 0;
    const continuousBytes = continuousSize > 0 ? lengthDelimitedFieldSize(AgentActionField.continuous_actions, continuousSize * 4) : 0;
    w.lengthDelimited(UnityRLInputField.agent_actions, this.entryBytes);
    w.bytesField(MapEntryField.key, this.nameBytes);
    w.lengthDelimited(MapEntryField.value, this.listBytes);
    for (let row = 0; row < count; row++) {
      const c0 = row * continuousSize;
      const d0 = row * discreteSize;
      const packedDiscrete = this.discreteBytes[row];
      const discreteFieldBytes =
        discreteSize > 0 ? lengthDelimitedFieldSize(AgentActionField.discrete_actions, packedDiscrete) : 0;
      w.lengthDelimited(AgentListField.value, deprecatedBytes + continuousBytes + discreteFieldBytes);
      if (allFloats > 0) {
        w.lengthDelimited(AgentActionField.vector_actions_deprecated, allFloats * 4);
        for (let j = 0; j < continuousSize; j++) w.float(continuous[c0 + j]);
        for (let j = 0; j < discreteSize; j++) w.float(discrete[d0 + j]);
      }
      if (continuousSize > 0) {
        w.lengthDelimited(AgentActionField.continuous_actions, continuousSize * 4);
        for (let j = 0; j < continuousSize; j++) w.float(continuous[c0 + j]);
      }
      if (discreteSize > 0) {
        w.lengthDelimited(AgentActionField.discrete_actions, packedDiscrete);
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
  private headerStatus: number | null = null;
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
    const r = this.r;
    const end = r.bytes.length;
    let sawInput = false;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityMessageField.header:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'header');
          if (this.headerStatus !== null) throw new SlowPathNeeded('the header came twice');
          this.headerStatus = readHeaderStatus(r, r.lengthDelimitedEnd(end));
          break;
        case UnityMessageField.unity_input:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'unity_input');
          if (sawInput) throw new SlowPathNeeded('unity_input came twice');
          sawInput = true;
          this.readUnityInput(r.lengthDelimitedEnd(end));
          break;
        default:
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
    return {
      headerStatus: this.headerStatus,
      command: this.command,
      sideChannel: this.sideChannel,
      actions: this.actions,
    };
  }

  private readUnityInput(end: number): void {
    const r = this.r;
    let sawRlInput = false;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityInputField.rl_input:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'rl_input');
          if (sawRlInput) throw new SlowPathNeeded('rl_input came twice');
          sawRlInput = true;
          this.readRlInput(r.lengthDelimitedEnd(end));
          break;
        case UnityInputField.rl_initialization_input:
          throw new SlowPathNeeded('the message carries rl_initialization_input');
        default:
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
  }

  private readRlInput(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityRLInputField.agent_actions:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'an agent_actions entry');
          this.readAgentActionsEntry(r.lengthDelimitedEnd(end));
          break;
        case UnityRLInputField.command:
          expectWireType(wireType, WireType.VARINT, 'command');
          this.command = r.int32();
          break;
        case UnityRLInputField.side_channel: {
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'side_channel');
          const fieldEnd = r.lengthDelimitedEnd(end);
          this.sideChannel = r.slice(r.pos, fieldEnd);
          r.pos = fieldEnd;
          break;
        }
        default:
          r.skip(wireType, end);
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
    r.pos = start;
    let count = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === AgentListField.value) {
        expectWireType(tag & 7, WireType.LENGTH_DELIMITED, 'an AgentActionProto');
        count++;
      }
      r.skip(tag & 7, end);
    }
    const columns: AgentActionColumns = {
      count,
      continuous: new Float32Array(count * size.continuous),
      discrete: new Int32Array(count * size.discrete),
    };
    r.pos = start;
    let row = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === AgentListField.value) {
        this.readAgentAction(r.lengthDelimitedEnd(end), row++, size, columns);
      } else {
        r.skip(tag & 7, end);
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
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case AgentActionField.continuous_actions:
          if (wireType === WireType.FIXED32) {
            if (continuousCount >= size.continuous) throw tooMany();
            columns.continuous[c0 + continuousCount++] = r.float();
          } else {
            expectWireType(wireType, WireType.LENGTH_DELIMITED, 'continuous_actions');
            const packedEnd = r.lengthDelimitedEnd(end);
            if ((packedEnd - r.pos) % 4 !== 0) throw new WireFormatError('packed floats of a length not a multiple of 4');
            while (r.pos < packedEnd) {
              if (continuousCount >= size.continuous) throw tooMany();
              columns.continuous[c0 + continuousCount++] = r.float();
            }
          }
          break;
        case AgentActionField.discrete_actions:
          if (wireType === WireType.VARINT) {
            if (discreteCount >= size.discrete) throw tooMany();
            columns.discrete[d0 + discreteCount++] = r.int32();
          } else {
            expectWireType(wireType, WireType.LENGTH_DELIMITED, 'discrete_actions');
            const packedEnd = r.lengthDelimitedEnd(end);
            while (r.pos < packedEnd) {
              if (discreteCount >= size.discrete) throw tooMany();
              columns.discrete[d0 + discreteCount++] = r.int32();
            }
            r.expectEnd(packedEnd);
          }
          break;
        default:
          // vector_actions_deprecated and value: the engine reads the newer fields.
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
    if (continuousCount !== size.continuous || discreteCount !== size.discrete) {
      throw new SlowPathNeeded('an agent has not the number of actions its behavior takes');
    }
  }
}

function tooMany(): SlowPathNeeded {
  return new SlowPathNeeded('an agent has more actions than its behavior takes');
}

function noActions(): AgentActionColumns {
  return { count: 0, continuous: new Float32Array(0), discrete: new Int32Array(0) };
}
