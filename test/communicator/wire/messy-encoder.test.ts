/**
 * The test encoder of unusual encodings must write the same message as protobufjs does, in
 * other bytes: otherwise the fast-path tests that use it would prove little.
 */
import { UnityMessage, UnityMessageProto, messageType } from '../../../src/communicator/messages';
import { Rng, messyEncode } from './messy-encoder';

const message: UnityMessageProto = {
  header: { status: 200 },
  unity_output: {
    rl_output: {
      agentInfos: {
        A: {
          value: [
            { id: -5, reward: 1.5, done: true, action_mask: [true, false], observations: [{ shape: [3], float_data: { data: [1, -0, 3] }, name: 'v' }] },
            { id: 7, group_id: 2, group_reward: -1, observations: [{ shape: [3], float_data: { data: [4, 5, 6] } }] },
          ],
        },
        '': { value: [{ id: 1 }] },
      },
      side_channel: Uint8Array.of(1, 2, 3),
    },
  },
};

const asObject = (bytes: Uint8Array) =>
  messageType('UnityMessageProto').toObject(UnityMessage.decode(Buffer.from(bytes)) as never, { defaults: true, arrays: true, objects: true });

describe('the messy test encoder', () => {
  it('writes the message protobufjs writes, in other valid bytes', () => {
    const canonical = UnityMessage.encode(message);
    const hexes = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) {
      const bytes = messyEncode(messageType('UnityMessageProto'), message as Record<string, unknown>, new Rng(seed), { messiness: 1 });
      expect(asObject(bytes)).toEqual(asObject(canonical));
      hexes.add(Buffer.from(bytes).toString('hex'));
    }
    expect(hexes.size).toBeGreaterThan(30);
  });

  it('writes canonical protobuf when not messy', () => {
    const bytes = messyEncode(messageType('UnityMessageProto'), message as Record<string, unknown>, new Rng(1), { messiness: 0 });
    expect(Buffer.from(bytes).toString('hex')).toBe(Buffer.from(UnityMessage.encode(message)).toString('hex'));
  });

  it('writes floats unpacked among its choices, and rarely the same bytes twice', () => {
    const all = Array.from({ length: 40 }, (_, seed) =>
      Buffer.from(messyEncode(messageType('UnityMessageProto'), message as Record<string, unknown>, new Rng(seed), { messiness: 1 })).toString('hex'),
    );
    // FloatData: an unpacked float is tag 0d followed by its 4 bytes.
    expect(all.some((h) => /0d0000803f/.test(h))).toBe(true);
    expect(all.some((h) => /0d00000080/.test(h))).toBe(true); // -0 unpacked
    expect(all.filter((h) => h !== all[0]).length).toBeGreaterThan(30);
  });
});
