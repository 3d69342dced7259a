import { RawBytesChannel } from '../../../src/communicator/side-channels/raw-bytes-channel';
import { SideChannelManager } from '../../../src/communicator/side-channels/side-channel-manager';
import { hex, toHex } from './hex';

const ID = '00112233-4455-6677-8899-aabbccddeeff';
const ID_BYTES = '33 22 11 00 55 44 77 66 88 99 aa bb cc dd ee ff';

describe('RawBytesChannel', () => {
  it('sends the bytes as they are, framed by the manager', () => {
    const channel = new RawBytesChannel(ID);
    const manager = new SideChannelManager([channel]);
    const data = hex('de ad be ef');
    channel.sendRawData(data);
    data[0] = 0; // the queued message is a copy
    expect(toHex(manager.generateSideChannelMessages())).toBe(
      `${ID_BYTES} 04 00 00 00 de ad be ef`,
    );
  });

  it('collects received payloads and drains them', () => {
    const channel = new RawBytesChannel(ID);
    const manager = new SideChannelManager([channel]);
    manager.processSideChannelMessage(
      hex(`${ID_BYTES} 02 00 00 00 01 02  ${ID_BYTES} 00 00 00 00  ${ID_BYTES} 01 00 00 00 ff`),
    );
    expect(channel.receivedMessages().map(toHex)).toEqual(['01 02', '', 'ff']);
    expect(channel.receivedMessages()).toEqual([]);
  });
});
