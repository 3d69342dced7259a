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
 * sizes or shapes that do not match, NaN or infinite values, a singular message sent twice, a
 * known field with another wire type than declared, malformed bytes...). The caller then decodes
 * with protobufjs, whose path keeps the clear error messages. What the fast path accepts, it reads as protobuf does: fields in any order,
 * packed or unpacked repeated scalars, unknown fields skipped, map entries with key and value
 * in any order or missing.
 */
import {
  AgentInfoField,
  AgentListField,
  FloatDataField,
  ObservationField,
  UnityOutputField,
  UnityRLOutputField,
} from './fields';
import { FastDecoding, SlowPathNeeded, tryFastPath } from './fast-path';
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
  varintSize,
} from './protobuf-wire';
import { CompressionTypeProto } from '../messages';
import {
  UNITY_OUTPUT,
  countListedAgents,
  mapEntryBytes,
  readMapEntry,
  readStepMessage,
  startStepMessage,
  writeMapEntryStart,
} from './message-parts';

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

  /** Bytes of the columns of `count` agents of this layout. */
  static bytesFor(count: number, layout: AgentInfoLayout): number {
    const floatsPerAgent = layout.observationShapes.reduce((sum, shape) => sum + sizeOfShape(shape), 0);
    return AgentInfoColumnsBuilder.wordBytes(count, floatsPerAgent) + AgentInfoColumnsBuilder.byteBytes(count, layout);
  }

  private static wordBytes(count: number, floatsPerAgent: number): number {
    return 4 * count * (4 + floatsPerAgent);
  }

  private static byteBytes(count: number, layout: AgentInfoLayout): number {
    return count * (2 + (layout.actionMaskSize === null ? 0 : layout.actionMaskSize + 1));
  }

  constructor(
    readonly count: number,
    readonly layout: AgentInfoLayout,
  ) {
    this.observationSizes = layout.observationShapes.map(sizeOfShape);
    const maskSize = layout.actionMaskSize;
    const floatsPerAgent = this.observationSizes.reduce((a, b) => a + b, 0);
    // 4-byte columns first, so that every Float32Array and Int32Array view is aligned.
    const wordBytes = AgentInfoColumnsBuilder.wordBytes(count, floatsPerAgent);
    const buffer = new ArrayBuffer(wordBytes + AgentInfoColumnsBuilder.byteBytes(count, layout));
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

/**
 * The columns of a valid agent list take about as many bytes as the list on the wire (every float
 * is on the wire); a list that would need many times more is left to the slow path's checks.
 */
const MAX_COLUMN_BYTES_PER_WIRE_BYTE = 16;

const { VARINT, FIXED32, LENGTH_DELIMITED } = WireType;

/**
 * The tags (field number and wire type in one) the decoder reads. It switches on whole tags, so a
 * known field that comes with another wire type falls to the default branch, where skipUnread
 * refuses it (protobufjs would read such bytes its own way: the slow path decides).
 *
 * These are constants of this module rather than imported names used in place: under tsx
 * (esbuild's CommonJS output, which npm run bench:comm runs the trainer through) each use of an
 * imported name is a getter call, ten times the cost of the switch itself.
 */
const Tag = {
  agentInfosEntry: tagOf(UnityRLOutputField.agentInfos, LENGTH_DELIMITED),
  sideChannel: tagOf(UnityRLOutputField.side_channel, LENGTH_DELIMITED),
  agentInfo: tagOf(AgentListField.value, LENGTH_DELIMITED),
  reward: tagOf(AgentInfoField.reward, FIXED32),
  done: tagOf(AgentInfoField.done, VARINT),
  maxStepReached: tagOf(AgentInfoField.max_step_reached, VARINT),
  id: tagOf(AgentInfoField.id, VARINT),
  actionMaskPacked: tagOf(AgentInfoField.action_mask, LENGTH_DELIMITED),
  actionMaskEntry: tagOf(AgentInfoField.action_mask, VARINT),
  observation: tagOf(AgentInfoField.observations, LENGTH_DELIMITED),
  groupId: tagOf(AgentInfoField.group_id, VARINT),
  groupReward: tagOf(AgentInfoField.group_reward, FIXED32),
  shapePacked: tagOf(ObservationField.shape, LENGTH_DELIMITED),
  shapeEntry: tagOf(ObservationField.shape, VARINT),
  compressionType: tagOf(ObservationField.compression_type, VARINT),
  compressedData: tagOf(ObservationField.compressed_data, LENGTH_DELIMITED),
  floatData: tagOf(ObservationField.float_data, LENGTH_DELIMITED),
  channelMappingPacked: tagOf(ObservationField.compressed_channel_mapping, LENGTH_DELIMITED),
  channelMappingEntry: tagOf(ObservationField.compressed_channel_mapping, VARINT),
  dimensionPropertiesPacked: tagOf(ObservationField.dimension_properties, LENGTH_DELIMITED),
  dimensionPropertiesEntry: tagOf(ObservationField.dimension_properties, VARINT),
  observationType: tagOf(ObservationField.observation_type, VARINT),
  name: tagOf(ObservationField.name, LENGTH_DELIMITED),
  floatsPacked: tagOf(FloatDataField.data, LENGTH_DELIMITED),
  float: tagOf(FloatDataField.data, FIXED32),
};

/** Each message's field numbers, for skipUnread. */
const Fields = {
  rlOutput: fieldNumberSet(UnityRLOutputField),
  agentList: fieldNumberSet(AgentListField),
  agentInfo: fieldNumberSet(AgentInfoField),
  observation: fieldNumberSet(ObservationField),
  floatData: fieldNumberSet(FloatDataField),
};

class StepOutputDecoder {
  private readonly r: WireReader;
  private readonly behaviors = new Map<string, AgentInfoColumns>();
  private sideChannel: Uint8Array = new Uint8Array(0);

  constructor(
    bytes: Uint8Array,
    private readonly layouts: ReadonlyMap<string, AgentInfoLayout>,
  ) {
    this.r = new WireReader(bytes);
  }

  readUnityMessage(): StepOutputMessage {
    const headerStatus = readStepMessage(this.r, UNITY_OUTPUT, (end) => this.readRlOutput(end));
    return { headerStatus, behaviors: this.behaviors, sideChannel: this.sideChannel };
  }

  private readRlOutput(end: number): void {
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      switch (tag) {
        case Tag.agentInfosEntry:
          this.readAgentInfosEntry(r.lengthDelimitedEnd(end));
          break;
        case Tag.sideChannel:
          this.sideChannel = r.lengthDelimited(end);
          break;
        default:
          r.skipUnread(tag, end, Fields.rlOutput);
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
    const r = this.r;
    const count = countListedAgents(r, start, end);
    // The count comes from the message: agents too short for their spec must not size the columns.
    if (AgentInfoColumnsBuilder.bytesFor(count, layout) > MAX_COLUMN_BYTES_PER_WIRE_BYTE * Math.max(end - start, 1024)) {
      throw new SlowPathNeeded('the agents carry fewer bytes than their observations need');
    }
    const columns = new AgentInfoColumnsBuilder(count, layout);
    let row = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag === Tag.agentInfo) {
        this.readAgentInfo(r.lengthDelimitedEnd(end), row++, columns);
      } else {
        r.skipUnread(tag, end, Fields.agentList);
      }
    }
    r.expectEnd(end);
    rejectNonFinite(columns.observations, 'an observation');
    return columns;
  }

  private readAgentInfo(end: number, row: number, columns: AgentInfoColumnsBuilder): void {
    const r = this.r;
    const maskSize = columns.layout.actionMaskSize;
    let reward = 0;
    let observationIndex = 0;
    let maskEntries = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      switch (tag) {
        case Tag.reward:
          reward = r.float();
          break;
        case Tag.done:
          columns.done[row] = r.bool() ? 1 : 0;
          break;
        case Tag.maxStepReached:
          columns.maxStepReached[row] = r.bool() ? 1 : 0;
          break;
        case Tag.id:
          columns.id[row] = r.int32();
          break;
        case Tag.actionMaskPacked:
        case Tag.actionMaskEntry:
          if (maskSize === null) {
            r.skip(tag & 7, end);
          } else {
            maskEntries = this.readActionMask(tag, end, columns.actionMask!, row * maskSize, maskEntries, maskSize);
          }
          break;
        case Tag.observation:
          if (observationIndex >= columns.observations.length) {
            throw new SlowPathNeeded('an agent sent more observations than its behavior has');
          }
          this.readObservation(r.lengthDelimitedEnd(end), row, observationIndex++, columns);
          break;
        case Tag.groupId:
          columns.groupId[row] = r.int32();
          break;
        case Tag.groupReward:
          columns.groupReward[row] = r.float();
          break;
        default:
          r.skipUnread(tag, end, Fields.agentInfo);
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
    tag: number,
    end: number,
    mask: Uint8Array,
    rowOffset: number,
    entries: number,
    maskSize: number,
  ): number {
    const r = this.r;
    if (tag === Tag.actionMaskEntry) {
      if (entries >= maskSize) throw new SlowPathNeeded('an action mask is too long');
      mask[rowOffset + entries] = r.bool() ? 1 : 0;
      return entries + 1;
    }
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
      switch (tag) {
        case Tag.shapePacked: {
          const packedEnd = r.lengthDelimitedEnd(end);
          while (r.pos < packedEnd) shapeEntries = matchDimension(r.int32(), shape, shapeEntries);
          r.expectEnd(packedEnd);
          break;
        }
        case Tag.shapeEntry:
          shapeEntries = matchDimension(r.int32(), shape, shapeEntries);
          break;
        case Tag.compressionType:
          if (r.int32() !== 0) throw new SlowPathNeeded('a compressed observation');
          break;
        case Tag.compressedData:
          throw new SlowPathNeeded('a compressed observation');
        case Tag.floatData:
          if (sawFloatData) throw new SlowPathNeeded('float_data came twice');
          sawFloatData = true;
          floats = this.readFloatData(r.lengthDelimitedEnd(end), columns.observations[index], row * size, size);
          break;
        case Tag.name:
        case Tag.channelMappingPacked:
        case Tag.channelMappingEntry:
        case Tag.dimensionPropertiesPacked:
        case Tag.dimensionPropertiesEntry:
        case Tag.observationType:
          // Part of the spec, read once when the behavior appeared.
          r.skip(tag & 7, end);
          break;
        default:
          r.skipUnread(tag, end, Fields.observation);
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

  /** Copies FloatData's floats (packed or not) into `out` from `offset`; returns how many came. */
  private readFloatData(end: number, out: Float32Array, offset: number, size: number): number {
    const r = this.r;
    let count = 0;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag === Tag.floatsPacked) {
        const packedEnd = r.lengthDelimitedEnd(end);
        const bytes = packedEnd - r.pos;
        if (bytes % 4 !== 0) throw new WireFormatError('packed floats of a length not a multiple of 4');
        if (count + bytes / 4 > size) throw new SlowPathNeeded('an observation holds too many floats');
        let at = offset + count;
        for (let p = r.pos; p < packedEnd; p += 4) out[at++] = r.floatAt(p);
        count += bytes / 4;
        r.pos = packedEnd;
      } else if (tag === Tag.float) {
        if (count >= size) throw new SlowPathNeeded('an observation holds too many floats');
        out[offset + count++] = r.float();
      } else {
        r.skipUnread(tag, end, Fields.floatData);
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
  /** A PNG-compressed observation: one image per agent (several PNGs back to back for stacked frames). */
  readonly pngImages?: readonly Uint8Array[];
  /** With pngImages: the observation channel each PNG channel feeds (compressed_channel_mapping). */
  readonly compressedChannelMapping?: readonly number[];
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
  const w = startStepMessage(UNITY_OUTPUT, unityOutputBytes);
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

// Bound once for the per-agent loops below, like Tag (see there).
const sizeOfInt32 = int32Size;
const sizeOfField = taggedFieldSize;

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
  private readonly floats: Float32Array | undefined;
  private readonly pngImages: readonly Uint8Array[] | undefined;

  constructor(observation: ObservationToSend) {
    const shape = observation.shape;
    const dimensionProperties = observation.dimensionProperties ?? [];
    const observationType = observation.observationType ?? 0;
    const nameBytes = utf8Bytes(observation.name ?? '');
    this.size = sizeOfShape(shape);
    this.floats = observation.floats;
    this.pngImages = observation.pngImages;
    const floatDataBytes = this.size > 0 ? taggedFieldSize(Tag.floatsPacked, this.size * 4) : 0;

    const shapeBytes = packedInt32Bytes(shape);
    let headBytes = shape.length > 0 ? taggedFieldSize(Tag.shapePacked, shapeBytes) : 0;
    if (this.pngImages !== undefined) {
      headBytes += varintSize(Tag.compressionType) + varintSize(CompressionTypeProto.PNG);
    } else {
      headBytes += taggedFieldSize(Tag.floatData, floatDataBytes) - (this.size > 0 ? this.size * 4 : 0);
    }
    const head = new WireWriter(headBytes);
    if (shape.length > 0) {
      head.tagged(Tag.shapePacked, shapeBytes);
      for (const dim of shape) head.int32(dim);
    }
    if (this.pngImages !== undefined) {
      head.uint32(Tag.compressionType);
      head.uint32(CompressionTypeProto.PNG);
    } else {
      head.tagged(Tag.floatData, floatDataBytes);
      if (this.size > 0) head.tagged(Tag.floatsPacked, this.size * 4);
    }
    this.head = head.finish();

    const channelMapping = observation.compressedChannelMapping ?? [];
    const channelMappingBytes = packedInt32Bytes(channelMapping);
    const dimensionPropertiesBytes = packedInt32Bytes(dimensionProperties);
    let tailBytes = 0;
    if (channelMapping.length > 0) tailBytes += taggedFieldSize(Tag.channelMappingPacked, channelMappingBytes);
    if (dimensionProperties.length > 0) tailBytes += taggedFieldSize(Tag.dimensionPropertiesPacked, dimensionPropertiesBytes);
    if (observationType !== 0) tailBytes += varintSize(Tag.observationType) + int32Size(observationType);
    if (nameBytes.length > 0) tailBytes += taggedFieldSize(Tag.name, nameBytes.length);
    const tail = new WireWriter(tailBytes);
    if (channelMapping.length > 0) {
      tail.tagged(Tag.channelMappingPacked, channelMappingBytes);
      for (const c of channelMapping) tail.int32(c);
    }
    if (dimensionProperties.length > 0) {
      tail.tagged(Tag.dimensionPropertiesPacked, dimensionPropertiesBytes);
      for (const d of dimensionProperties) tail.int32(d);
    }
    if (observationType !== 0) {
      tail.uint32(Tag.observationType);
      tail.int32(observationType);
    }
    if (nameBytes.length > 0) {
      tail.tagged(Tag.name, nameBytes.length);
      tail.raw(nameBytes);
    }
    this.tail = tail.finish();

    this.floatObservationBytes = this.head.length + this.size * 4 + this.tail.length;
  }

  /** Bytes of the ObservationProto of agent `row`. */
  bytesFor(row: number): number {
    if (this.pngImages !== undefined) {
      return this.head.length + sizeOfField(Tag.compressedData, this.pngImages[row].length) + this.tail.length;
    }
    return this.floatObservationBytes;
  }

  write(w: WireWriter, row: number): void {
    w.raw(this.head);
    if (this.pngImages !== undefined) {
      const image = this.pngImages[row];
      w.tagged(Tag.compressedData, image.length);
      w.raw(image);
    } else {
      const floats = this.floats!;
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
    const observations = this.observations;
    const maskFieldBytes = this.maskSize > 0 ? sizeOfField(Tag.actionMaskPacked, this.maskSize) : 0;
    let list = 0;
    for (let row = 0; row < count; row++) {
      // Every tag of an AgentInfoProto takes one byte.
      let bytes = maskFieldBytes;
      if (!isDefaultFloat(reward[row])) bytes += 5;
      if (done[row]) bytes += 2;
      if (maxStepReached[row]) bytes += 2;
      if (id[row] !== 0) bytes += 1 + sizeOfInt32(id[row]);
      for (let i = 0; i < observations.length; i++) bytes += sizeOfField(Tag.observation, observations[i].bytesFor(row));
      if (groupId[row] !== 0) bytes += 1 + sizeOfInt32(groupId[row]);
      if (!isDefaultFloat(groupReward[row])) bytes += 5;
      this.agentBytes[row] = bytes;
      list += sizeOfField(Tag.agentInfo, bytes);
    }
    this.listBytes = list;
    this.entryBytes = mapEntryBytes(this.nameBytes, list);
  }

  write(w: WireWriter): void {
    const { count, reward, done, maxStepReached, id } = this.agents;
    const groupId = this.agents.groupId ?? new Int32Array(count);
    const groupReward = this.agents.groupReward ?? new Float32Array(count);
    const mask = this.agents.actionMask ?? new Uint8Array(0);
    const maskSize = this.maskSize;
    const observations = this.observations;
    writeMapEntryStart(w, UnityRLOutputField.agentInfos, this.entryBytes, this.nameBytes, this.listBytes);
    for (let row = 0; row < count; row++) {
      w.tagged(Tag.agentInfo, this.agentBytes[row]);
      if (!isDefaultFloat(reward[row])) {
        w.uint32(Tag.reward);
        w.float(reward[row]);
      }
      if (done[row]) {
        w.uint32(Tag.done);
        w.uint32(1);
      }
      if (maxStepReached[row]) {
        w.uint32(Tag.maxStepReached);
        w.uint32(1);
      }
      if (id[row] !== 0) {
        w.uint32(Tag.id);
        w.int32(id[row]);
      }
      if (maskSize > 0) {
        w.tagged(Tag.actionMaskPacked, maskSize);
        for (let i = row * maskSize, stop = i + maskSize; i < stop; i++) w.uint32(mask[i] ? 1 : 0);
      }
      for (let i = 0; i < observations.length; i++) {
        w.tagged(Tag.observation, observations[i].bytesFor(row));
        observations[i].write(w, row);
      }
      if (groupId[row] !== 0) {
        w.uint32(Tag.groupId);
        w.int32(groupId[row]);
      }
      if (!isDefaultFloat(groupReward[row])) {
        w.uint32(Tag.groupReward);
        w.float(groupReward[row]);
      }
    }
  }
}
