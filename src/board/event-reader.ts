/**
 * Reads the scalars of TensorBoard event files as they grow: each read starts where the last one
 * stopped, every record's CRCs are checked (scanRecords), and damage becomes a note instead of an
 * error. Only the fields a chart needs are decoded, with protobufjs's wire reader: a results
 * folder can hold millions of events, and decoding whole Event messages would take most of the
 * board's start.
 */
import * as fs from 'fs';
import { Reader } from 'protobufjs';
import { scanRecords } from '../stats/tfrecord';

/** Protobuf wire types. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** Field numbers of tensorboard.Event, Summary and Summary.Value (protos/tensorboard). */
const EVENT_WALL_TIME = 1;
const EVENT_STEP = 2;
const EVENT_SUMMARY = 5;
const SUMMARY_VALUE = 1;
const VALUE_TAG = 1;
const VALUE_SIMPLE_VALUE = 2;

export type ScalarSink = (tag: string, step: number, wallTime: number, value: number) => void;

/** Passes each simple_value of one Event message's summary to `sink`. */
export function readScalars(event: Uint8Array, sink: ScalarSink): void {
  const reader = Reader.create(event);
  let wallTime = 0;
  let step = 0;
  const summaries: Uint8Array[] = [];
  while (reader.pos < reader.len) {
    const key = reader.uint32();
    const field = key >>> 3;
    if (field === EVENT_WALL_TIME && (key & 7) === FIXED64) wallTime = reader.double();
    else if (field === EVENT_STEP && (key & 7) === VARINT) step = Number(reader.int64());
    else if (field === EVENT_SUMMARY && (key & 7) === LENGTH_DELIMITED) summaries.push(reader.bytes());
    else reader.skipType(key & 7);
  }
  for (const summary of summaries) {
    const values = Reader.create(summary);
    while (values.pos < values.len) {
      const key = values.uint32();
      if (key >>> 3 === SUMMARY_VALUE && (key & 7) === LENGTH_DELIMITED) readValue(values.bytes(), step, wallTime, sink);
      else values.skipType(key & 7);
    }
  }
}

function readValue(bytes: Uint8Array, step: number, wallTime: number, sink: ScalarSink): void {
  const reader = Reader.create(bytes);
  let tag = '';
  let value: number | null = null;
  while (reader.pos < reader.len) {
    const key = reader.uint32();
    const field = key >>> 3;
    if (field === VALUE_TAG && (key & 7) === LENGTH_DELIMITED) tag = reader.string();
    else if (field === VALUE_SIMPLE_VALUE && (key & 7) === FIXED32) value = reader.float();
    else reader.skipType(key & 7);
  }
  if (value !== null) sink(tag, step, wallTime, value);
}

/** One event file, read a bit more at each call of read(). */
export class EventFileTail {
  /** Where the next read starts: the end of the last whole record. */
  private offset = 0;
  /** Damage found so far, in words, each naming the file and the byte offset. */
  readonly notes: string[] = [];
  /** Set while the file ends inside a record (a cut file, or a write under way). */
  cutAt: number | null = null;

  constructor(readonly filePath: string) {}

  /** Reads what was appended since the last call; returns how many scalars it passed to `sink`. */
  read(sink: ScalarSink): number {
    let bytes: Buffer;
    try {
      bytes = readFrom(this.filePath, this.offset);
    } catch (error) {
      this.note(`could not be read (${(error as Error).message})`);
      return 0;
    }
    const scan = scanRecords(bytes);
    let count = 0;
    const counting: ScalarSink = (...point) => {
      count++;
      sink(...point);
    };
    for (const record of scan.records) {
      try {
        readScalars(record, counting);
      } catch (error) {
        this.note(`a record whose CRCs match holds no readable event (${(error as Error).message}); skipped`);
      }
    }
    for (const skipped of scan.skipped) {
      this.note(`${skipped.bytes} bytes from byte offset ${this.offset + skipped.offset} skipped: ${skipped.reason}`);
    }
    this.offset += scan.end;
    this.cutAt = scan.cut ? this.offset : null;
    return count;
  }

  private note(text: string): void {
    this.notes.push(`${this.filePath}: ${text}`);
  }
}

/** The bytes of a file from `offset` to its current end. */
function readFrom(filePath: string, offset: number): Buffer {
  const fd = fs.openSync(filePath, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const bytes = Buffer.alloc(Math.max(0, size - offset));
    let read = 0;
    while (read < bytes.length) {
      const n = fs.readSync(fd, bytes, read, bytes.length - read, offset + read);
      if (n === 0) break;
      read += n;
    }
    return bytes.subarray(0, read);
  } finally {
    fs.closeSync(fd);
  }
}
