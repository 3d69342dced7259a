/**
 * A protobuf encoder for tests that writes valid but unusual bytes for a message, driven by
 * protobufjs' reflection: what another protobuf implementation could legitimately send.
 *
 * It shuffles the fields (keeping the order of a repeated field's elements), writes repeated
 * scalars unpacked, packed or packed in several runs, writes default values explicitly or not,
 * pads varints with redundant continuation bytes, writes map entries value first or leaves a
 * default key out, and inserts unknown fields of every wire type. It shares no code with the
 * codecs under test.
 */
import * as protobuf from 'protobufjs';
import { SeededRandom } from '../../../src/common/random';

/** Seeded random draws for the tests (SeededRandom's sequence), so that a failing case can be replayed. */
export class Rng {
  private readonly random: SeededRandom;

  constructor(seed: number) {
    this.random = new SeededRandom(seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.random.next();
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** A float32 value: often small and exact, sometimes zero or negative zero. */
  float(): number {
    const r = this.next();
    if (r < 0.05) return 0;
    if (r < 0.08) return -0;
    if (r < 0.3) return this.int(-5, 5);
    return Math.fround((this.next() - 0.5) * 10 ** this.int(-3, 6));
  }

  /** An int32: often small, sometimes negative (10 bytes on the wire) or large. */
  int32(): number {
    const r = this.next();
    if (r < 0.1) return 0;
    if (r < 0.6) return this.int(1, 200);
    if (r < 0.8) return -this.int(1, 2 ** 31);
    return this.int(0, 2 ** 31 - 1);
  }
}

export interface MessyOptions {
  /** Probability of a shuffled field order, of unknown fields, and so on: 0 writes canonical bytes. */
  messiness: number;
}

type Bytes = number[];

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

const PACKABLE = new Set(['double', 'float', 'int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'fixed32', 'fixed64', 'sfixed32', 'sfixed64', 'bool']);

class Writer {
  constructor(
    private readonly rng: Rng,
    private readonly messiness: number,
  ) {}

  private messy(p = 1): boolean {
    return this.messiness > 0 && this.rng.chance(this.messiness * p);
  }

  varint(value: number | bigint, allowPadding = true): Bytes {
    let v = BigInt.asUintN(64, BigInt(value));
    const out: Bytes = [];
    while (v >= 0x80n) {
      out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    out.push(Number(v));
    // Redundant continuation bytes: a valid, non-minimal varint. protobufjs reads a varint longer
    // than 5 bytes as a 10-byte one, so padding stops at 5 bytes.
    if (allowPadding && this.messy(0.2) && out.length <= 3) {
      out[out.length - 1] |= 0x80;
      out.push(0x80, 0x00);
    }
    return out;
  }

  tag(field: number, wireType: number): Bytes {
    return this.varint((field << 3) | wireType, false);
  }

  lengthDelimited(field: number, payload: Bytes): Bytes {
    return [...this.tag(field, LENGTH_DELIMITED), ...this.varint(payload.length), ...payload];
  }

  scalar(type: string, value: unknown): { wireType: number; bytes: Bytes } {
    switch (type) {
      case 'float': {
        const b = Buffer.alloc(4);
        b.writeFloatLE(value as number);
        return { wireType: FIXED32, bytes: [...b] };
      }
      case 'bool':
        return { wireType: VARINT, bytes: this.varint(value ? (this.messy(0.3) ? 2 : 1) : 0) };
      case 'int32':
        return { wireType: VARINT, bytes: this.varint(BigInt(value as number)) };
      case 'string':
        return { wireType: LENGTH_DELIMITED, bytes: lengthPrefixed(this, [...Buffer.from(value as string, 'utf8')]) };
      case 'bytes':
        return { wireType: LENGTH_DELIMITED, bytes: lengthPrefixed(this, [...(value as Uint8Array)]) };
      default:
        throw new Error(`messy encoder: no support for ${type}`);
    }
  }

  unknownField(): Bytes {
    const field = this.rng.int(200, 5000);
    switch (this.rng.int(0, 3)) {
      case 0:
        return [...this.tag(field, VARINT), ...this.varint(this.rng.int(0, 2 ** 31))];
      case 1:
        return [...this.tag(field, FIXED64), 1, 2, 3, 4, 5, 6, 7, 8];
      case 2:
        return this.lengthDelimited(field, [0x08, 0x96, 0x01, 0x0a, 0x00]);
      default:
        return [...this.tag(field, FIXED32), 9, 8, 7, 6];
    }
  }

  message(type: protobuf.Type, message: Record<string, unknown>): Bytes {
    // Each field gives runs of bytes; runs of one field keep their order, fields interleave at random.
    const fields: Bytes[][] = [];
    for (const field of type.fieldsArray) {
      const value = message[field.name];
      if (value === undefined || value === null) continue;
      const runs = this.field(field, value);
      if (runs.length > 0) fields.push(runs);
    }
    if (this.messy(0.5)) {
      const count = this.rng.int(1, 3);
      for (let i = 0; i < count; i++) fields.push([this.unknownField()]);
    }
    return this.messy() ? this.interleave(fields) : fields.flat().flat();
  }

  private interleave(fields: Bytes[][]): Bytes {
    const out: Bytes = [];
    const queues = fields.map((runs) => [...runs]);
    while (queues.some((q) => q.length > 0)) {
      const live = queues.filter((q) => q.length > 0);
      out.push(...this.rng.pick(live).shift()!);
    }
    return out;
  }

  private field(field: protobuf.Field, value: unknown): Bytes[] {
    const resolved = field.resolvedType;
    if (field.map) {
      const mapField = field as unknown as protobuf.MapField;
      return Object.entries(value as Record<string, unknown>).map(([key, entryValue]) =>
        this.lengthDelimited(field.id, this.mapEntry(mapField, key, entryValue)),
      );
    }
    const typeName = resolved instanceof protobuf.Enum ? 'int32' : field.type;
    if (field.repeated) {
      const items = value as unknown[];
      if (items.length === 0) return [];
      if (resolved instanceof protobuf.Type) {
        return items.map((item) => this.lengthDelimited(field.id, this.message(resolved, item as Record<string, unknown>)));
      }
      if (PACKABLE.has(typeName)) return this.repeatedScalar(field.id, typeName, items);
      return items.map((item) => {
        const { wireType, bytes } = this.scalar(typeName, item);
        return [...this.tag(field.id, wireType), ...bytes];
      });
    }
    if (resolved instanceof protobuf.Type) {
      return [this.lengthDelimited(field.id, this.message(resolved, value as Record<string, unknown>))];
    }
    if (isDefault(typeName, value) && !this.messy(0.5) && !field.partOf) return [];
    const { wireType, bytes } = this.scalar(typeName, value);
    return [[...this.tag(field.id, wireType), ...bytes]];
  }

  private repeatedScalar(fieldNumber: number, typeName: string, items: unknown[]): Bytes[] {
    const style = this.messy() ? this.rng.pick(['unpacked', 'packed', 'runs', 'mixed']) : 'packed';
    const packed = (run: unknown[]): Bytes =>
      this.lengthDelimited(fieldNumber, run.flatMap((item) => this.scalar(typeName, item).bytes));
    const unpacked = (item: unknown): Bytes => {
      const { wireType, bytes } = this.scalar(typeName, item);
      return [...this.tag(fieldNumber, wireType), ...bytes];
    };
    switch (style) {
      case 'unpacked':
        return items.map(unpacked);
      case 'runs': {
        const cut = this.rng.int(0, items.length);
        return [packed(items.slice(0, cut)), packed(items.slice(cut))];
      }
      case 'mixed':
        return items.map((item) => (this.rng.chance(0.5) ? unpacked(item) : packed([item])));
      default:
        return [packed(items)];
    }
  }

  private mapEntry(field: protobuf.MapField, key: string, value: unknown): Bytes {
    const keyBytes = key === '' && this.messy(0.5) ? [] : [...this.tag(1, LENGTH_DELIMITED), ...lengthPrefixed(this, [...Buffer.from(key, 'utf8')])];
    const valueType = field.resolvedType as protobuf.Type;
    const valueBytes = value === null ? [] : this.lengthDelimited(2, this.message(valueType, value as Record<string, unknown>));
    return this.messy() ? [...valueBytes, ...keyBytes] : [...keyBytes, ...valueBytes];
  }
}

function lengthPrefixed(w: Writer, payload: Bytes): Bytes {
  return [...w.varint(payload.length), ...payload];
}

function isDefault(typeName: string, value: unknown): boolean {
  switch (typeName) {
    case 'float':
      return Object.is(value, 0);
    case 'bool':
      return value === false;
    case 'int32':
      return value === 0;
    case 'string':
      return value === '';
    case 'bytes':
      return (value as Uint8Array).length === 0;
    default:
      return false;
  }
}

/** Encodes `message` of `type` with random but valid choices; messiness 0 gives canonical bytes. */
export function messyEncode(
  type: protobuf.Type,
  message: Record<string, unknown>,
  rng: Rng,
  options: MessyOptions = { messiness: 0.5 },
): Uint8Array {
  return Uint8Array.from(new Writer(rng, options.messiness).message(type, message));
}
