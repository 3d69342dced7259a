import { IncomingMessage } from '../../../src/communicator/side-channels/incoming-message';
import { OutgoingMessage } from '../../../src/communicator/side-channels/outgoing-message';
import { hex, toHex } from './hex';

describe('OutgoingMessage layout', () => {
  it('writes little-endian int32, float32, bool, ASCII strings and float lists', () => {
    const msg = new OutgoingMessage();
    msg.writeBool(true);
    msg.writeBool(false);
    msg.writeInt32(-2);
    msg.writeInt32(0x01020304);
    msg.writeFloat32(20);
    msg.writeString('ab');
    msg.writeFloat32List([0.5, -1]);
    expect(toHex(msg.buffer)).toBe(
      toHex(
        hex(
          '01 00' +
            ' fe ff ff ff' +
            ' 04 03 02 01' +
            ' 00 00 a0 41' +
            ' 02 00 00 00 61 62' +
            ' 02 00 00 00 00 00 00 3f 00 00 80 bf',
        ),
      ),
    );
  });

  it('writes an empty string and an empty list as a zero length only', () => {
    const msg = new OutgoingMessage();
    msg.writeString('');
    msg.writeFloat32List([]);
    expect(toHex(msg.buffer)).toBe('00 00 00 00 00 00 00 00');
  });

  it('grows past its initial capacity without losing bytes', () => {
    const msg = new OutgoingMessage();
    for (let i = 0; i < 1000; i++) msg.writeInt32(i);
    const view = new DataView(msg.buffer.buffer, msg.buffer.byteOffset, msg.buffer.byteLength);
    expect(msg.buffer.byteLength).toBe(4000);
    expect(view.getInt32(0, true)).toBe(0);
    expect(view.getInt32(4 * 999, true)).toBe(999);
  });

  it('appends raw bytes and replaces everything with setRawBytes', () => {
    const msg = new OutgoingMessage();
    msg.writeInt32(7);
    msg.writeRawBytes(hex('aa bb'));
    expect(toHex(msg.buffer)).toBe('07 00 00 00 aa bb');
    msg.setRawBytes(hex('01 02 03'));
    expect(toHex(msg.buffer)).toBe('01 02 03');
  });

  it('rejects values the other side cannot represent', () => {
    const msg = new OutgoingMessage();
    expect(() => msg.writeInt32(1.5)).toThrow(/not a 32-bit integer/);
    expect(() => msg.writeInt32(2 ** 31)).toThrow(/not a 32-bit integer/);
    expect(() => msg.writeString('café')).toThrow(/not ASCII/);
    expect(msg.buffer.byteLength).toBe(0);
  });
});

describe('IncomingMessage', () => {
  it('reads back what OutgoingMessage wrote', () => {
    const out = new OutgoingMessage();
    out.writeBool(true);
    out.writeInt32(-123456);
    out.writeFloat32(0.1);
    out.writeString('Agent/Reward');
    out.writeFloat32List([1, 2.5, -3]);
    out.writeBool(false);

    const msg = new IncomingMessage(out.buffer);
    expect(msg.readBool()).toBe(true);
    expect(msg.readInt32()).toBe(-123456);
    // Float32 precision: the value read is 0.1 rounded to the nearest float32.
    expect(msg.readFloat32()).toBe(Math.fround(0.1));
    expect(msg.readString()).toBe('Agent/Reward');
    expect(msg.readFloat32List()).toEqual([1, 2.5, -3]);
    expect(msg.readBool(true)).toBe(false);
    expect(msg.remaining).toBe(0);
  });

  it('decodes hand-written bytes', () => {
    const msg = new IncomingMessage(hex('03 00 00 00 6b 65 79  00 00 c0 3f  ff ff ff ff'));
    expect(msg.readString()).toBe('key');
    expect(msg.readFloat32()).toBe(1.5);
    expect(msg.readInt32()).toBe(-1);
  });

  it('returns the defaults once the payload is used up, as upstream does', () => {
    const msg = new IncomingMessage(hex('05 00 00 00'));
    expect(msg.readInt32()).toBe(5);
    expect(msg.readInt32()).toBe(0);
    expect(msg.readInt32(9)).toBe(9);
    expect(msg.readFloat32()).toBe(0);
    expect(msg.readFloat32(2.5)).toBe(2.5);
    expect(msg.readBool()).toBe(false);
    expect(msg.readBool(true)).toBe(true);
    expect(msg.readString()).toBe('');
    expect(msg.readString('x')).toBe('x');
    expect(msg.readFloat32List()).toEqual([]);
    expect(msg.readFloat32List([1])).toEqual([1]);
  });

  it('respects the view it is given inside a larger buffer', () => {
    const big = hex('ff ff 02 00 00 00 ff ff');
    const msg = new IncomingMessage(big.subarray(2, 6));
    expect(msg.readInt32()).toBe(2);
    expect(msg.readInt32(-7)).toBe(-7);
  });

  it('throws a clear error on a value cut short inside the payload', () => {
    expect(() => new IncomingMessage(hex('01 02')).readInt32()).toThrow(
      /truncated int32 at offset 0: needs 4 bytes but only 2 remain/,
    );
    expect(() => new IncomingMessage(hex('05 00 00 00 61 62')).readString()).toThrow(
      /truncated string of 5 bytes at offset 4/,
    );
    expect(() => new IncomingMessage(hex('ff ff ff 7f 00 00')).readFloat32List()).toThrow(
      /truncated list of 2147483647 float32 values/,
    );
    expect(() => new IncomingMessage(hex('ff ff ff ff')).readString()).toThrow(/negative length/);
    expect(() => new IncomingMessage(hex('01 00 00 00 e9')).readString()).toThrow(/not ASCII/);
  });

  it('readRawBytes returns a copy of the whole payload regardless of position', () => {
    const data = hex('01 00 00 00 02');
    const msg = new IncomingMessage(data);
    msg.readInt32();
    const raw = msg.readRawBytes();
    expect(toHex(raw)).toBe('01 00 00 00 02');
    raw[0] = 0x7f;
    expect(data[0]).toBe(1);
  });
});
