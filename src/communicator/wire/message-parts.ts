/**
 * Pieces of UnityMessageProto that both step codecs (step-output.ts, step-input.ts) read or
 * write the same way: the envelope around the RL message, the header and the entries of a
 * map<string, message>.
 */
import { STATUS_OK } from '../messages';
import { SlowPathNeeded, expectWireType, readUtf8 } from './fast-path';
import {
  AgentListField,
  HeaderField,
  MapEntryField,
  UnityInputField,
  UnityMessageField,
  UnityOutputField,
} from './fields';
import {
  WireReader,
  WireType,
  WireWriter,
  fieldNumberSet,
  lengthDelimitedFieldSize,
  tagOf,
  varintSize,
} from './protobuf-wire';

const { LENGTH_DELIMITED } = WireType;

/**
 * The part of UnityMessageProto a step decoder reads, down to its RL message: the trainer's
 * unity_input { rl_input } or the environment's unity_output { rl_output }.
 */
export interface StepMessagePart {
  readonly name: string;
  readonly field: number;
  readonly tag: number;
  /** The tag of the other part, which the decoder skips. */
  readonly otherTag: number;
  /** The part's field numbers, for skipUnread. */
  readonly fields: number;
  readonly rlName: string;
  readonly rlTag: number;
  /** The part's initialization message, left to the slow path. */
  readonly initializationTag: number;
  readonly initializationReason: string;
}

const UNITY_INPUT_TAG = tagOf(UnityMessageField.unity_input, LENGTH_DELIMITED);
const UNITY_OUTPUT_TAG = tagOf(UnityMessageField.unity_output, LENGTH_DELIMITED);

/** The trainer's step message: unity_input { rl_input }. */
export const UNITY_INPUT: StepMessagePart = {
  name: 'unity_input',
  field: UnityMessageField.unity_input,
  tag: UNITY_INPUT_TAG,
  otherTag: UNITY_OUTPUT_TAG,
  fields: fieldNumberSet(UnityInputField),
  rlName: 'rl_input',
  rlTag: tagOf(UnityInputField.rl_input, LENGTH_DELIMITED),
  initializationTag: tagOf(UnityInputField.rl_initialization_input, LENGTH_DELIMITED),
  initializationReason: 'the message carries rl_initialization_input',
};

/** The environment's step message: unity_output { rl_output }. */
export const UNITY_OUTPUT: StepMessagePart = {
  name: 'unity_output',
  field: UnityMessageField.unity_output,
  tag: UNITY_OUTPUT_TAG,
  otherTag: UNITY_INPUT_TAG,
  fields: fieldNumberSet(UnityOutputField),
  rlName: 'rl_output',
  rlTag: tagOf(UnityOutputField.rl_output, LENGTH_DELIMITED),
  initializationTag: tagOf(UnityOutputField.rl_initialization_output, LENGTH_DELIMITED),
  initializationReason: 'the message carries rl_initialization_output (brain parameters)',
};

const HEADER_TAG = tagOf(UnityMessageField.header, LENGTH_DELIMITED);
const UNITY_MESSAGE_FIELDS = fieldNumberSet(UnityMessageField);

/**
 * Reads a whole UnityMessageProto from `r`: returns the header's status (null without a header)
 * and hands the RL message of `part` to `readRl`, which reads it up to the end it is given; the
 * other part is skipped. A header, part or RL message that comes twice, and an initialization
 * message, go to the slow path.
 */
export function readStepMessage(r: WireReader, part: StepMessagePart, readRl: (end: number) => void): number | null {
  const end = r.bytes.length;
  let headerStatus: number | null = null;
  let sawPart = false;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === HEADER_TAG) {
      if (headerStatus !== null) throw new SlowPathNeeded('the header came twice');
      headerStatus = readHeaderStatus(r, r.lengthDelimitedEnd(end));
    } else if (tag === part.tag) {
      if (sawPart) throw new SlowPathNeeded(`${part.name} came twice`);
      sawPart = true;
      readPart(r, r.lengthDelimitedEnd(end), part, readRl);
    } else if (tag === part.otherTag) {
      r.skip(LENGTH_DELIMITED, end);
    } else {
      r.skipUnread(tag, end, UNITY_MESSAGE_FIELDS);
    }
  }
  r.expectEnd(end);
  return headerStatus;
}

function readPart(r: WireReader, end: number, part: StepMessagePart, readRl: (end: number) => void): void {
  let sawRl = false;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === part.rlTag) {
      if (sawRl) throw new SlowPathNeeded(`${part.rlName} came twice`);
      sawRl = true;
      readRl(r.lengthDelimitedEnd(end));
    } else if (tag === part.initializationTag) {
      throw new SlowPathNeeded(part.initializationReason);
    } else {
      r.skipUnread(tag, end, part.fields);
    }
  }
  r.expectEnd(end);
}

/** Reads a HeaderProto that ends at `end` and returns its status (0 when absent). */
function readHeaderStatus(r: WireReader, end: number): number {
  let status = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === HeaderField.status) {
      expectWireType(tag & 7, WireType.VARINT, 'header.status');
      status = r.int32();
    } else {
      r.skip(tag & 7, end);
    }
  }
  r.expectEnd(end);
  return status;
}

/** One entry of a map<string, message>: its key, and where its value lies (-1 when it has none). */
export interface MapEntry {
  readonly key: string;
  readonly valueStart: number;
  readonly valueEnd: number;
}

/** Reads a map entry that ends at `end`: the key may come before or after the value, or be missing (''). */
export function readMapEntry(r: WireReader, end: number, valueName: string): MapEntry {
  let key = '';
  let valueStart = -1;
  let valueEnd = -1;
  while (r.pos < end) {
    const tag = r.uint32();
    const wireType = tag & 7;
    switch (tag >>> 3) {
      case MapEntryField.key:
        expectWireType(wireType, WireType.LENGTH_DELIMITED, 'a behavior name');
        key = readUtf8(r.lengthDelimited(end));
        break;
      case MapEntryField.value:
        expectWireType(wireType, WireType.LENGTH_DELIMITED, valueName);
        if (valueStart >= 0) throw new SlowPathNeeded('a map entry holds its value twice');
        valueEnd = r.lengthDelimitedEnd(end);
        valueStart = r.pos;
        r.pos = valueEnd;
        break;
      default:
        r.skip(wireType, end);
    }
  }
  r.expectEnd(end);
  return { key, valueStart, valueEnd };
}

const AGENT_LIST_VALUE_TAG = tagOf(AgentListField.value, LENGTH_DELIMITED);
const AGENT_LIST_FIELDS = fieldNumberSet(AgentListField);

/**
 * Counts the agents of the ListAgentInfoProto or ListAgentActionProto that lies from `start` to
 * `end`, and leaves `r` at `start`: a first pass, so that a decoder allocates its columns once.
 */
export function countListedAgents(r: WireReader, start: number, end: number): number {
  r.pos = start;
  let count = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === AGENT_LIST_VALUE_TAG) {
      count++;
      r.skip(LENGTH_DELIMITED, end);
    } else {
      r.skipUnread(tag, end, AGENT_LIST_FIELDS);
    }
  }
  r.expectEnd(end);
  r.pos = start;
  return count;
}

const OK_HEADER_BYTES = 1 + varintSize(STATUS_OK);
const OK_HEADER_FIELD_BYTES = lengthDelimitedFieldSize(UnityMessageField.header, OK_HEADER_BYTES);

/**
 * Starts writing UnityMessageProto { header { status: 200 }, <part> } whose part holds `partBytes`:
 * returns a writer sized for the whole message, with the header and the part's tag and length
 * written; the caller writes the part's fields.
 */
export function startStepMessage(part: StepMessagePart, partBytes: number): WireWriter {
  const w = new WireWriter(OK_HEADER_FIELD_BYTES + lengthDelimitedFieldSize(part.field, partBytes));
  w.lengthDelimited(UnityMessageField.header, OK_HEADER_BYTES);
  w.tag(HeaderField.status, WireType.VARINT);
  w.uint32(STATUS_OK);
  w.lengthDelimited(part.field, partBytes);
  return w;
}

/** Bytes of a map entry (not counting its own tag and length) with this key and a value of `valueBytes`. */
export function mapEntryBytes(key: Uint8Array, valueBytes: number): number {
  return lengthDelimitedFieldSize(MapEntryField.key, key.length) + lengthDelimitedFieldSize(MapEntryField.value, valueBytes);
}

/**
 * Writes a map entry as field `field`, up to its value's tag and length: the caller writes the
 * value's `valueBytes` bytes next. `entryBytes` is mapEntryBytes(key, valueBytes).
 */
export function writeMapEntryStart(
  w: WireWriter,
  field: number,
  entryBytes: number,
  key: Uint8Array,
  valueBytes: number,
): void {
  w.lengthDelimited(field, entryBytes);
  w.bytesField(MapEntryField.key, key);
  w.lengthDelimited(MapEntryField.value, valueBytes);
}
