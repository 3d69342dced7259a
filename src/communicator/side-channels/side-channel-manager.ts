import { IncomingMessage } from './incoming-message';
import { SideChannel, channelIdFromBytes, channelIdToBytes } from './side-channel';

/** Where the manager reports data for channels nobody registered. */
export type SideChannelLogger = (message: string) => void;

export interface SideChannelManagerOptions {
  /** Defaults to console.warn. */
  logger?: SideChannelLogger;
}

/** 16-byte channel id followed by the int32 payload length. */
const HEADER_BYTES = 20;

/**
 * Splits the side-channel blob of an environment message among the registered channels,
 * and joins the channels' queued messages into the blob of the next message we send.
 *
 * Framing, per message, little-endian: 16-byte channel id (Guid.ToByteArray order),
 * int32 payload length, payload. The blob is a plain concatenation of such messages.
 */
export class SideChannelManager {
  private readonly channels = new Map<string, SideChannel>();
  private readonly logger: SideChannelLogger;
  // Unknown ids are reported once each: Unity may send the same one every step.
  private readonly reportedUnknownIds = new Set<string>();

  constructor(channels: readonly SideChannel[] = [], options: SideChannelManagerOptions = {}) {
    this.logger = options.logger ?? ((message) => console.warn(message));
    for (const channel of channels) {
      if (this.channels.has(channel.channelId)) {
        throw new Error(
          `Two side channels share the channel id ${channel.channelId}; each id may be registered once`,
        );
      }
      this.channels.set(channel.channelId, channel);
    }
  }

  /** The registered channel with this id, if any. */
  getChannel(channelId: string): SideChannel | undefined {
    return this.channels.get(channelId.toLowerCase());
  }

  /**
   * Dispatches each message of a blob received from the environment to its channel.
   * A malformed blob throws before anything past the bad frame is dispatched.
   */
  processSideChannelMessage(data: Uint8Array): void {
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    let offset = 0;
    while (offset < data.byteLength) {
      const left = data.byteLength - offset;
      if (left < HEADER_BYTES) {
        throw new Error(
          `Side-channel data is truncated: the message header at offset ${offset} needs ` +
            `${HEADER_BYTES} bytes (16-byte channel id and int32 length) but only ${left} ` +
            `remain of ${data.byteLength}`,
        );
      }
      const channelId = channelIdFromBytes(data, offset);
      const length = view.getInt32(offset + 16, true);
      const payloadStart = offset + HEADER_BYTES;
      if (length < 0) {
        throw new Error(
          `Side-channel message for channel ${channelId} at offset ${offset} declares a ` +
            `negative payload length (${length})`,
        );
      }
      if (length > data.byteLength - payloadStart) {
        throw new Error(
          `Side-channel data is truncated: the message for channel ${channelId} at offset ` +
            `${offset} declares ${length} payload bytes but only ` +
            `${data.byteLength - payloadStart} remain of ${data.byteLength}`,
        );
      }
      const payload = data.subarray(payloadStart, payloadStart + length);
      offset = payloadStart + length;

      const channel = this.channels.get(channelId);
      if (channel) {
        channel.onMessageReceived(new IncomingMessage(payload));
      } else if (!this.reportedUnknownIds.has(channelId)) {
        this.reportedUnknownIds.add(channelId);
        this.logger(
          `Unknown side channel data received for channel id ${channelId}; ` +
            `it is skipped (register a side channel with this id to read it)`,
        );
      }
    }
  }

  /** Drains every channel's queue into one blob; an empty array when nothing is queued. */
  generateSideChannelMessages(): Uint8Array {
    const frames: Array<{ id: Uint8Array; payload: Uint8Array }> = [];
    let total = 0;
    for (const channel of this.channels.values()) {
      if (!channel.hasQueuedMessages) continue;
      const id = channelIdToBytes(channel.channelId);
      for (const payload of channel.drainQueuedMessages()) {
        frames.push({ id, payload });
        total += HEADER_BYTES + payload.byteLength;
      }
    }
    const blob = new Uint8Array(total);
    const view = new DataView(blob.buffer);
    let offset = 0;
    for (const { id, payload } of frames) {
      blob.set(id, offset);
      view.setInt32(offset + 16, payload.byteLength, true);
      blob.set(payload, offset + HEADER_BYTES);
      offset += HEADER_BYTES + payload.byteLength;
    }
    return blob;
  }
}
