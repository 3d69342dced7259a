/**
 * The environment's step message (UnityMessageProto carrying unity_output.rl_output), read and
 * written by hand.
 *
 * Why: protobufjs builds an object per agent, an array per observation and a number per float;
 * at a thousand agents a step that costs most of a millisecond. The trainer's decoder here reads
 * the agent infos straight into one Float32Array per behavior per observation and a few columns
 * (reward, done, id...), with no per-agent object. The engine side (src/sims) writes the same
 * message from such columns.
 *
 * The decoder is a fast path, not a second implementation of every rule: it reads the messages
 * that a running session sends at each step and answers `slowPathReason` for anything else
 * (brain parameters of new behaviors, compressed observations, behaviors it has no layout for,
 * sizes or shapes that do not match, NaN or infinite values, a singular message sent twice,
 * malformed bytes...). The caller then decodes with protobufjs, whose path keeps the clear
 * error messages. What the fast path accepts, it reads as protobuf does: fields in any order,
 * packed or unpacked repeated scalars, unknown fields skipped, map entries with key and value
 * in any order or missing.
 */
import {
  AgentInfoField,
  AgentListField,
  FloatDataField,
  MapEntryField,
  ObservationField,
  UnityMessageField,
  UnityOutputField,
  UnityRLOutputField,
} from './fields';
import { FastDecoding, SlowPathNeeded, expectWireType, tryFastPath } from './fast-path';
import {
  WireFormatError,
  WireReader,
  WireType,
  WireWriter,
  int32Size,
  lengthDelimitedFieldSize,
  tagOf,
  utf8Bytes,
  varintSize,
} from './protobuf-wire';
import { OK_HEADER_FIELD_BYTES, readHeaderStatus, readMapEntry, writeOkHeader } from './message-parts';

// ---------------------------------------------------------------------------------------------
// Trainer side: decoding

/** What the decoder expects of one behavior's agent infos, known from the behavior's spec. */
export interface AgentInfoLayout {
  /** The shape of each observation, in order. */
  readonly observationShapes: readonly (readonly number[])[];
  /**
   * Entries of an agent's action mask (the sum of the discrete branch sizes), or null when the
   * behavior has no discrete branch: its agents' masks are then not read.
   */
  readonly actionMaskSize: number | null;
}

/** One behavior's agents of one step, as columns, in the message's order. */
export interface AgentInfoColumns {
  readonly count: number;
  readonly reward: Float32Array;
  readonly done: Uint8Array;
  readonly maxStepReached: Uint8Array;
  readonly id: Int32Array;
  readonly groupId: Int32Array;
  readonly groupReward: Float32Array;
  /** One per observation: count x the observation's size. */
  readonly observations: readonly Float32Array[];
  /** count x actionMaskSize, 1 where the action is not available; null when masks are not read. */
  readonly actionMask: Uint8Array | null;
  /** 1 for the agents that sent a mask; null when masks are not read. */
  readonly actionMaskSent: Uint8Array | null;
}

export interface StepOutputMessage {
  /** header.status; null when the message has no header. */
  readonly headerStatus: number | null;
  /** The agents of each behavior in the message (every one of them has a layout). */
  readonly behaviors: ReadonlyMap<string, AgentInfoColumns>;
  /** rl_output.side_channel; empty when absent. */
  readonly sideChannel: Uint8Array;
}

/** Decodes a step message on the fast path, or returns null when it needs protobufjs. */
export function decodeStepOutputMessage(
  bytes: Uint8Array,
  layouts: ReadonlyMap<string, AgentInfoLayout>,
): StepOutputMessage | null {
  const decoding = tryDecodeStepOutputMessage(bytes, layouts);
  return 'message' in decoding ? decoding.message : null;
}

/** The same, saying why a message needs the slow path. */
export function tryDecodeStepOutputMessage(
  bytes: Uint8Array,
  layouts: ReadonlyMap<string, AgentInfoLayout>,
): FastDecoding<StepOutputMessage> {
  return tryFastPath(() => new StepOutputDecoder(bytes, layouts).readUnityMessage());
}

/** The number of floats of an observation of this shape. */
function sizeOfShape(shape: readonly number[]): number {
  let size = 1;
  for (const dim of shape) size *= dim;
  return size;
}

/**
 * The columns of one behavior's agents, carved out of a single ArrayBuffer: one allocation per
 * behavior per step rather than one per column.
 */
class AgentInfoColumnsBuilder implements AgentInfoColumns {
  readonly reward: Float32Array;
  readonly done: Uint8Array;
  readonly maxStepReached: Uint8Array;
  readonly id: Int32Array;
  readonly groupId: Int32Array;
  readonly groupReward: Float32Array;
  readonly observations: Float32Array[];
  readonly observationSizes: number[];
  readonly actionMask: Uint8Array | null;
  readonly actionMaskSent: Uint8Array | null;

  constructor(
    readonly count: number,
    readonly layout: AgentInfoLayout,
  ) {
    this.observationSizes = layout.observationShapes.map(sizeOfShape);
    const maskSize = layout.actionMaskSize;
    const floatsPerAgent = this.observationSizes.reduce((a, b) => a + b, 0);
    // 4-byte columns first, so that every Float32Array and Int32Array view is aligned.
    const wordBytes = 4 * count * (4 + floatsPerAgent);
    const byteBytes = count * (2 + (maskSize === null ? 0 : maskSize + 1));
    const buffer = new ArrayBuffer(wordBytes + byteBytes);
    let offset = 0;
    const float32 = (length: number) => {
      const view = new Float32Array(buffer, offset, length);
      offset += 4 * length;
      return view;
    };
    const int32 = (length: number) => {
      const view = new Int32Array(buffer, offset, length);
      offset += 4 * length;
      return view;
    };
    const uint8 = (length: number) => {
      const view = new Uint8Array(buffer, offset, length);
      offset += length;
      return view;
    };
    this.reward = float32(count);
    this.id = int32(count);
    this.groupId = int32(count);
    this.groupReward = float32(count);
    this.observations = this.observationSizes.map((size) => float32(count * size));
    this.done = uint8(count);
    this.maxStepReached = uint8(count);
    this.actionMask = maskSize === null ? null : uint8(count * maskSize);
    this.actionMaskSent = maskSize === null ? null : uint8(count);
  }
}

class StepOutputDecoder {
  private readonly r: WireReader;
  private readonly behaviors = new Map<string, AgentInfoColumns>();
  private headerStatus: number | null = null;
  private sideChannel: Uint8Array = new Uint8Array(0);

  constructor(
    bytes: Uint8Array,
    private readonly layouts: ReadonlyMap<string, AgentInfoLayout>,
  ) {
    this.r = new WireReader(bytes);
  }

  readUnityMessage(): StepOutputMessage {
    const r = this.r;
    const end = r.bytes.length;
    let sawOutput = false;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityMessageField.header:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'header');
          if (this.headerStatus !== null) throw new SlowPathNeeded('the header came twice');
          this.headerStatus = readHeaderStatus(r, r.lengthDelimitedEnd(end));
          break;
        case UnityMessageField.unity_output:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'unity_output');
          if (sawOutput) throw new SlowPathNeeded('unity_output came twice');
          sawOutput = true;
          this.readUnityOutput(r.lengthDelimitedEnd(end));
          break;
        default:
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
    return { headerStatus: this.headerStatus, behaviors: this.behaviors, sideChannel: this.sideChannel };
  }

  private readUnityOutput(end: number): void {
    const r = this.r;
    let sawRlOutput = false;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityOutputField.rl_output:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'rl_output');
          if (sawRlOutput) throw new SlowPathNeeded('rl_output came twice');
          sawRlOutput = true;
          this.readRlOutput(r.lengthDelimitedEnd(end));
          break;
        case UnityOutputField.rl_initialization_output:
          throw new SlowPathNeeded('the message carries rl_initialization_output (brain parameters)');
        default:
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
  }

  private readRlOutput(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case UnityRLOutputField.agentInfos:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'an agentInfos entry');
          this.readAgentInfosEntry(r.lengthDelimitedEnd(end));
          break;
        case UnityRLOutputField.side_channel: {
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

  /** One entry of map<string, ListAgentInfoProto>: the key may come before or after the value. */
  private readAgentInfosEntry(end: number): void {
    const r = this.r;
    const { key: name, valueStart: listStart, valueEnd: listEnd } = readMapEntry(r, end, 'a ListAgentInfoProto');
    if (this.behaviors.has(name)) {
      throw new SlowPathNeeded(`behavior ${name} came twice`);
    }
    const layout = this.layouts.get(name);
    if (layout === undefined) {
      throw new SlowPathNeeded(`behavior ${name} has no known spec`);
    }
    const columns =
      listStart < 0 ? new AgentInfoColumnsBuilder(0, layout) : this.readAgentList(listStart, listEnd, layout);
    this.behaviors.set(name, columns);
    r.pos = end;
  }

  private readAgentList(start: number, end: number, layout: AgentInfoLayout): AgentInfoColumns {
    const columns = new AgentInfoColumnsBuilder(this.countAgents(start, end), layout);
    const r = this.r;
    r.pos = start;
    let row = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === AgentListField.value) {
        const agentEnd = r.lengthDelimitedEnd(end);
        this.readAgentInfo(agentEnd, row++, columns);
      } else {
        r.skip(tag & 7, end);
      }
    }
    r.expectEnd(end);
    rejectNonFinite(columns.observations, 'an observation');
    return columns;
  }

  /** A first pass over the list, so that the columns are allocated once at their size. */
  private countAgents(start: number, end: number): number {
    const r = this.r;
    r.pos = start;
    let count = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === AgentListField.value) {
        expectWireType(tag & 7, WireType.LENGTH_DELIMITED, 'an AgentInfoProto');
        count++;
      }
      r.skip(tag & 7, end);
    }
    r.expectEnd(end);
    return count;
  }

  private readAgentInfo(end: number, row: number, columns: AgentInfoColumnsBuilder): void {
    const r = this.r;
    const maskSize = columns.layout.actionMaskSize;
    let reward = 0;
    let observationIndex = 0;
    let maskEntries = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case AgentInfoField.reward:
          expectWireType(wireType, WireType.FIXED32, 'reward');
          reward = r.float();
          break;
        case AgentInfoField.done:
          expectWireType(wireType, WireType.VARINT, 'done');
          columns.done[row] = r.bool() ? 1 : 0;
          break;
        case AgentInfoField.max_step_reached:
          expectWireType(wireType, WireType.VARINT, 'max_step_reached');
          columns.maxStepReached[row] = r.bool() ? 1 : 0;
          break;
        case AgentInfoField.id:
          expectWireType(wireType, WireType.VARINT, 'id');
          columns.id[row] = r.int32();
          break;
        case AgentInfoField.action_mask:
          if (maskSize === null) {
            r.skip(wireType, end);
          } else {
            maskEntries = this.readActionMask(wireType, end, columns.actionMask!, row * maskSize, maskEntries, maskSize);
          }
          break;
        case AgentInfoField.observations:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'an observation');
          if (observationIndex >= columns.observations.length) {
            throw new SlowPathNeeded('an agent sent more observations than its behavior has');
          }
          this.readObservation(r.lengthDelimitedEnd(end), row, observationIndex++, columns);
          break;
        case AgentInfoField.group_id:
          expectWireType(wireType, WireType.VARINT, 'group_id');
          columns.groupId[row] = r.int32();
          break;
        case AgentInfoField.group_reward:
          expectWireType(wireType, WireType.FIXED32, 'group_reward');
          columns.groupReward[row] = r.float();
          break;
        default:
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
    if (observationIndex !== columns.observations.length) {
      throw new SlowPathNeeded('an agent sent fewer observations than its behavior has');
    }
    if (reward - reward !== 0) {
      throw new SlowPathNeeded('a reward is NaN or infinite');
    }
    columns.reward[row] = reward;
    if (maskSize !== null) {
      if (maskEntries !== 0 && maskEntries !== maskSize) {
        throw new SlowPathNeeded('an action mask does not have the size of the discrete branches');
      }
      columns.actionMaskSent![row] = maskEntries > 0 ? 1 : 0;
    }
  }

  /** Reads mask entries (packed or not) into the agent's row; returns how many the row holds now. */
  private readActionMask(
    wireType: number,
    end: number,
    mask: Uint8Array,
    rowOffset: number,
    entries: number,
    maskSize: number,
  ): number {
    const r = this.r;
    if (wireType === WireType.VARINT) {
      if (entries >= maskSize) throw new SlowPathNeeded('an action mask is too long');
      mask[rowOffset + entries] = r.bool() ? 1 : 0;
      return entries + 1;
    }
    expectWireType(wireType, WireType.LENGTH_DELIMITED, 'action_mask');
    const packedEnd = r.lengthDelimitedEnd(end);
    while (r.pos < packedEnd) {
      if (entries >= maskSize) throw new SlowPathNeeded('an action mask is too long');
      mask[rowOffset + entries++] = r.bool() ? 1 : 0;
    }
    r.expectEnd(packedEnd);
    return entries;
  }

  private readObservation(end: number, row: number, index: number, columns: AgentInfoColumnsBuilder): void {
    const r = this.r;
    const shape = columns.layout.observationShapes[index];
    const size = columns.observationSizes[index];
    let shapeEntries = 0;
    let floats = 0;
    let sawFloatData = false;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      switch (tag >>> 3) {
        case ObservationField.shape:
          shapeEntries = this.matchShape(wireType, end, shape, shapeEntries);
          break;
        case ObservationField.compression_type:
          expectWireType(wireType, WireType.VARINT, 'compression_type');
          if (r.int32() !== 0) throw new SlowPathNeeded('a compressed observation');
          break;
        case ObservationField.compressed_data:
          throw new SlowPathNeeded('a compressed observation');
        case ObservationField.float_data:
          expectWireType(wireType, WireType.LENGTH_DELIMITED, 'float_data');
          if (sawFloatData) throw new SlowPathNeeded('float_data came twice');
          sawFloatData = true;
          floats = this.readFloatData(r.lengthDelimitedEnd(end), columns.observations[index], row * size, size);
          break;
        default:
          // compressed_channel_mapping, dimension_properties, observation_type and the name are
          // part of the spec, read once when the behavior appeared.
          r.skip(wireType, end);
      }
    }
    r.expectEnd(end);
    if (shapeEntries !== shape.length) {
      throw new SlowPathNeeded('an observation shape differs from its spec');
    }
    if (floats !== size) {
      throw new SlowPathNeeded('an observation does not hold the floats its shape needs');
    }
  }

  /** Compares shape entries (packed or not) with the spec's; returns how many matched so far. */
  private matchShape(wireType: number, end: number, shape: readonly number[], matched: number): number {
    const r = this.r;
    if (wireType === WireType.VARINT) {
      return matchDimension(r.int32(), shape, matched);
    }
    expectWireType(wireType, WireType.LENGTH_DELIMITED, 'shape');
    const packedEnd = r.lengthDelimitedEnd(end);
    while (r.pos < packedEnd) matched = matchDimension(r.int32(), shape, matched);
    r.expectEnd(packedEnd);
    return matched;
  }

  /** Copies FloatData's floats (packed or not) into `out` from `offset`; returns how many came. */
  private readFloatData(end: number, out: Float32Array, offset: number, size: number): number {
    const r = this.r;
    let count = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      const wireType = tag & 7;
      if (tag >>> 3 !== FloatDataField.data) {
        r.skip(wireType, end);
      } else if (wireType === WireType.LENGTH_DELIMITED) {
        const packedEnd = r.lengthDelimitedEnd(end);
        const bytes = packedEnd - r.pos;
        if (bytes % 4 !== 0) throw new WireFormatError('packed floats of a length not a multiple of 4');
        if (count + bytes / 4 > size) throw new SlowPathNeeded('an observation holds too many floats');
        let at = offset + count;
        for (let p = r.pos; p < packedEnd; p += 4) out[at++] = r.floatAt(p);
        count += bytes / 4;
        r.pos = packedEnd;
      } else {
        expectWireType(wireType, WireType.FIXED32, 'an observation float');
        if (count >= size) throw new SlowPathNeeded('an observation holds too many floats');
        out[offset + count++] = r.float();
      }
    }
    r.expectEnd(end);
    return count;
  }
}

/** Checks the next dimension of an observation's shape against the spec; returns how many matched. */
function matchDimension(dim: number, shape: readonly number[], matched: number): number {
  if (matched >= shape.length || dim !== shape[matched]) {
    throw new SlowPathNeeded('an observation shape differs from its spec');
  }
  return matched + 1;
}

/** One pass over all the floats, after the copy: NaN and infinities go to the slow path's errors. */
function rejectNonFinite(arrays: readonly Float32Array[], what: string): void {
  for (const values of arrays) {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v - v !== 0) throw new SlowPathNeeded(`${what} holds NaN or infinite values`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Engine side: encoding

/** One observation of every agent of a batch. */
export interface ObservationToSend {
  readonly shape: readonly number[];
  readonly name?: string;
  readonly dimensionProperties?: readonly number[];
  readonly observationType?: number;
  /** An uncompressed observation: count x its size floats. */
  readonly floats?: Float32Array;
  /** A PNG-compressed observation: one image per agent. */
  readonly pngImages?: readonly Uint8Array[];
}

/** One behavior's agents of one step, as columns. */
export interface AgentInfosToSend {
  readonly count: number;
  readonly id: Int32Array;
  readonly reward: Float32Array;
  readonly done: Uint8Array;
  readonly maxStepReached: Uint8Array;
  readonly groupId?: Int32Array;
  readonly groupReward?: Float32Array;
  /** Entries of each agent's action mask; 0 or absent: no masks are sent. */
  readonly actionMaskSize?: number;
  /** count x actionMaskSize, 1 where the action is not available. */
  readonly actionMask?: Uint8Array;
  readonly observations: readonly ObservationToSend[];
}

export interface StepOutputToSend {
  readonly behaviors: ReadonlyArray<readonly [name: string, agents: AgentInfosToSend]>;
  readonly sideChannel?: Uint8Array;
  /** An encoded UnityRLInitializationOutputProto (brain parameters of behaviors that appear). */
  readonly initializationOutput?: Uint8Array;
}

/** UnityMessageProto { header { status: 200 }, unity_output { rl_output, rl_initialization_output } }. */
export function encodeStepOutputMessage(output: StepOutputToSend): Buffer {
  const sideChannel = output.sideChannel ?? new Uint8Array(0);
  const entries = output.behaviors.map(([name, agents]) => new MeasuredBehavior(name, agents));
  let rlOutputBytes = 0;
  for (const entry of entries) rlOutputBytes += lengthDelimitedFieldSize(UnityRLOutputField.agentInfos, entry.entryBytes);
  if (sideChannel.length > 0) rlOutputBytes += lengthDelimitedFieldSize(UnityRLOutputField.side_channel, sideChannel.length);
  let unityOutputBytes = lengthDelimitedFieldSize(UnityOutputField.rl_output, rlOutputBytes);
  if (output.initializationOutput !== undefined) {
    unityOutputBytes += lengthDelimitedFieldSize(UnityOutputField.rl_initialization_output, output.initializationOutput.length);
  }
  const w = new WireWriter(
    OK_HEADER_FIELD_BYTES +
      lengthDelimitedFieldSize(UnityMessageField.unity_output, unityOutputBytes),
  );
  writeOkHeader(w);
  w.lengthDelimited(UnityMessageField.unity_output, unityOutputBytes);
  w.lengthDelimited(UnityOutputField.rl_output, rlOutputBytes);
  for (const entry of entries) entry.write(w);
  if (sideChannel.length > 0) w.bytesField(UnityRLOutputField.side_channel, sideChannel);
  if (output.initializationOutput !== undefined) {
    w.bytesField(UnityOutputField.rl_initialization_output, output.initializationOutput);
  }
  return w.finish();
}

/** Bytes of a packed repeated int32 payload. */
function packedInt32Bytes(values: readonly number[]): number {
  let bytes = 0;
  for (const v of values) bytes += int32Size(v);
  return bytes;
}

function isDefaultFloat(value: number): boolean {
  return Object.is(value, 0);
}

/**
 * One observation of a batch. Its fields other than the data are the same for every agent, so
 * they are encoded once: `head` (shape, compression type, and for floats the FloatData headers)
 * goes before each agent's data, `tail` (dimension properties, observation type, name) after.
 */
class ObservationEncoding {
  private readonly size: number;
  private readonly head: Uint8Array;
  private readonly tail: Uint8Array;
  /** For floats: bytes of each agent's ObservationProto. */
  private readonly floatObservationBytes: number;

  constructor(private readonly observation: ObservationToSend) {
    const shape = observation.shape;
    const dimensionProperties = observation.dimensionProperties ?? [];
    const observationType = observation.observationType ?? 0;
    const nameBytes = utf8Bytes(observation.name ?? '');
    this.size = sizeOfShape(shape);
    const floatDataBytes = this.size > 0 ? lengthDelimitedFieldSize(FloatDataField.data, this.size * 4) : 0;

    const shapeBytes = packedInt32Bytes(shape);
    let headBytes = shape.length > 0 ? lengthDelimitedFieldSize(ObservationField.shape, shapeBytes) : 0;
    if (this.isPng) {
      headBytes += 1 + varintSize(1); // compression_type PNG
    } else {
      headBytes += varintSize(tagOf(ObservationField.float_data, WireType.LENGTH_DELIMITED)) + varintSize(floatDataBytes);
      if (this.size > 0) headBytes += floatDataBytes - this.size * 4;
    }
    const head = new WireWriter(headBytes);
    if (shape.length > 0) {
      head.lengthDelimited(ObservationField.shape, shapeBytes);
      for (const dim of shape) head.int32(dim);
    }
    if (this.isPng) {
      head.tag(ObservationField.compression_type, WireType.VARINT);
      head.uint32(1);
    } else {
      head.lengthDelimited(ObservationField.float_data, floatDataBytes);
      if (this.size > 0) head.lengthDelimited(FloatDataField.data, this.size * 4);
    }
    this.head = head.finish();

    const dimensionPropertiesBytes = packedInt32Bytes(dimensionProperties);
    let tailBytes = 0;
    if (dimensionProperties.length > 0) {
      tailBytes += lengthDelimitedFieldSize(ObservationField.dimension_properties, dimensionPropertiesBytes);
    }
    if (observationType !== 0) tailBytes += 1 + int32Size(observationType);
    if (nameBytes.length > 0) tailBytes += lengthDelimitedFieldSize(ObservationField.name, nameBytes.length);
    const tail = new WireWriter(tailBytes);
    if (dimensionProperties.length > 0) {
      tail.lengthDelimited(ObservationField.dimension_properties, dimensionPropertiesBytes);
      for (const d of dimensionProperties) tail.int32(d);
    }
    if (observationType !== 0) {
      tail.tag(ObservationField.observation_type, WireType.VARINT);
      tail.int32(observationType);
    }
    if (nameBytes.length > 0) tail.bytesField(ObservationField.name, nameBytes);
    this.tail = tail.finish();

    this.floatObservationBytes = this.head.length + this.size * 4 + this.tail.length;
  }

  private get isPng(): boolean {
    return this.observation.pngImages !== undefined;
  }

  /** Bytes of the ObservationProto of agent `row`. */
  bytesFor(row: number): number {
    if (this.isPng) {
      const image = this.observation.pngImages![row];
      return this.head.length + lengthDelimitedFieldSize(ObservationField.compressed_data, image.length) + this.tail.length;
    }
    return this.floatObservationBytes;
  }

  write(w: WireWriter, row: number): void {
    w.raw(this.head);
    if (this.isPng) {
      w.bytesField(ObservationField.compressed_data, this.observation.pngImages![row]);
    } else {
      const floats = this.observation.floats!;
      for (let i = row * this.size, stop = i + this.size; i < stop; i++) w.float(floats[i]);
    }
    w.raw(this.tail);
  }
}

/** One map entry of agentInfos, measured: the size of each agent's AgentInfoProto is kept for the write. */
class MeasuredBehavior {
  private readonly nameBytes: Uint8Array;
  private readonly observations: ObservationEncoding[];
  private readonly agentBytes: Int32Array;
  private readonly maskSize: number;
  private readonly listBytes: number;
  readonly entryBytes: number;

  constructor(
    name: string,
    private readonly agents: AgentInfosToSend,
  ) {
    this.nameBytes = utf8Bytes(name);
    this.observations = agents.observations.map((o) => new ObservationEncoding(o));
    this.maskSize = agents.actionMaskSize ?? 0;
    this.agentBytes = new Int32Array(agents.count);
    const { count, reward, done, maxStepReached, id } = agents;
    const groupId = agents.groupId ?? new Int32Array(count);
    const groupReward = agents.groupReward ?? new Float32Array(count);
    const maskFieldBytes = this.maskSize > 0 ? lengthDelimitedFieldSize(AgentInfoField.action_mask, this.maskSize) : 0;
    let list = 0;
    for (let row = 0; row < count; row++) {
      let bytes = maskFieldBytes;
      if (!isDefaultFloat(reward[row])) bytes += 5;
      if (done[row]) bytes += 2;
      if (maxStepReached[row]) bytes += 2;
      if (id[row] !== 0) bytes += 1 + int32Size(id[row]);
      for (let i = 0; i < this.observations.length; i++) {
        bytes += lengthDelimitedFieldSize(AgentInfoField.observations, this.observations[i].bytesFor(row));
      }
      if (groupId[row] !== 0) bytes += 1 + int32Size(groupId[row]);
      if (!isDefaultFloat(groupReward[row])) bytes += 5;
      this.agentBytes[row] = bytes;
      list += lengthDelimitedFieldSize(AgentListField.value, bytes);
    }
    this.listBytes = list;
    this.entryBytes =
      lengthDelimitedFieldSize(MapEntryField.key, this.nameBytes.length) +
      lengthDelimitedFieldSize(MapEntryField.value, list);
  }

  write(w: WireWriter): void {
    const { count, reward, done, maxStepReached, id } = this.agents;
    const groupId = this.agents.groupId ?? new Int32Array(count);
    const groupReward = this.agents.groupReward ?? new Float32Array(count);
    const mask = this.agents.actionMask ?? new Uint8Array(0);
    const maskSize = this.maskSize;
    const observations = this.observations;
    w.lengthDelimited(UnityRLOutputField.agentInfos, this.entryBytes);
    w.bytesField(MapEntryField.key, this.nameBytes);
    w.lengthDelimited(MapEntryField.value, this.listBytes);
    for (let row = 0; row < count; row++) {
      w.lengthDelimited(AgentListField.value, this.agentBytes[row]);
      if (!isDefaultFloat(reward[row])) {
        w.tag(AgentInfoField.reward, WireType.FIXED32);
        w.float(reward[row]);
      }
      if (done[row]) {
        w.tag(AgentInfoField.done, WireType.VARINT);
        w.uint32(1);
      }
      if (maxStepReached[row]) {
        w.tag(AgentInfoField.max_step_reached, WireType.VARINT);
        w.uint32(1);
      }
      if (id[row] !== 0) {
        w.tag(AgentInfoField.id, WireType.VARINT);
        w.int32(id[row]);
      }
      if (maskSize > 0) {
        w.lengthDelimited(AgentInfoField.action_mask, maskSize);
        for (let i = row * maskSize, stop = i + maskSize; i < stop; i++) w.uint32(mask[i] ? 1 : 0);
      }
      for (let i = 0; i < observations.length; i++) {
        w.lengthDelimited(AgentInfoField.observations, observations[i].bytesFor(row));
        observations[i].write(w, row);
      }
      if (groupId[row] !== 0) {
        w.tag(AgentInfoField.group_id, WireType.VARINT);
        w.int32(groupId[row]);
      }
      if (!isDefaultFloat(groupReward[row])) {
        w.tag(AgentInfoField.group_reward, WireType.FIXED32);
        w.float(groupReward[row]);
      }
    }
  }
}
