/**
 * The board's event reader decodes scalars straight from the bytes: on real files it must find
 * exactly what protobufjs's full decode of the same events finds (the project's reader), in any
 * field order, with negative steps, several values per event, non-scalar values and any tag text,
 * whole or a chunk at a time, and sampled from stretches of the files.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Writer } from 'protobufjs';
import { EventFileTail, sampleScalars } from '../../src/board/event-reader';
import { encodeEvent, readEventFile, type TensorboardEvent } from '../../src/stats/event-file';
import { encodeRecord } from '../../src/stats/tfrecord';
import { tempDir } from '../helpers/paths';

type Scalar = [string, number, number, number];

/** An Event with its fields in reverse order: summary (5) first, then step (2), then wall_time (1). */
function reversedEvent(tag: string, step: number, wallTime: number, value: number): Uint8Array {
  const valueBytes = Writer.create().uint32((1 << 3) | 2).string(tag).uint32((2 << 3) | 5).float(value).finish();
  const summary = Writer.create().uint32((1 << 3) | 2).bytes(valueBytes).finish();
  return Writer.create().uint32((5 << 3) | 2).bytes(summary).uint32((2 << 3) | 0).int64(step).uint32((1 << 3) | 1).double(wallTime).finish();
}

const EVENTS: TensorboardEvent[] = [
  { wall_time: 1700000000, step: 0, file_version: 'brain.Event:2' },
  { wall_time: 1700000001.25, step: 100, summary: { value: [{ tag: 'Environment/Cumulative Reward', simple_value: 1.5 }] } },
  // Several values, one of them a histogram (no simple_value: not a scalar), a text tensor, non-ASCII tags.
  {
    wall_time: 1700000002.5,
    step: 2 ** 40 + 7,
    summary: {
      value: [
        { tag: 'Policy/Entropy', simple_value: -0.25 },
        { tag: 'Histogram', histo: { min: 0, max: 1, num: 2, sum: 1, sum_squares: 1, bucket_limit: [1], bucket: [2] } },
        { tag: 'Étiquette/ラベル', simple_value: 3 },
        { tag: 'Hyperparameters/text_summary', metadata: { plugin_data: { plugin_name: 'text' } }, tensor: { dtype: 7, string_val: [new TextEncoder().encode('lr: 3e-4')] } },
      ],
    },
  },
  { wall_time: 1700000003, step: -5, summary: { value: [{ tag: 'Policy/Entropy', simple_value: 0.5 }] } },
];

/** What protobufjs's decode of the file finds, as (tag, step, wall time, value). */
function decodedByProtobuf(file: string): Scalar[] {
  return readEventFile(file).flatMap((event) =>
    (event.summary?.value ?? []).filter((v) => v.simple_value !== undefined).map((v): Scalar => [v.tag, event.step, event.wall_time, v.simple_value!]),
  );
}

function readAll(file: string, maxBytes?: number): { scalars: Scalar[]; tail: EventFileTail; reads: number } {
  const tail = new EventFileTail(file);
  const scalars: Scalar[] = [];
  let reads = 1;
  while (!tail.read((...scalar) => scalars.push(scalar), maxBytes)) reads++;
  return { scalars, tail, reads };
}

describe("the board's event reader", () => {
  const dir = tempDir('event-reader');
  const file = path.join(dir, 'events.out.tfevents.1700000000.host.1.0');
  const records = [...EVENTS.map(encodeEvent), reversedEvent('Losses/Value Loss', 300, 1700000004.5, 0.125)].map(encodeRecord);
  fs.writeFileSync(file, Buffer.concat(records));

  it("finds exactly the scalars protobufjs's full decode finds, in any field order", () => {
    const expected = decodedByProtobuf(file);
    expect(expected.map(([tag]) => tag)).toEqual(['Environment/Cumulative Reward', 'Policy/Entropy', 'Étiquette/ラベル', 'Policy/Entropy', 'Losses/Value Loss']);
    expect(expected.map(([, step]) => step)).toEqual([100, 2 ** 40 + 7, 2 ** 40 + 7, -5, 300]);
    const { scalars, tail } = readAll(file);
    expect(scalars).toEqual(expected);
    expect(tail.notes).toEqual([]);
    expect(tail.bytesRead).toBe(fs.statSync(file).size);
  });

  it('reads the same a chunk at a time, a record longer than a chunk included', () => {
    const { scalars, reads } = readAll(file, 40);
    expect(reads).toBeGreaterThan(3);
    expect(scalars).toEqual(decodedByProtobuf(file));
  });

  it('notes a record whose CRCs match but whose event is not protobuf, and reads on', () => {
    const damaged = path.join(dir, 'events.out.tfevents.1700000000.host.1.1');
    fs.writeFileSync(damaged, Buffer.concat([records[1], encodeRecord(Uint8Array.of(0x0a, 0x20, 0x01)), records[3]]));
    const { scalars, tail } = readAll(damaged);
    expect(scalars.map(([tag, step]) => [tag, step])).toEqual([
      ['Environment/Cumulative Reward', 100],
      ['Policy/Entropy', -5],
    ]);
    expect(tail.notes).toEqual([`${damaged}: the record at byte offset ${records[1].length} has matching CRCs but no readable event (a field runs past the end of its message); skipped`]);
  });

  it('samples stretches spread over several files, first and last records included, none twice', () => {
    const many = tempDir('event-reader-sample');
    const files = [0, 1].map((f) => {
      const name = path.join(many, `events.out.tfevents.170000000${f}.host.1.${f}`);
      const events = Array.from({ length: 1000 }, (_, i) => encodeRecord(encodeEvent({ wall_time: 1700000000 + i, step: (f * 1000 + i + 1) * 10, summary: { value: [{ tag: 'Reward', simple_value: i }] } })));
      fs.writeFileSync(name, Buffer.concat(events));
      return { path: name, size: fs.statSync(name).size };
    });
    const steps: number[] = [];
    sampleScalars(files, 8, 1024, (_tag, step) => steps.push(step));
    expect(steps.length).toBeGreaterThan(50);
    expect(steps.length).toBeLessThan(2000);
    expect(steps[0]).toBe(10);
    expect(steps.at(-1)).toBe(20000);
    expect(new Set(steps).size).toBe(steps.length);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    // Both files are sampled, stretch by stretch.
    expect(steps.some((step) => step > 5000 && step < 10000)).toBe(true);
    expect(steps.some((step) => step > 10000 && step < 15000)).toBe(true);
  });
});
