import { IncomingMessage } from './incoming-message';
import { OutgoingMessage } from './outgoing-message';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Checks a channel id and returns it in the canonical form: lower case, with dashes. */
export function normalizeChannelId(channelId: string): string {
  if (!UUID_PATTERN.test(channelId)) {
    throw new Error(
      `Invalid side channel id ${JSON.stringify(channelId)}: expected a UUID such as ` +
        `"e951342c-4f7e-11ea-b238-784f4387d1f7"`,
    );
  }
  return channelId.toLowerCase();
}

/*
 * On the wire a channel id is 16 bytes in the order of C#'s Guid.ToByteArray (Python's
 * uuid.bytes_le): the first three groups (4, 2 and 2 bytes) are little-endian, so their
 * bytes are reversed, and the last 8 bytes keep the order in which they are written.
 */
const GROUP_ORDER = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];

/** The 16 wire bytes of a channel id. */
export function channelIdToBytes(channelId: string): Uint8Array {
  const hex = normalizeChannelId(channelId).replace(/-/g, '');
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) {
    out[i] = parseInt(hex.slice(GROUP_ORDER[i] * 2, GROUP_ORDER[i] * 2 + 2), 16);
  }
  return out;
}

/** The channel id held in 16 wire bytes starting at `offset`. */
export function channelIdFromBytes(bytes: Uint8Array, offset = 0): string {
  if (offset < 0 || offset + 16 > bytes.byteLength) {
    throw new Error(
      `channelIdFromBytes: needs 16 bytes at offset ${offset} but the buffer has ${bytes.byteLength}`,
    );
  }
  const ordered = new Array<string>(16);
  for (let i = 0; i < 16; i++) {
    ordered[GROUP_ORDER[i]] = bytes[offset + i].toString(16).padStart(2, '0');
  }
  const hex = ordered.join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * One side channel: a typed conversation with the environment beside the agents' steps.
 * Subclasses decode what Unity sends in onMessageReceived and queue what they send; the
 * SideChannelManager collects the queue at the next exchange with the environment.
 */
export abstract class SideChannel {
  /** The channel's UUID, lower case with dashes; it must match the Unity side's. */
  readonly channelId: string;
  private pending: Uint8Array[] = [];

  protected constructor(channelId: string) {
    this.channelId = normalizeChannelId(channelId);
  }

  /** Called once per message addressed to this channel, in arrival order. */
  abstract onMessageReceived(msg: IncomingMessage): void;

  /** Queues a message for the next exchange. The bytes are copied, so `msg` may be reused. */
  protected queueMessageToSend(msg: OutgoingMessage): void {
    this.pending.push(msg.buffer.slice());
  }

  /** Whether anything waits to be sent. */
  get hasQueuedMessages(): boolean {
    return this.pending.length > 0;
  }

  /** Hands over the queued payloads in order and empties the queue (the manager calls this). */
  drainQueuedMessages(): Uint8Array[] {
    const drained = this.pending;
    this.pending = [];
    return drained;
  }
}
