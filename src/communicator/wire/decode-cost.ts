/**
 * What decoding a message with protobufjs would cost, measured on the wire before it is decoded.
 *
 * Why: protobufjs builds an object per sub-message and an array element per repeated scalar. An
 * empty AgentInfoProto is 2 bytes on the wire and about a hundred bytes of heap once decoded, so
 * a message of nothing but empty entries multiplies its size many times over (a 32 MiB one would
 * take gigabytes). The walk below reads only tags and lengths, guided by the message types' own
 * declarations, adds up a conservative estimate and stops as soon as it passes the budget.
 */
import * as protobuf from 'protobufjs';
import { WireReader, WireType } from './protobuf-wire';
import { messageType } from '../messages';

/** Heap bytes of one decoded sub-message (an object with its fields), rounded up from measurements. */
const OBJECT_BYTES = 320;
/** Heap bytes of one element of a decoded repeated scalar (a JS array slot, with growth). */
const ARRAY_ELEMENT_BYTES = 16;
/** Heap bytes of a decoded string or bytes value besides its content. */
const VALUE_OVERHEAD_BYTES = 64;

/** A decoded message may cost at most this many times the message size limit. */
export const DECODE_BUDGET_FACTOR = 8;
/**
 * And at most this many times its own size, or DECODE_BUDGET_FLOOR_BYTES for small messages.
 * Estimated here: Unity's messages decode to about 4 to 40 times their size (floats become array
 * slots, every agent and observation an object; the most for agents of a single float), a
 * message of empty entries to about 160 times.
 */
export const DECODE_BUDGET_PER_BYTE = 64;
export const DECODE_BUDGET_FLOOR_BYTES = 16 * 1024 * 1024;

/** What decoding a message of `messageBytes` may cost: its own share, within the cap. */
export function decodeBudget(messageBytes: number, capBytes: number): number {
  return Math.min(capBytes, Math.max(DECODE_BUDGET_FLOOR_BYTES, DECODE_BUDGET_PER_BYTE * messageBytes));
}

export class DecodeCostError extends Error {
  override name = 'DecodeCostError';

  constructor(
    /** The estimate when the walk stopped: at least this much. */
    readonly estimatedBytes: number,
    readonly budgetBytes: number,
  ) {
    super(`decoding would take more than ${budgetBytes} bytes of memory`);
  }
}

/** Bytes of each element of a packed repeated scalar, by protobuf type; the varint types take 1 or more. */
const PACKED_ELEMENT_BYTES: Record<string, number> = {
  double: 8,
  fixed64: 8,
  sfixed64: 8,
  float: 4,
  fixed32: 4,
  sfixed32: 4,
};

/**
 * Walks `bytes` as a message of `typeName` (package communicator_objects) and throws
 * DecodeCostError when its decoded form would take more than `budgetBytes`. Malformed bytes
 * throw WireFormatError, as the decoder would.
 */
export function checkDecodeCost(bytes: Uint8Array, typeName: string, budgetBytes: number): void {
  const walk = new CostWalk(new WireReader(bytes), budgetBytes);
  walk.message(messageType(typeName), bytes.length);
}

class CostWalk {
  private estimate = 0;

  constructor(
    private readonly r: WireReader,
    private readonly budget: number,
  ) {}

  message(type: protobuf.Type, end: number): void {
    this.add(OBJECT_BYTES);
    const r = this.r;
    while (r.pos < end) {
      const tag = r.uint32();
      const field = type.fieldsById[tag >>> 3];
      const wireType = tag & 7;
      if (field === undefined || wireType !== WireType.LENGTH_DELIMITED) {
        // Scalars live in their message's object; unknown fields are skipped by the decoder too.
        if (field?.repeated) this.add(ARRAY_ELEMENT_BYTES);
        r.skip(wireType, end);
        continue;
      }
      const fieldEnd = r.lengthDelimitedEnd(end);
      if (field instanceof protobuf.MapField) {
        this.mapEntry(field, fieldEnd);
      } else if (field.resolvedType instanceof protobuf.Type) {
        this.message(field.resolvedType, fieldEnd);
      } else if (field.repeated && field.type !== 'string' && field.type !== 'bytes') {
        // A packed run: at most one element per byte, fewer for fixed-size types.
        this.add(ARRAY_ELEMENT_BYTES * Math.ceil((fieldEnd - r.pos) / (PACKED_ELEMENT_BYTES[field.type] ?? 1)));
      } else {
        // A string may double as UTF-16.
        this.add(VALUE_OVERHEAD_BYTES + 2 * (fieldEnd - r.pos));
      }
      r.pos = fieldEnd;
    }
    r.expectEnd(end);
  }

  /** One entry of a map: its key (a string here) and its value, a message or a scalar. */
  private mapEntry(field: protobuf.MapField, end: number): void {
    const r = this.r;
    const valueType = field.resolvedType;
    while (r.pos < end) {
      const tag = r.uint32();
      if (tag >>> 3 === 2 && (tag & 7) === WireType.LENGTH_DELIMITED && valueType instanceof protobuf.Type) {
        this.message(valueType, r.lengthDelimitedEnd(end));
      } else if ((tag & 7) === WireType.LENGTH_DELIMITED) {
        const valueEnd = r.lengthDelimitedEnd(end);
        this.add(VALUE_OVERHEAD_BYTES + 2 * (valueEnd - r.pos));
        r.pos = valueEnd;
      } else {
        r.skip(tag & 7, end);
      }
    }
    r.expectEnd(end);
  }

  private add(bytes: number): void {
    this.estimate += bytes;
    if (this.estimate > this.budget) throw new DecodeCostError(this.estimate, this.budget);
  }
}
