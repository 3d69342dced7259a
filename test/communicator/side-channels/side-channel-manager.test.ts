import { IncomingMessage } from '../../../src/communicator/side-channels/incoming-message';
import { OutgoingMessage } from '../../../src/communicator/side-channels/outgoing-message';
import { SideChannel } from '../../../src/communicator/side-channels/side-channel';
import { SideChannelManager } from '../../../src/communicator/side-channels/side-channel-manager';
import { EngineConfigurationChannel } from '../../../src/communicator/side-channels/engine-configuration-channel';
import { EnvironmentParametersChannel } from '../../../src/communicator/side-channels/environment-parameters-channel';
import { hex, toHex } from './hex';

/** Records the int32 of every message it gets, and can send one int32. */
class RecordingChannel extends SideChannel {
  readonly seen: number[] = [];
  constructor(id: string) {
    super(id);
  }
  override onMessageReceived(msg: IncomingMessage): void {
    this.seen.push(msg.readInt32());
  }
  send(value: number): void {
    const msg = new OutgoingMessage();
    msg.writeInt32(value);
    this.queueMessageToSend(msg);
  }
}

const ID_A = '00112233-4455-6677-8899-aabbccddeeff';
const ID_A_BYTES = '33 22 11 00 55 44 77 66 88 99 aa bb cc dd ee ff';
const ID_B = 'ffeeddcc-bbaa-9988-7766-554433221100';
const ID_B_BYTES = 'cc dd ee ff aa bb 88 99 77 66 55 44 33 22 11 00';
const ID_UNKNOWN_1 = '11111111-2222-3333-4444-555555555555';
const ID_UNKNOWN_1_BYTES = '11 11 11 11 22 22 33 33 44 44 55 55 55 55 55 55';
const ID_UNKNOWN_2_BYTES = '01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00';

describe('SideChannelManager.generateSideChannelMessages', () => {
  it('frames each message as id (bytes_le), int32 length, payload, channel by channel', () => {
    const engine = new EngineConfigurationChannel();
    const params = new EnvironmentParametersChannel();
    const manager = new SideChannelManager([engine, params]);
    // Queue on the second channel first: the blob still follows registration order.
    params.setFloatParameter('f', 0.5);
    engine.setConfigurationParameters({ timeScale: 20, targetFrameRate: -1 });

    const blob = manager.generateSideChannelMessages();
    const expected = hex(
      // engine configuration channel e951342c-4f7e-11ea-b238-784f4387d1f7
      '2c 34 51 e9 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7' +
        ' 08 00 00 00' + // 8 payload bytes
        ' 02 00 00 00  00 00 a0 41' + // TIME_SCALE, 20.0f
        ' 2c 34 51 e9 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7' +
        ' 08 00 00 00' +
        ' 03 00 00 00  ff ff ff ff' + // TARGET_FRAME_RATE, -1
        // environment parameters channel 534c891e-810f-11ea-a9d0-822485860400
        ' 1e 89 4c 53 0f 81 ea 11 a9 d0 82 24 85 86 04 00' +
        ' 0d 00 00 00' + // 13 payload bytes
        ' 01 00 00 00 66  00 00 00 00  00 00 00 3f', // "f", FLOAT, 0.5f
    );
    expect(toHex(blob)).toBe(toHex(expected));
  });

  it('drains the queues: a second call gives an empty Uint8Array', () => {
    const a = new RecordingChannel(ID_A);
    const manager = new SideChannelManager([a]);
    expect(manager.generateSideChannelMessages()).toEqual(new Uint8Array(0));
    a.send(5);
    expect(toHex(manager.generateSideChannelMessages())).toBe(
      `${ID_A_BYTES} 04 00 00 00 05 00 00 00`,
    );
    const again = manager.generateSideChannelMessages();
    expect(again).toBeInstanceOf(Uint8Array);
    expect(again.byteLength).toBe(0);
  });

  it('round-trips through processSideChannelMessage of another manager', () => {
    const sender = new RecordingChannel(ID_A);
    const receiver = new RecordingChannel(ID_A);
    sender.send(1);
    sender.send(-2);
    const blob = new SideChannelManager([sender]).generateSideChannelMessages();
    new SideChannelManager([receiver]).processSideChannelMessage(blob);
    expect(receiver.seen).toEqual([1, -2]);
  });
});

describe('SideChannelManager.processSideChannelMessage', () => {
  it('dispatches each message to the channel named by its id, in order', () => {
    const a = new RecordingChannel(ID_A);
    const b = new RecordingChannel(ID_B);
    const logger = jest.fn();
    const manager = new SideChannelManager([a, b], { logger });
    manager.processSideChannelMessage(
      hex(
        `${ID_B_BYTES} 04 00 00 00 0a 00 00 00` +
          ` ${ID_A_BYTES} 04 00 00 00 0b 00 00 00` +
          ` ${ID_B_BYTES} 04 00 00 00 0c 00 00 00` +
          ` ${ID_A_BYTES} 00 00 00 00`, // empty payload: readInt32 gives its default 0
      ),
    );
    expect(a.seen).toEqual([11, 0]);
    expect(b.seen).toEqual([10, 12]);
    expect(logger).not.toHaveBeenCalled();
  });

  it('does nothing with an empty blob', () => {
    const a = new RecordingChannel(ID_A);
    new SideChannelManager([a]).processSideChannelMessage(new Uint8Array(0));
    expect(a.seen).toEqual([]);
  });

  it('skips unknown ids and warns once per id', () => {
    const a = new RecordingChannel(ID_A);
    const logger = jest.fn();
    const manager = new SideChannelManager([a], { logger });
    const blob = hex(
      `${ID_UNKNOWN_1_BYTES} 02 00 00 00 aa bb` +
        ` ${ID_A_BYTES} 04 00 00 00 01 00 00 00` +
        ` ${ID_UNKNOWN_1_BYTES} 00 00 00 00` +
        ` ${ID_UNKNOWN_2_BYTES} 01 00 00 00 cc`,
    );
    manager.processSideChannelMessage(blob);
    manager.processSideChannelMessage(blob);
    expect(a.seen).toEqual([1, 1]);
    expect(logger).toHaveBeenCalledTimes(2);
    expect(logger.mock.calls[0][0]).toContain(ID_UNKNOWN_1);
    expect(logger.mock.calls[1][0]).toContain('00000001-0000-0000-0000-000000000000');
  });

  it('warns through console.warn by default', () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      new SideChannelManager([]).processSideChannelMessage(hex(`${ID_UNKNOWN_1_BYTES} 00 00 00 00`));
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0][0])).toContain(ID_UNKNOWN_1);
    } finally {
      warn.mockRestore();
    }
  });

  it('throws a clear error on a payload cut short', () => {
    const a = new RecordingChannel(ID_A);
    const manager = new SideChannelManager([a]);
    expect(() =>
      manager.processSideChannelMessage(hex(`${ID_A_BYTES} 08 00 00 00 01 00 00 00`)),
    ).toThrow(
      `Side-channel data is truncated: the message for channel ${ID_A} at offset 0 declares 8 payload bytes but only 4 remain of 24`,
    );
  });

  it('throws a clear error on a header cut short, after dispatching the whole frames before it', () => {
    const a = new RecordingChannel(ID_A);
    const manager = new SideChannelManager([a]);
    expect(() =>
      manager.processSideChannelMessage(
        hex(`${ID_A_BYTES} 04 00 00 00 03 00 00 00  33 22 11 00 55 44`),
      ),
    ).toThrow(/header at offset 24 needs 20 bytes .* but only 6 remain of 30/);
    expect(a.seen).toEqual([3]);
    expect(() => manager.processSideChannelMessage(hex(`${ID_A_BYTES} 04 00`))).toThrow(
      /offset 0 needs 20 bytes .* only 18 remain of 18/,
    );
  });

  it('throws on a negative payload length instead of looping', () => {
    const manager = new SideChannelManager([new RecordingChannel(ID_A)]);
    expect(() => manager.processSideChannelMessage(hex(`${ID_A_BYTES} ec ff ff ff`))).toThrow(
      /negative payload length \(-20\)/,
    );
  });
});

describe('SideChannelManager construction', () => {
  it('rejects two channels with the same id, naming the id', () => {
    expect(
      () =>
        new SideChannelManager([
          new RecordingChannel(ID_A),
          new RecordingChannel(ID_A.toUpperCase()),
        ]),
    ).toThrow(`Two side channels share the channel id ${ID_A}`);
  });

  it('finds a registered channel by id', () => {
    const b = new RecordingChannel(ID_B);
    const manager = new SideChannelManager([b]);
    expect(manager.getChannel(ID_B.toUpperCase())).toBe(b);
    expect(manager.getChannel(ID_A)).toBeUndefined();
  });
});
