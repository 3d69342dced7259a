/**
 * The low-level wire reader and writer against protobufjs' own Writer and Reader.
 */
import * as protobuf from 'protobufjs';
import {
  WireFormatError,
  WireReader,
  WireType,
  WireWriter,
  int32Size,
  lengthDelimitedFieldSize,
  tagOf,
  varintSize,
} from '../../../src/communicator/wire/protobuf-wire';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

const uint32Values = [0, 1, 127, 128, 255, 300, 16383, 16384, 2097151, 2097152, 268435455, 268435456, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1];
const int32Values = [0, 1, -1, 127, -128, 2 ** 31 - 1, -(2 ** 31), -123456789];

describe('WireWriter', () => {
  it.each(uint32Values)('writes varint %i as protobufjs does, in varintSize bytes', (value) => {
    const w = new WireWriter(varintSize(value));
    w.uint32(value);
    expect(hex(w.finish())).toBe(hex(protobuf.Writer.create().uint32(value).finish()));
  });

  it.each(int32Values)('writes int32 %i as protobufjs does (negative: 10 bytes)', (value) => {
    const w = new WireWriter(int32Size(value));
    w.int32(value);
    expect(hex(w.finish())).toBe(hex(protobuf.Writer.create().int32(value).finish()));
  });

  it('writes floats, tags and length-delimited fields as protobufjs does', () => {
    const payload = Uint8Array.from({ length: 200 }, (_, i) => i);
    const size = varintSize(tagOf(3, WireType.FIXED32)) + 4 + lengthDelimitedFieldSize(20, payload.length) + lengthDelimitedFieldSize(1, 3);
    const w = new WireWriter(size);
    w.tag(3, WireType.FIXED32);
    w.float(-1.5);
    w.bytesField(20, payload);
    w.bytesField(1, Uint8Array.of(7, 8, 9));
    const expected = protobuf.Writer.create().uint32(29).float(-1.5).uint32(162).bytes(payload).uint32(10).bytes(Uint8Array.of(7, 8, 9)).finish();
    expect(hex(w.finish())).toBe(hex(expected));
  });

  it('refuses to finish a message of another size than measured', () => {
    const w = new WireWriter(3);
    w.uint32(1);
    expect(() => w.finish()).toThrow(/wrote 1 bytes into a message measured at 3/);
  });
});

describe('WireReader', () => {
  it.each(uint32Values)('reads varint %i', (value) => {
    const r = new WireReader(protobuf.Writer.create().uint32(value).finish());
    expect(r.uint32()).toBe(value);
    expect(r.pos).toBe(varintSize(value));
  });

  it.each(int32Values)('reads int32 %i', (value) => {
    const r = new WireReader(protobuf.Writer.create().int32(value).finish());
    expect(r.int32()).toBe(value);
  });

  it('keeps the low 32 bits of a longer varint, as protobufjs does', () => {
    // 12345678901234 as a 7-byte varint, padded to 10 bytes with redundant continuation bytes.
    const varint64: number[] = [];
    for (let v = 12345678901234n; v > 0n; v >>= 7n) varint64.push(Number(v & 0x7fn) | 0x80);
    while (varint64.length < 10) varint64.push(0x80);
    varint64[9] = 0;
    const bytes = Uint8Array.from(varint64);
    expect(new WireReader(bytes).uint32()).toBe(new protobuf.Reader(bytes).uint32());
    expect(new WireReader(bytes).uint32()).toBe(Number(12345678901234n & 0xffffffffn));
  });

  it('skips every wire type but groups', () => {
    const bytes = protobuf.Writer.create().uint32(300).fixed64(5).bytes(Uint8Array.of(1, 2, 3)).float(1).uint32(7).finish();
    const r = new WireReader(bytes);
    r.skip(WireType.VARINT, bytes.length);
    r.skip(WireType.FIXED64, bytes.length);
    r.skip(WireType.LENGTH_DELIMITED, bytes.length);
    r.skip(WireType.FIXED32, bytes.length);
    expect(r.uint32()).toBe(7);
    expect(() => new WireReader(bytes).skip(WireType.START_GROUP, bytes.length)).toThrow(WireFormatError);
  });

  it('refuses reads past the end', () => {
    expect(() => new WireReader(Uint8Array.of(0x80, 0x80)).uint32()).toThrow(WireFormatError);
    expect(() => new WireReader(Uint8Array.of(1, 2)).float()).toThrow(WireFormatError);
    expect(() => new WireReader(Uint8Array.of(5, 1)).lengthDelimitedEnd(2)).toThrow(/declares 5 bytes/);
    const r = new WireReader(Uint8Array.of(0, 0, 0));
    r.pos = 3;
    expect(() => r.expectEnd(2)).toThrow(WireFormatError);
    expect(() => new WireReader(Uint8Array.of(1, 2, 3)).skip(WireType.FIXED32, 3)).toThrow(WireFormatError);
  });
});
