/**
 * What the hand-written step codecs share: how they give up. A fast path reads the messages a
 * running session sends at every step; for anything else it throws SlowPathNeeded, and the
 * caller decodes the same bytes with protobufjs instead, whose path keeps every clear error.
 */
import { WireFormatError, WireType } from './protobuf-wire';

/** Thrown inside a fast decoder when a message holds something it leaves to protobufjs. */
export class SlowPathNeeded extends Error {
  override name = 'SlowPathNeeded';
}

/** The result of a fast decoder: the message, or why it needs the slow path. */
export type FastDecoding<T> = { message: T } | { slowPathReason: string };

/** Runs a fast decoder; malformed bytes and SlowPathNeeded both send the message to the slow path. */
export function tryFastPath<T>(decode: () => T): FastDecoding<T> {
  try {
    return { message: decode() };
  } catch (error) {
    if (error instanceof SlowPathNeeded || error instanceof WireFormatError) {
      return { slowPathReason: error.message };
    }
    throw error;
  }
}

/**
 * Throws SlowPathNeeded unless a known field came with the wire type of its declaration
 * (protobufjs does not check it, so such bytes are left to it).
 */
export function expectWireType(wireType: number, expected: WireType, what: string): void {
  if (wireType !== expected) {
    throw new SlowPathNeeded(`${what} came with wire type ${wireType}`);
  }
}

// Strings are read as protobufjs reads them; bytes that are not UTF-8 go to the slow path.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function readUtf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new SlowPathNeeded('a string is not valid UTF-8');
  }
}
