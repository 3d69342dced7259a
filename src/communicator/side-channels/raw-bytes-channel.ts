import { IncomingMessage } from './incoming-message';
import { OutgoingMessage } from './outgoing-message';
import { SideChannel } from './side-channel';

/**
 * A user channel that carries uninterpreted bytes both ways; pair it with a RawBytesChannel
 * of the same id on the Unity side.
 */
export class RawBytesChannel extends SideChannel {
  private received: Uint8Array[] = [];

  constructor(channelId: string) {
    super(channelId);
  }

  override onMessageReceived(msg: IncomingMessage): void {
    this.received.push(msg.readRawBytes());
  }

  /** Queues `data` as one message (copied). */
  sendRawData(data: Uint8Array): void {
    const msg = new OutgoingMessage();
    msg.setRawBytes(data);
    this.queueMessageToSend(msg);
  }

  /** The messages received since the last call, oldest first; empties the list. */
  receivedMessages(): Uint8Array[] {
    const messages = this.received;
    this.received = [];
    return messages;
  }
}
