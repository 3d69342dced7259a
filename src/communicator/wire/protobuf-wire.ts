/**
 * The protobuf wire format at its lowest level: varints, tags, fixed32 floats and
 * length-delimited fields, read from and written to plain byte arrays.
 *
 * protobufjs builds one JavaScript object per message, which for a step of a thousand agents means
 * thousands of objects and arrays. The step codecs next to this file use this module instead to
 * read and write the hot messages straight from and into typed arrays. Both ends of the link use
 * it: the trainer (src/env) and the engine side (src/sims).
 *
 * Encoding rules: https://protobuf.dev/programming-guides/encoding/
 */

/** How a field's value is laid out on the wire: the low 3 bits of its tag. */
export enum WireType {
  VARINT = 0,
  FIXED64 = 1,
  LENGTH_DELIMITED = 2,
  START_GROUP = 3,
  END_GROUP = 4,
  FIXED32 = 5,
}

/** Bytes that do not follow the wire format (truncated, a varint too long, a bad wire type...). */
export class WireFormatError extends Error {
  override name = 'WireFormatError';
}

/** The tag of a field: its number and wire type in one varint. */
export function tagOf(fieldNumber: number, wireType: WireType): number {
  return ((fieldNumber << 3) | wireType) >>> 0;
}

/** Reads fields one after another from `bytes`, from `pos` on. */
export class WireReader {
  pos = 0;
  private readonly view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** A varint as an unsigned 32-bit number; longer varints keep their low 32 bits, as protobufjs does. */
  uint32(): number {
    const pos = this.pos;
    if (pos < this.bytes.length) {
      const first = this.bytes[pos];
      if (first < 0x80) {
        this.pos = pos + 1;
        return first;
      }
    }
    return this.longVarint();
  }

  /** An int32 field (negative values are 10-byte varints). */
  int32(): number {
    return this.uint32() | 0;
  }

  bool(): boolean {
    return this.uint32() !== 0;
  }

  /** A little-endian float (wire type FIXED32). */
  float(): number {
    const pos = this.pos;
    if (pos + 4 > this.bytes.length) {
      throw new WireFormatError(`a fixed32 at offset ${pos} runs past the end of the message`);
    }
    this.pos = pos + 4;
    return this.view.getFloat32(pos, true);
  }

  /** Reads a float at `offset` without moving; the caller has checked the bounds. */
  floatAt(offset: number): number {
    return this.view.getFloat32(offset, true);
  }

  /** Reads the length prefix of a length-delimited field and returns the offset where the field ends. */
  lengthDelimitedEnd(limit: number): number {
    const length = this.uint32();
    const end = this.pos + length;
    if (end > limit) {
      throw new WireFormatError(
        `a length-delimited field at offset ${this.pos} declares ${length} bytes, past the end of its message`,
      );
    }
    return end;
  }

  /** Reads the value of a length-delimited field (its bytes, not copied). */
  lengthDelimited(limit: number): Uint8Array {
    const end = this.lengthDelimitedEnd(limit);
    const value = this.bytes.subarray(this.pos, end);
    this.pos = end;
    return value;
  }

  /** Skips the value of a field of this wire type (groups, long deprecated, are refused). */
  skip(wireType: number, limit: number): void {
    switch (wireType) {
      case WireType.VARINT:
        this.longVarint();
        return;
      case WireType.FIXED64:
        this.pos += 8;
        break;
      case WireType.LENGTH_DELIMITED:
        this.pos = this.lengthDelimitedEnd(limit);
        return;
      case WireType.FIXED32:
        this.pos += 4;
        break;
      default:
        throw new WireFormatError(`wire type ${wireType} at offset ${this.pos} is not supported here`);
    }
    if (this.pos > limit) {
      throw new WireFormatError(`a field runs past the end of its message at offset ${this.pos}`);
    }
  }

  /**
   * Skips a field its reader does not read. `knownFields` is the bit set of the message's field
   * numbers (all under 32 here): a known field that reached this point came with another wire
   * type than its declaration gives, and is refused.
   */
  skipUnread(tag: number, end: number, knownFields: number): void {
    const field = tag >>> 3;
    if (field < 32 && ((knownFields >>> field) & 1) === 1) {
      throw new WireFormatError(`field ${field} came with wire type ${tag & 7}, not the one it is declared with`);
    }
    this.skip(tag & 7, end);
  }

  /** Checks that the fields of a message ended exactly at its declared end. */
  expectEnd(end: number): void {
    if (this.pos !== end) {
      throw new WireFormatError(`a field runs past the end of its message (offset ${this.pos}, end ${end})`);
    }
  }

  /** The bytes from `start` to `end`, without copying. */
  slice(start: number, end: number): Uint8Array {
    return this.bytes.subarray(start, end);
  }

  private longVarint(): number {
    const bytes = this.bytes;
    let value = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= bytes.length) {
        throw new WireFormatError('a varint runs past the end of the message');
      }
      const byte = bytes[this.pos++];
      if (shift < 32) {
        value |= (byte & 0x7f) << shift;
      }
      if (byte < 0x80) {
        return value >>> 0;
      }
    }
    throw new WireFormatError(`a varint longer than 10 bytes ends at offset ${this.pos}`);
  }
}

/** The field numbers of a message (an enum of them), as a bit set for WireReader.skipUnread. */
export function fieldNumberSet(fields: Record<string, string | number>): number {
  let set = 0;
  for (const value of Object.values(fields)) {
    if (typeof value === 'number') {
      if (value >= 32) throw new Error(`field number ${value} does not fit a field number set`);
      set |= 1 << value;
    }
  }
  return set;
}

/** Bytes a varint of this unsigned value takes. */
export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** Bytes an int32 field's value takes: negative values are sign-extended to 10 bytes. */
export function int32Size(value: number): number {
  return value < 0 ? 10 : varintSize(value);
}

/** Bytes a whole length-delimited field takes: its tag, its length and its payload. */
export function lengthDelimitedFieldSize(fieldNumber: number, payloadBytes: number): number {
  return taggedFieldSize(tagOf(fieldNumber, WireType.LENGTH_DELIMITED), payloadBytes);
}

/** The same from the field's tag. */
export function taggedFieldSize(tag: number, payloadBytes: number): number {
  return varintSize(tag) + varintSize(payloadBytes) + payloadBytes;
}

/**
 * Writes fields into a buffer of a size computed up front: the codecs measure each message
 * first, so that every length prefix is known before its payload is written. `finish()` checks
 * that the measure was right.
 */
export class WireWriter {
  pos = 0;
  readonly bytes: Buffer;
  private readonly view: DataView;

  constructor(size: number) {
    this.bytes = Buffer.allocUnsafe(size);
    this.view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }

  uint32(value: number): void {
    const bytes = this.bytes;
    let pos = this.pos;
    let v = value >>> 0;
    while (v >= 0x80) {
      bytes[pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    bytes[pos++] = v;
    this.pos = pos;
  }

  /** An int32 value; a negative one takes 10 bytes, its sign extended to 64 bits. */
  int32(value: number): void {
    if (value >= 0) {
      this.uint32(value);
      return;
    }
    const bytes = this.bytes;
    let low = value >>> 0;
    for (let i = 0; i < 4; i++) {
      bytes[this.pos++] = (low & 0x7f) | 0x80;
      low >>>= 7;
    }
    // Bits 28-31 of the value, then ones up to bit 63.
    bytes[this.pos++] = (low & 0x0f) | 0xf0;
    for (let i = 0; i < 4; i++) bytes[this.pos++] = 0xff;
    bytes[this.pos++] = 0x01;
  }

  float(value: number): void {
    this.view.setFloat32(this.pos, value, true);
    this.pos += 4;
  }

  tag(fieldNumber: number, wireType: WireType): void {
    this.uint32(tagOf(fieldNumber, wireType));
  }

  /** The tag and length prefix of a length-delimited field; its payload follows. */
  lengthDelimited(fieldNumber: number, payloadBytes: number): void {
    this.tagged(tagOf(fieldNumber, WireType.LENGTH_DELIMITED), payloadBytes);
  }

  /** The same from the field's tag. */
  tagged(tag: number, payloadBytes: number): void {
    this.uint32(tag);
    this.uint32(payloadBytes);
  }

  /** Raw bytes, as the payload of a length-delimited field. */
  raw(bytes: Uint8Array): void {
    if (bytes.length > 32) {
      this.bytes.set(bytes, this.pos);
      this.pos += bytes.length;
    } else {
      // TypedArray.set costs more than a short loop for the few bytes of a name or a header.
      const out = this.bytes;
      let pos = this.pos;
      for (let i = 0; i < bytes.length; i++) out[pos++] = bytes[i];
      this.pos = pos;
    }
  }

  /** A whole bytes (or pre-encoded string or message) field. */
  bytesField(fieldNumber: number, bytes: Uint8Array): void {
    this.lengthDelimited(fieldNumber, bytes.length);
    this.raw(bytes);
  }

  /** The written message; throws when it does not fill exactly the size measured up front. */
  finish(): Buffer {
    if (this.pos !== this.bytes.length) {
      throw new Error(`WireWriter: wrote ${this.pos} bytes into a message measured at ${this.bytes.length}`);
    }
    return this.bytes;
  }
}

const utf8 = new TextEncoder();

/** A string as the UTF-8 bytes protobuf puts on the wire. */
export function utf8Bytes(text: string): Uint8Array {
  return utf8.encode(text);
}
