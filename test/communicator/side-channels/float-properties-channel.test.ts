import {
  FLOAT_PROPERTIES_CHANNEL_ID,
  FloatPropertiesChannel,
} from '../../../src/communicator/side-channels/float-properties-channel';
import { SideChannelManager } from '../../../src/communicator/side-channels/side-channel-manager';
import { hex, toHex } from './hex';

describe('FloatPropertiesChannel', () => {
  it("uses upstream's default channel id, or the one given", () => {
    expect(new FloatPropertiesChannel().channelId).toBe('60ccf7d0-4f7e-11ea-b238-784f4387d1f7');
    expect(FLOAT_PROPERTIES_CHANNEL_ID).toBe('60ccf7d0-4f7e-11ea-b238-784f4387d1f7');
    expect(new FloatPropertiesChannel('00112233-4455-6677-8899-aabbccddeeff').channelId).toBe(
      '00112233-4455-6677-8899-aabbccddeeff',
    );
  });

  it('setProperty stores the value and queues key then float32', () => {
    const channel = new FloatPropertiesChannel();
    channel.setProperty('k', 2);
    expect(channel.getProperty('k')).toBe(2);
    expect(channel.drainQueuedMessages().map(toHex)).toEqual(['01 00 00 00 6b 00 00 00 40']);
  });

  it('updates the store from messages the environment sends', () => {
    const channel = new FloatPropertiesChannel();
    const manager = new SideChannelManager([channel]);
    manager.processSideChannelMessage(
      hex(
        'd0 f7 cc 60 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7  09 00 00 00' +
          '  01 00 00 00 6b  00 00 c0 3f' + // "k" = 1.5
          '  d0 f7 cc 60 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7  0a 00 00 00' +
          '  02 00 00 00 78 79  00 00 80 bf', // "xy" = -1
      ),
    );
    expect(channel.getProperty('k')).toBe(1.5);
    expect(channel.getProperty('xy')).toBe(-1);
    expect(channel.getProperty('missing')).toBeUndefined();
    expect(channel.listProperties()).toEqual(['k', 'xy']);
  });

  it('getPropertyDict returns a copy', () => {
    const channel = new FloatPropertiesChannel();
    channel.setProperty('a', 1);
    const dict = channel.getPropertyDict();
    expect(dict).toEqual({ a: 1 });
    dict.a = 5;
    expect(channel.getProperty('a')).toBe(1);
  });
});
