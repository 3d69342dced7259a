import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { tempDir } from '../helpers/paths';
import {
  EVENT_FILE_VERSION,
  EVENT_FILE_WRITER_NAME,
  EventFileWriter,
  encodeEvent,
  eventFileName,
  listEventFiles,
  readEventFile,
} from '../../src/stats/event-file';

const bytes = (hexText: string) => Uint8Array.from(hexText.split(/\s+/).filter(Boolean), (b) => parseInt(b, 16));

describe('event files', () => {
  it("are named as torch's SummaryWriter names them", () => {
    const first = eventFileName(1700000123.9, 'trainbox', 4242);
    const second = eventFileName(12.5, 'trainbox', 4242);
    expect(first).toMatch(/^events\.out\.tfevents\.1700000123\.trainbox\.4242\.(\d+)$/);
    expect(second).toMatch(/^events\.out\.tfevents\.0000000012\.trainbox\.4242\.(\d+)$/);
    // The last part counts the files this process opened.
    expect(Number(second.split('.').pop())).toBe(Number(first.split('.').pop()) + 1);
  });

  it('encode Event and Summary with TensorFlow field numbers', () => {
    // Event: wall_time (1, double) 1.5, step (2, varint) 12000, summary (5) { value (1) { tag (1)
    // "a", simple_value (2, float) 2.0 } }
    const scalar = encodeEvent({ wall_time: 1.5, step: 12000, summary: { value: [{ tag: 'a', simple_value: 2 }] } });
    expect(Uint8Array.from(scalar)).toEqual(
      bytes('09 00 00 00 00 00 00 f8 3f  10 e0 5d  2a 0a  0a 08  0a 01 61  15 00 00 00 40'),
    );
    // file_version is field 3; a zero step is left out.
    expect(Uint8Array.from(encodeEvent({ wall_time: 2, step: 0, file_version: 'x' }))).toEqual(
      bytes('09 00 00 00 00 00 00 00 40  1a 01 78'),
    );
  });

  it('start with the file version event, and show each batch only once flushed', () => {
    const dir = tempDir('event-file');
    let now = 1700000000.25;
    const writer = new EventFileWriter(path.join(dir, 'Behavior'), () => now);
    expect(path.dirname(writer.path)).toBe(path.join(dir, 'Behavior'));
    const name = path.basename(writer.path);
    expect(name.startsWith(`events.out.tfevents.1700000000.${os.hostname()}.${process.pid}.`)).toBe(true);
    expect(name.split('.').pop()).toMatch(/^\d+$/);
    expect(readEventFile(writer.path)).toEqual([
      {
        wall_time: 1700000000.25,
        step: 0,
        file_version: EVENT_FILE_VERSION,
        source_metadata: { writer: EVENT_FILE_WRITER_NAME },
      },
    ]);
    expect(EVENT_FILE_VERSION).toBe('brain.Event:2');

    now += 2;
    writer.add({ step: 3000, summary: { value: [{ tag: 'Environment/Cumulative Reward', simple_value: 0.5 }] } });
    writer.add({ step: 3000, wall_time: 5, summary: { value: [{ tag: 'Policy/Entropy', simple_value: 1.25 }] } });
    expect(readEventFile(writer.path)).toHaveLength(1);
    writer.flush();
    const events = readEventFile(writer.path);
    expect(events.slice(1)).toEqual([
      {
        wall_time: 1700000002.25,
        step: 3000,
        summary: { value: [{ tag: 'Environment/Cumulative Reward', simple_value: 0.5 }] },
      },
      { wall_time: 5, step: 3000, summary: { value: [{ tag: 'Policy/Entropy', simple_value: 1.25 }] } },
    ]);

    writer.add({ step: 6000, summary: { value: [{ tag: 'x', simple_value: 1 }] } });
    writer.close();
    expect(readEventFile(writer.path)).toHaveLength(4);
    expect(() => writer.add({ step: 1, summary: { value: [] } })).toThrow('is closed');
    expect(listEventFiles(path.join(dir, 'Behavior'))).toEqual([writer.path]);
  });

  it('refuse to read a corrupt file, naming it and the offset of the bad record', () => {
    const writer = new EventFileWriter(tempDir('event-file-corrupt'));
    writer.add({ step: 1, summary: { value: [{ tag: 'Losses/Value Loss', simple_value: 3 }] } });
    writer.close();
    const corrupt = fs.readFileSync(writer.path);
    // The second record starts after the first: 8 + 4 bytes of header, its data, 4 of CRC.
    const secondRecordOffset = 16 + Number(corrupt.readBigUInt64LE(0));
    corrupt[corrupt.length - 6] ^= 0xff; // inside the last record's data
    fs.writeFileSync(writer.path, corrupt);
    expect(() => readEventFile(writer.path)).toThrow(
      `${writer.path}: the CRC of the data does not match (corrupt file) ` +
        `in the record at byte offset ${secondRecordOffset}`,
    );
  });
});
