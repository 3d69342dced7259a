/**
 * Pieces of UnityMessageProto that both step codecs (step-output.ts, step-input.ts) read or
 * write the same way: the header and the entries of a map<string, message>.
 */
import { STATUS_OK } from '../messages';
import { SlowPathNeeded, expectWireType, readUtf8 } from './fast-path';
import { HeaderField, MapEntryField, UnityMessageField } from './fields';
import { WireReader, WireType, WireWriter, lengthDelimitedFieldSize, varintSize } from './protobuf-wire';

/** Reads a HeaderProto that ends at `end` and returns its status (0 when absent). */
export function readHeaderStatus(r: WireReader, end: number): number {
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
      case MapEntryField.key: {
        expectWireType(wireType, WireType.LENGTH_DELIMITED, 'a behavior name');
        const keyEnd = r.lengthDelimitedEnd(end);
        key = readUtf8(r.slice(r.pos, keyEnd));
        r.pos = keyEnd;
        break;
      }
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

const OK_HEADER_BYTES = 1 + varintSize(STATUS_OK);

/** Bytes of the header field { status: 200 } of a UnityMessageProto. */
export const OK_HEADER_FIELD_BYTES = lengthDelimitedFieldSize(UnityMessageField.header, OK_HEADER_BYTES);

/** Writes the header field { status: 200 } of a UnityMessageProto. */
export function writeOkHeader(w: WireWriter): void {
  w.lengthDelimited(UnityMessageField.header, OK_HEADER_BYTES);
  w.tag(HeaderField.status, WireType.VARINT);
  w.uint32(STATUS_OK);
}
