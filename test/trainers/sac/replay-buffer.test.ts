/** SAC's replay buffer: a ring of typed-array rows, uniform sampling, and its file. */
import * as fs from 'fs';
import * as path from 'path';
import { SeededRandom } from '../../../src/common/random';
import { ReplayBuffer, ReplayLayout, ReplayRows } from '../../../src/trainers/sac/replay-buffer';
import { tempDir } from '../../helpers/paths';

const LAYOUT: ReplayLayout = { observationSizes: [2, 1], continuousSize: 1, branchCount: 2, maskWidth: 5 };

/** `count` rows whose every value is derived from the row's id, so that a row can be recognized. */
function rows(firstId: number, count: number): ReplayRows {
  const ids = Array.from({ length: count }, (_, i) => firstId + i);
  return {
    count,
    observations: [Float32Array.from(ids.flatMap((id) => [id, id + 0.5])), Float32Array.from(ids)],
    nextObservations: [Float32Array.from(ids.flatMap((id) => [id + 1, id + 1.5])), Float32Array.from(ids, (id) => id + 1)],
    continuousActions: Float32Array.from(ids, (id) => -id),
    discreteActions: Int32Array.from(ids.flatMap((id) => [id % 3, id % 2])),
    actionMasks: Float32Array.from(ids.flatMap((id) => [1, id % 2, 1, 1, 0])),
    rewards: Float32Array.from(ids, (id) => id / 10),
    dones: Float32Array.from(ids, (id) => (id % 4 === 0 ? 1 : 0)),
  };
}

/** The id of each row of `batch`, checking that every column of the row belongs to it. */
function idsOf(batch: ReplayRows): number[] {
  const ids: number[] = [];
  const columns = (id: number) => {
    const row = rows(id, 1);
    return JSON.stringify([...row.observations, ...row.nextObservations, row.continuousActions, row.discreteActions, row.actionMasks, row.rewards, row.dones].map((a) => Array.from(a)));
  };
  for (let i = 0; i < batch.count; i++) {
    const id = batch.observations[1][i];
    const slice = (a: Float32Array | Int32Array, width: number) => Array.from(a.subarray(width * i, width * (i + 1)));
    const actual = JSON.stringify([
      slice(batch.observations[0], 2),
      slice(batch.observations[1], 1),
      slice(batch.nextObservations[0], 2),
      slice(batch.nextObservations[1], 1),
      slice(batch.continuousActions, 1),
      slice(batch.discreteActions, 2),
      slice(batch.actionMasks, 5),
      slice(batch.rewards, 1),
      slice(batch.dones, 1),
    ]);
    if (actual !== columns(id)) expect(actual).toBe(columns(id));
    ids.push(id);
  }
  return ids;
}

function allIds(buffer: ReplayBuffer): number[] {
  const file = path.join(tempDir('replay'), 'all.ckpt');
  buffer.save(file);
  const copy = new ReplayBuffer(LAYOUT, buffer.capacity);
  copy.load(file);
  const random = new SeededRandom(1);
  const seen = new Set(idsOf(copy.sample(300, () => random.next())));
  return [...seen].sort((a, b) => a - b);
}

describe('ReplayBuffer', () => {
  it('keeps whole rows, and only the newest `capacity` of them once full', () => {
    const buffer = new ReplayBuffer(LAYOUT, 10);
    buffer.add(rows(0, 4));
    expect(buffer.size).toBe(4);
    buffer.add(rows(4, 9));
    expect(buffer.size).toBe(10);
    expect(allIds(buffer)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('grows its columns as rows arrive, past its first allocation, and still wraps at its capacity', () => {
    const buffer = new ReplayBuffer(LAYOUT, 3000);
    for (let id = 0; id < 3500; id += 700) buffer.add(rows(id, 700));
    expect(buffer.size).toBe(3000);
    const random = new SeededRandom(3);
    const ids = new Set(idsOf(buffer.sample(40000, () => random.next())));
    expect(ids.size).toBe(3000);
    expect(Math.min(...ids)).toBe(500);
    expect(Math.max(...ids)).toBe(3499);
  });

  it('samples uniformly with replacement', () => {
    const buffer = new ReplayBuffer(LAYOUT, 8);
    buffer.add(rows(100, 8));
    const random = new SeededRandom(7);
    const counts = new Map<number, number>();
    for (const id of idsOf(buffer.sample(2000, () => random.next()))) counts.set(id, (counts.get(id) ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual([100, 101, 102, 103, 104, 105, 106, 107]);
    // 250 expected each; the standard deviation of a count is about 15.
    for (const count of counts.values()) expect(Math.abs(count - 250)).toBeLessThan(60);
  });

  it('saves its rows oldest first and loads them into a buffer of another capacity, keeping the newest', () => {
    const buffer = new ReplayBuffer(LAYOUT, 6);
    buffer.add(rows(0, 9)); // holds 3..8, the ring wrapped
    const file = path.join(tempDir('replay'), 'buffer.ckpt');
    buffer.save(file);
    const smaller = new ReplayBuffer(LAYOUT, 4);
    smaller.load(file);
    expect(smaller.size).toBe(4);
    expect(allIds(smaller)).toEqual([5, 6, 7, 8]);
  });

  it('refuses a file of another layout or kind, naming the file', () => {
    const file = path.join(tempDir('replay'), 'other.ckpt');
    const other = new ReplayBuffer({ ...LAYOUT, continuousSize: 2 }, 4);
    other.save(file);
    expect(() => new ReplayBuffer(LAYOUT, 4).load(file)).toThrow(`${file} holds experiences of another shape`);
    const notBuffer = path.join(tempDir('replay'), 'not.ckpt');
    fs.copyFileSync(path.resolve(__dirname, '../../../package.json'), notBuffer);
    expect(() => new ReplayBuffer(LAYOUT, 4).load(notBuffer)).toThrow(/not one of our checkpoints/);
  });

  it('refuses a file damaged after it was saved (its checksum), naming it and the way out', () => {
    const file = path.join(tempDir('replay'), 'damaged.ckpt');
    const buffer = new ReplayBuffer(LAYOUT, 64);
    buffer.add(rows(0, 64));
    buffer.save(file);
    const bytes = fs.readFileSync(file);
    bytes.fill(0, bytes.length - 600, bytes.length - 500);
    fs.writeFileSync(file, bytes);
    expect(() => new ReplayBuffer(LAYOUT, 64).load(file)).toThrow(
      `The replay buffer ${file} cannot be read: The file is damaged: its bytes no longer match the checksum written with them ` +
        '(the file was changed or cut short after it was saved). Delete it to resume with an empty replay buffer.',
    );
  });
});

describe('ReplayBuffer with memory (whole sequences)', () => {
  const SEQUENCE = 4;
  const MEMORY_LAYOUT: ReplayLayout = { ...LAYOUT, memorySize: 2, sequenceLength: SEQUENCE };

  /** rows(), with memories and masks that name the row too, the last `padding` rows masked out. */
  function sequenceRows(firstId: number, count: number, padding = 0): ReplayRows {
    const base = rows(firstId, count);
    const ids = Array.from({ length: count }, (_, i) => firstId + i);
    return {
      ...base,
      memories: Float32Array.from(ids.flatMap((id) => [id, -id])),
      criticMemories: Float32Array.from(ids.flatMap((id) => [2 * id, -2 * id])),
      masks: Float32Array.from(ids, (_, i) => (i < count - padding ? 1 : 0)),
    };
  }

  it('rounds its capacity down to whole sequences and refuses a piece of a sequence', () => {
    const buffer = new ReplayBuffer(MEMORY_LAYOUT, 10);
    expect(buffer.capacity).toBe(8);
    expect(buffer.sequenceLength).toBe(SEQUENCE);
    expect(() => buffer.add(sequenceRows(0, 6))).toThrow('The replay buffer takes whole sequences of 4 rows; got 6 rows.');
    expect(() => buffer.add(rows(0, 4))).toThrow(/need their memories/);
    expect(() => new ReplayBuffer(MEMORY_LAYOUT, 3)).toThrow(/at least one sequence of 4 experiences \(buffer_size 3\)/);
  });

  it('draws batch_size / sequence_length whole sequences, each from a sequence start, with every column of its rows', () => {
    const buffer = new ReplayBuffer(MEMORY_LAYOUT, 40);
    buffer.add(sequenceRows(0, 8));
    buffer.add(sequenceRows(8, 4, 3));
    const random = new SeededRandom(5);
    const batch = buffer.sample(18, () => random.next());
    // 18 / 4: four sequences.
    expect(batch.count).toBe(16);
    const ids = idsOf(batch);
    const starts = new Set<number>();
    for (let s = 0; s < 4; s++) {
      const first = ids[s * SEQUENCE];
      expect(first % SEQUENCE).toBe(0);
      expect(ids.slice(s * SEQUENCE, (s + 1) * SEQUENCE)).toEqual([first, first + 1, first + 2, first + 3]);
      starts.add(first);
      for (let t = 0; t < SEQUENCE; t++) {
        const i = s * SEQUENCE + t;
        const id = first + t;
        expect(Array.from(batch.memories!.subarray(2 * i, 2 * i + 2))).toEqual([id, -id]);
        expect(Array.from(batch.criticMemories!.subarray(2 * i, 2 * i + 2))).toEqual([2 * id, -2 * id]);
        expect(batch.masks![i]).toBe(id >= 9 ? 0 : 1);
      }
    }
    // Over many draws every sequence comes, and only whole ones.
    const many = buffer.sample(4000, () => random.next());
    const seen = new Set<number>();
    for (let i = 0; i < many.count; i += SEQUENCE) seen.add(many.observations[1][i]);
    expect([...seen].sort((a, b) => a - b)).toEqual([0, 4, 8]);
  });

  it('overwrites the oldest whole sequences once full, and saves and loads its memories and masks', () => {
    const buffer = new ReplayBuffer(MEMORY_LAYOUT, 8);
    buffer.add(sequenceRows(0, 4));
    buffer.add(sequenceRows(4, 8, 2));
    expect(buffer.size).toBe(8);
    const file = path.join(tempDir('replay'), 'memory.ckpt');
    buffer.save(file);
    const copy = new ReplayBuffer(MEMORY_LAYOUT, 8);
    copy.load(file);
    const random = new SeededRandom(2);
    const batch = copy.sample(400, () => random.next());
    const ids = new Set(idsOf(batch));
    expect([...ids].sort((a, b) => a - b)).toEqual([4, 5, 6, 7, 8, 9, 10, 11]);
    for (let i = 0; i < batch.count; i++) {
      const id = batch.observations[1][i];
      expect(batch.memories![2 * i]).toBe(id);
      expect(batch.masks![i]).toBe(id >= 10 ? 0 : 1);
    }
    // A buffer without memory is another shape.
    expect(() => new ReplayBuffer(LAYOUT, 8).load(file)).toThrow(/holds experiences of another shape/);
  });
});
