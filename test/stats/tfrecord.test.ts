import { decodeRecords, encodeRecord, maskedCrc32c, scanRecords } from '../../src/stats/tfrecord';

const bytes = (hexText: string) => Uint8Array.from(hexText.split(/\s+/).filter(Boolean), (b) => parseInt(b, 16));
const ascii = (text: string) => new TextEncoder().encode(text);

describe('TFRecord framing', () => {
  it('masks CRC32C as TensorFlow does', () => {
    // CRC32C("123456789") is the standard check value 0xE3069283; rotated right by 15 it is
    // 0x2507C60D, plus 0xA282EAD8 gives 0xC78AB0E5.
    expect(maskedCrc32c(ascii('123456789'))).toBe(0xc78ab0e5);
    // CRC32C of nothing is 0, so the mask is the bare constant.
    expect(maskedCrc32c(new Uint8Array(0))).toBe(0xa282ead8);
  });

  it('frames a record byte for byte', () => {
    // length 9 (uint64 LE), masked CRC of those 8 bytes, the data, masked CRC of the data.
    expect(encodeRecord(ascii('123456789'))).toEqual(
      bytes('09 00 00 00 00 00 00 00  37 f9 71 39  31 32 33 34 35 36 37 38 39  e5 b0 8a c7'),
    );
    expect(encodeRecord(new Uint8Array(0))).toEqual(bytes('00 00 00 00 00 00 00 00  29 03 98 07  d8 ea 82 a2'));
  });

  it('reads back what it wrote, record by record', () => {
    const first = ascii('123456789');
    const second = Uint8Array.from({ length: 300 }, (_, i) => i % 251);
    const file = new Uint8Array([...encodeRecord(first), ...encodeRecord(new Uint8Array(0)), ...encodeRecord(second)]);
    expect(decodeRecords(file, 'f')).toEqual([first, new Uint8Array(0), second]);
  });

  it('names the offset of a record whose data or length CRC is wrong, or that is cut', () => {
    const good = encodeRecord(ascii('123456789'));
    const file = new Uint8Array([...good, ...good]);
    const dataCorrupt = file.slice();
    dataCorrupt[25 + 14] ^= 0x01; // a data byte of the second record (which starts at 25)
    expect(() => decodeRecords(dataCorrupt, 'run/events')).toThrow(
      'run/events: the CRC of the data does not match (corrupt file) in the record at byte offset 25',
    );
    const lengthCorrupt = file.slice();
    lengthCorrupt[0] = 0x08;
    expect(() => decodeRecords(lengthCorrupt, 'run/events')).toThrow(
      'the CRC of the length does not match (corrupt file) in the record at byte offset 0',
    );
    expect(() => decodeRecords(file.subarray(0, 25 + 20), 'f')).toThrow(
      'the file ends inside the data in the record at byte offset 25',
    );
    expect(() => decodeRecords(file.subarray(0, 25 + 5), 'f')).toThrow(
      'the file ends inside the length header in the record at byte offset 25',
    );
  });

  it('scans past damage: a bad data CRC skips its record, a bad length resumes at the next whole record, a cut tail waits', () => {
    const records = ['first', 'second', 'third', 'fourth'].map((text) => encodeRecord(ascii(text)));
    const offsets = records.map((_, i) => records.slice(0, i).reduce((sum, r) => sum + r.length, 0));
    const file = new Uint8Array([...records.flatMap((r) => [...r]), ...records[0].subarray(0, 7)]);
    file[offsets[1] + 12] ^= 0x01; // data of the second
    file[offsets[2]] ^= 0x01; // length of the third
    const scan = scanRecords(file);
    expect(scan.records).toEqual([ascii('first'), ascii('fourth')]);
    expect(scan.skipped).toEqual([
      { offset: offsets[1], bytes: records[1].length, reason: 'the CRC of the data does not match (corrupt file)' },
      { offset: offsets[2], bytes: records[2].length, reason: 'the CRC of the length does not match (corrupt file)' },
    ]);
    expect(scan).toMatchObject({ end: offsets[3] + records[3].length, cut: true });
    // Once the cut record is complete, reading from `end` finds it.
    const completed = new Uint8Array([...file.subarray(0, scan.end), ...records[0]]);
    expect(scanRecords(completed, scan.end)).toEqual({ records: [ascii('first')], skipped: [], end: completed.length, cut: false });
  });
});
