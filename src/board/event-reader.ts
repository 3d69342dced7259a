/**
 * Reads the scalars of TensorBoard event files as they grow: each read starts where the last one
 * stopped, every record's CRCs are checked (visitRecords), and damage becomes a note instead of
 * an error. A results folder can hold tens of millions of events, so the few fields a chart needs
 * are decoded straight from the file's bytes: no copy of a record, no protobuf message object, and
 * each tag's text decoded once per file.
 */
import * as fs from 'fs';
import { visitRecords } from '../stats/tfrecord';

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

/** Protobuf's wire format over a range of bytes, with bounds checked. */
class WireReader {
  pos = 0;
  end = 0;
  readonly view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  at(start: number, end: number): this {
    this.pos = start;
    this.end = end;
    return this;
  }

  byte(): number {
    if (this.pos >= this.end) throw new Error('a field runs past the end of its message');
    return this.bytes[this.pos++];
  }

  /** A varint that fits 32 bits (a field key, a length). */
  uint32(): number {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const byte = this.byte();
      value |= (byte & 0x7f) << shift;
      if (byte < 0x80) return value >>> 0;
    }
    throw new Error('a varint longer than 32 bits where a key or a length belongs');
  }

  /** An int64 varint as a number: exact from -2^53 to 2^53 (ten bytes, two's complement, when negative). */
  int64(): number {
    let low = 0;
    let high = 0;
    for (let i = 0; i < 10; i++) {
      const bits = this.byte();
      if (i < 4) low |= (bits & 0x7f) << (7 * i);
      else if (i === 4) {
        low |= (bits & 0x7f) << 28;
        high |= (bits & 0x7f) >> 4;
      } else high |= (bits & 0x7f) << (7 * i - 32);
      if (bits < 0x80) return (high | 0) * 2 ** 32 + (low >>> 0);
    }
    throw new Error('a varint longer than ten bytes');
  }

  /** The end of a length-delimited field starting here; pos moves to its first byte. */
  lengthDelimited(): number {
    const length = this.uint32();
    if (length > this.end - this.pos) throw new Error('a field runs past the end of its message');
    return this.pos + length;
  }

  double(): number {
    this.need(8);
    this.pos += 8;
    return this.view.getFloat64(this.pos - 8, true);
  }

  float(): number {
    this.need(4);
    this.pos += 4;
    return this.view.getFloat32(this.pos - 4, true);
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.int64();
    else if (wireType === FIXED64) this.need(8), (this.pos += 8);
    else if (wireType === LENGTH_DELIMITED) this.pos = this.lengthDelimited();
    else if (wireType === FIXED32) this.need(4), (this.pos += 4);
    else throw new Error(`wire type ${wireType}, which TensorBoard events do not use`);
  }

  private need(bytes: number): void {
    if (this.end - this.pos < bytes) throw new Error('a field runs past the end of its message');
  }
}

const utf8 = new TextDecoder();

interface TagName {
  bytes: Uint8Array;
  name: string;
  /** The tag that came after this one last time: summaries repeat their tags in one order. */
  next: TagName | null;
}

/** Tag names decoded once each, found again by their bytes: an event file repeats a few tags a million times. */
class TagNames {
  private readonly byHash = new Map<number, TagName[]>();
  private last: TagName | null = null;

  name(bytes: Uint8Array, start: number, end: number): string {
    const predicted = this.last?.next;
    const found = predicted != null && sameBytes(predicted.bytes, bytes, start, end) ? predicted : this.lookUp(bytes, start, end);
    if (this.last !== null) this.last.next = found;
    this.last = found;
    return found.name;
  }

  private lookUp(bytes: Uint8Array, start: number, end: number): TagName {
    // FNV-1a over the tag's bytes, kept to 30 bits: small integers are the keys a Map hashes fastest.
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193);
    hash &= 0x3fffffff;
    let entries = this.byHash.get(hash);
    if (entries === undefined) {
      entries = [];
      this.byHash.set(hash, entries);
    }
    for (const entry of entries) if (sameBytes(entry.bytes, bytes, start, end)) return entry;
    const copy = bytes.slice(start, end);
    const entry: TagName = { bytes: copy, name: utf8.decode(copy), next: null };
    entries.push(entry);
    return entry;
  }
}

function sameBytes(known: Uint8Array, bytes: Uint8Array, start: number, end: number): boolean {
  if (known.length !== end - start) return false;
  for (let i = 0; i < known.length; i++) if (known[i] !== bytes[start + i]) return false;
  return true;
}

/** Passes each simple_value of the Event messages in ranges of one byte array to a sink. */
class ScalarDecoder {
  private readonly tags = new TagNames();
  /** Where the Event's summaries lie (a message field may repeat; protobuf merges the copies). */
  private readonly summaryStarts: number[] = [];
  private readonly summaryEnds: number[] = [];
  private summaries = 0;

  /** The scalars of the Event message in `reader.bytes[start..end)`. */
  decode(reader: WireReader, start: number, end: number, sink: ScalarSink): void {
    reader.at(start, end);
    let wallTime = 0;
    let step = 0;
    this.summaries = 0;
    while (reader.pos < reader.end) {
      const key = reader.uint32();
      const field = key >>> 3;
      const wireType = key & 7;
      if (field === EVENT_WALL_TIME && wireType === FIXED64) wallTime = reader.double();
      else if (field === EVENT_STEP && wireType === VARINT) step = reader.int64();
      else if (field === EVENT_SUMMARY && wireType === LENGTH_DELIMITED) {
        const summaryEnd = reader.lengthDelimited();
        this.summaryStarts[this.summaries] = reader.pos;
        this.summaryEnds[this.summaries] = summaryEnd;
        this.summaries++;
        reader.pos = summaryEnd;
      } else reader.skip(wireType);
    }
    for (let s = 0; s < this.summaries; s++) {
      reader.at(this.summaryStarts[s], this.summaryEnds[s]);
      while (reader.pos < reader.end) {
        const key = reader.uint32();
        if (key >>> 3 !== SUMMARY_VALUE || (key & 7) !== LENGTH_DELIMITED) {
          reader.skip(key & 7);
          continue;
        }
        const valueEnd = reader.lengthDelimited();
        const summaryEnd = reader.end;
        this.decodeValue(reader.at(reader.pos, valueEnd), step, wallTime, sink);
        reader.at(valueEnd, summaryEnd);
      }
    }
  }

  private decodeValue(reader: WireReader, step: number, wallTime: number, sink: ScalarSink): void {
    let tag = '';
    let value: number | null = null;
    while (reader.pos < reader.end) {
      const key = reader.uint32();
      const field = key >>> 3;
      const wireType = key & 7;
      if (field === VALUE_TAG && wireType === LENGTH_DELIMITED) {
        const tagEnd = reader.lengthDelimited();
        tag = this.tags.name(reader.bytes, reader.pos, tagEnd);
        reader.pos = tagEnd;
      } else if (field === VALUE_SIMPLE_VALUE && wireType === FIXED32) value = reader.float();
      else reader.skip(wireType);
    }
    if (value !== null) sink(tag, step, wallTime, value);
  }
}

/** One event file, read a bit more at each call of read(). */
export class EventFileTail {
  /** Where the next read starts: the end of the last whole record. */
  private offset = 0;
  private readonly decoder = new ScalarDecoder();
  /** Damage found so far, in words, each naming the file and the byte offset. */
  readonly notes: string[] = [];
  /** Set while the file ends inside a record (a cut file, or a write under way). */
  cutAt: number | null = null;

  constructor(readonly filePath: string) {}

  /** Bytes read so far: up to the end of the last whole record. */
  get bytesRead(): number {
    return this.offset;
  }

  /**
   * Reads what was appended since the last call, about `maxBytes` of it at most (more when one
   * record is longer); returns true once it reached the end of the file.
   */
  read(sink: ScalarSink, maxBytes = Infinity): boolean {
    let fd: number;
    try {
      fd = fs.openSync(this.filePath, 'r');
    } catch (error) {
      this.note(`could not be read (${(error as Error).message})`);
      return true;
    }
    try {
      const size = fs.fstatSync(fd).size;
      for (let budget = maxBytes; ; budget *= 2) {
        const bytes = readFrom(fd, this.offset, Math.min(budget, size - this.offset));
        const reachedEnd = this.offset + bytes.length >= size;
        const reader = new WireReader(bytes);
        const { end, cut } = visitRecords(
          bytes,
          0,
          (dataStart, dataEnd) => {
            try {
              this.decoder.decode(reader, dataStart, dataEnd, sink);
            } catch (error) {
              this.note(`the record at byte offset ${this.offset + dataStart - 12} has matching CRCs but no readable event (${(error as Error).message}); skipped`);
            }
          },
          (skipped) => this.note(`${skipped.bytes} bytes from byte offset ${this.offset + skipped.offset} skipped: ${skipped.reason}`),
        );
        // A record cut by the budget rather than by the file's end is read again with a larger one.
        if (cut && !reachedEnd && end === 0) continue;
        this.offset += end;
        this.cutAt = cut && reachedEnd ? this.offset : null;
        return reachedEnd;
      }
    } catch (error) {
      this.note(`could not be read (${(error as Error).message})`);
      return true;
    } finally {
      fs.closeSync(fd);
    }
  }

  private note(text: string): void {
    this.notes.push(`${this.filePath}: ${text}`);
  }
}

/** Up to `length` bytes of an open file from `offset`. */
function readFrom(fd: number, offset: number, length: number): Buffer {
  const bytes = Buffer.allocUnsafe(Math.max(0, length));
  let read = 0;
  while (read < bytes.length) {
    const n = fs.readSync(fd, bytes, read, bytes.length - read, offset + read);
    if (n === 0) break;
    read += n;
  }
  return bytes.subarray(0, read);
}

/**
 * The scalars of up to `windows` stretches of `windowBytes` each, spread evenly over event files
 * read as one, first and last bytes included: a sample of a run of any size, read in milliseconds.
 * Each stretch starts at its first whole record and ends before the next stretch starts, so that
 * no point is passed twice; records cut by its ends, and damage, are left to the full read.
 */
export function sampleScalars(files: ReadonlyArray<{ path: string; size: number }>, windows: number, windowBytes: number, sink: ScalarSink): void {
  const total = files.reduce((sum, file) => sum + file.size, 0);
  const count = Math.min(windows, Math.ceil(total / windowBytes));
  const starts = Array.from({ length: count }, (_, w) => (count === 1 ? 0 : Math.floor((w * (total - windowBytes)) / (count - 1))));
  const decoder = new ScalarDecoder();
  let fileStart = 0;
  let f = 0;
  let fd: number | null = null;
  try {
    starts.forEach((start, w) => {
      while (f < files.length && start >= fileStart + files[f].size) {
        fileStart += files[f++].size;
        if (fd !== null) fs.closeSync(fd);
        fd = null;
      }
      if (f === files.length) return;
      const end = Math.min(start + windowBytes, starts[w + 1] ?? total, fileStart + files[f].size);
      let bytes: Buffer;
      try {
        fd ??= fs.openSync(files[f].path, 'r');
        bytes = readFrom(fd, start - fileStart, end - start);
      } catch {
        return; // Gone or unreadable: the full read says so in a note.
      }
      const reader = new WireReader(bytes);
      const decode = (dataStart: number, dataEnd: number) => {
        try {
          decoder.decode(reader, dataStart, dataEnd, sink);
        } catch {
          // Left to the full read's notes.
        }
      };
      visitRecords(bytes, 0, decode, () => undefined);
    });
  } finally {
    if (fd !== null) fs.closeSync(fd);
  }
}
