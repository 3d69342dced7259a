import { IncomingMessage } from './incoming-message';
import { OutgoingMessage } from './outgoing-message';
import { SideChannel } from './side-channel';

/** Unity's FloatPropertiesChannel default id. */
export const FLOAT_PROPERTIES_CHANNEL_ID = '60ccf7d0-4f7e-11ea-b238-784f4387d1f7';

/**
 * A key-to-float store shared with Unity: either side may set a property, and each
 * message (string key, float32 value) updates the other side's copy.
 */
export class FloatPropertiesChannel extends SideChannel {
  private readonly properties = new Map<string, number>();

  constructor(channelId: string = FLOAT_PROPERTIES_CHANNEL_ID) {
    super(channelId);
  }

  override onMessageReceived(msg: IncomingMessage): void {
    const key = msg.readString();
    const value = msg.readFloat32();
    this.properties.set(key, value);
  }

  /** Stores the value here and queues it for Unity. */
  setProperty(key: string, value: number): void {
    const msg = new OutgoingMessage();
    msg.writeString(key);
    msg.writeFloat32(value);
    this.properties.set(key, value);
    this.queueMessageToSend(msg);
  }

  /** The property's value, or undefined if neither side has set it. */
  getProperty(key: string): number | undefined {
    return this.properties.get(key);
  }

  listProperties(): string[] {
    return [...this.properties.keys()];
  }

  /** A copy of all properties. */
  getPropertyDict(): Record<string, number> {
    return Object.fromEntries(this.properties);
  }
}
