import {
  channelIdFromBytes,
  channelIdToBytes,
  normalizeChannelId,
} from '../../../src/communicator/side-channels/side-channel';
import { hex, toHex } from './hex';

// Expected bytes are those of Python's uuid.UUID(id).bytes_le (C#'s Guid.ToByteArray).
const CASES: Array<[string, string]> = [
  ['e951342c-4f7e-11ea-b238-784f4387d1f7', '2c 34 51 e9 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7'],
  ['534c891e-810f-11ea-a9d0-822485860400', '1e 89 4c 53 0f 81 ea 11 a9 d0 82 24 85 86 04 00'],
  ['60ccf7d0-4f7e-11ea-b238-784f4387d1f7', 'd0 f7 cc 60 7e 4f ea 11 b2 38 78 4f 43 87 d1 f7'],
  ['a1d8f7b7-cec8-50f9-b78b-d3e165a78520', 'b7 f7 d8 a1 c8 ce f9 50 b7 8b d3 e1 65 a7 85 20'],
  ['00112233-4455-6677-8899-aabbccddeeff', '33 22 11 00 55 44 77 66 88 99 aa bb cc dd ee ff'],
];

describe('channel id wire bytes (Guid.ToByteArray / uuid.bytes_le order)', () => {
  it.each(CASES)('%s', (id, bytes) => {
    expect(toHex(channelIdToBytes(id))).toBe(bytes);
    expect(channelIdFromBytes(hex(bytes))).toBe(id);
  });

  it('reads an id at an offset', () => {
    const buf = hex('ff ff 33 22 11 00 55 44 77 66 88 99 aa bb cc dd ee ff');
    expect(channelIdFromBytes(buf, 2)).toBe('00112233-4455-6677-8899-aabbccddeeff');
    expect(() => channelIdFromBytes(buf, 3)).toThrow(/needs 16 bytes at offset 3/);
  });

  it('normalizes to lower case and rejects what is not a UUID', () => {
    expect(normalizeChannelId('E951342C-4F7E-11EA-B238-784F4387D1F7')).toBe(
      'e951342c-4f7e-11ea-b238-784f4387d1f7',
    );
    expect(() => normalizeChannelId('e951342c4f7e11eab238784f4387d1f7')).toThrow(
      /Invalid side channel id/,
    );
    expect(() => normalizeChannelId('1000')).toThrow(/Invalid side channel id/);
  });
});
