/**
 * AgentBuffer against the cases of upstream's test_buffer.py: a fake agent's 9 steps whose values
 * tell where they came from (100 * agent + 10 * step + field).
 */
import {
  AgentBuffer,
  BufferColumn,
  BufferException,
  BufferKey,
  RewardSignalKeys,
  nextObservationKey,
  observationKey,
} from '../../src/trainers/buffer';
import { SeededRandom } from '../../src/common/random';

const OBS = observationKey(0);
const ACTION = BufferKey.CONTINUOUS_ACTION;

function fakeBuffer(agent: number): AgentBuffer {
  const buffer = new AgentBuffer();
  for (let step = 0; step < 9; step++) {
    const base = 100 * agent + 10 * step;
    buffer.get(OBS).append([base + 1, base + 2, base + 3]);
    buffer.get(ACTION).append([base + 4, base + 5]);
  }
  return buffer;
}

/** Rows of a flat array, for readable expectations. */
function rowsOf(values: Float32Array, width: number): number[][] {
  const rows: number[][] = [];
  for (let i = 0; i < values.length; i += width) rows.push(Array.from(values.subarray(i, i + width)));
  return rows;
}

describe('keys', () => {
  it('are upstream names, numbered and per-signal keys in the prefix:suffix form', () => {
    expect(BufferKey.ACTION_MASK).toBe('action_mask');
    expect(BufferKey.ENVIRONMENT_REWARDS).toBe('environment_rewards');
    expect(BufferKey.DISCOUNTED_RETURNS).toBe('discounted_returns');
    expect(observationKey(2)).toBe('obs:2');
    expect(nextObservationKey(0)).toBe('next_obs:0');
    expect(RewardSignalKeys.advantage('extrinsic')).toBe('advantage:extrinsic');
    expect(RewardSignalKeys.returns('extrinsic')).toBe('returns:extrinsic');
    expect(RewardSignalKeys.rewards('gail')).toBe('rewards:gail');
  });
});

describe('BufferColumn', () => {
  it('grows past its first capacity and keeps every row', () => {
    const column = new BufferColumn('x');
    for (let i = 0; i < 100; i++) column.append([i, -i]);
    expect(column.length).toBe(100);
    expect(column.width).toBe(2);
    expect(Array.from(column.row(57))).toEqual([57, -57]);
    expect(column.rows.length).toBe(200);
  });

  it('refuses a row of another width, naming the column', () => {
    const column = new BufferColumn('obs:0');
    column.append([1, 2, 3]);
    expect(() => column.append([1, 2])).toThrow(/obs:0 holds rows of 3 values; got a row of 2/);
    expect(() => column.extend([1, 2, 3, 4])).toThrow(BufferException);
  });

  it('extends and sets from flat rows, one value per row by default', () => {
    const column = new BufferColumn('rewards');
    column.extend(Float32Array.from([1, 2, 3]));
    column.append(4);
    expect(Array.from(column.rows)).toEqual([1, 2, 3, 4]);
    column.set([5, 6]);
    expect(column.length).toBe(2);
    const wide = new BufferColumn('wide');
    wide.extend([1, 2, 3, 4], 2);
    expect(rowsOf(wide.rows, 2)).toEqual([[1, 2], [3, 4]]);
  });

  it('counts zero-width rows', () => {
    const column = new BufferColumn('discrete_action');
    column.append(new Int32Array(0));
    column.append([]);
    expect(column.length).toBe(2);
    expect(column.rows.length).toBe(0);
  });
});

describe('getBatch', () => {
  it('returns the newest rows, whole sequences, and overlapping windows as upstream', () => {
    const obs = fakeBuffer(1).get(OBS);
    expect(rowsOf(obs.getBatch(2, 1), 3)).toEqual([[171, 172, 173], [181, 182, 183]]);
    const two = fakeBuffer(2).get(OBS);
    expect(rowsOf(two.getBatch(2, 3), 3)).toEqual([
      [231, 232, 233], [241, 242, 243], [251, 252, 253],
      [261, 262, 263], [271, 272, 273], [281, 282, 283],
    ]);
    expect(rowsOf(two.getBatch(2, 3, false), 3)).toEqual([
      [251, 252, 253], [261, 262, 263], [271, 272, 273],
      [261, 262, 263], [271, 272, 273], [281, 282, 283],
    ]);
  });

  it('pads the last sequence after the rows with the last row times the padding value', () => {
    const obs = fakeBuffer(2).get(OBS);
    const padded = rowsOf(obs.getBatch(undefined, 4), 3);
    expect(padded.length).toBe(12);
    expect(padded[0]).toEqual([201, 202, 203]);
    expect(padded[8]).toEqual([281, 282, 283]);
    expect(padded.slice(9)).toEqual([[0, 0, 0], [0, 0, 0], [0, 0, 0]]);

    const mask = new BufferColumn(BufferKey.ACTION_MASK);
    mask.append([1, 0, 1], 1);
    mask.append([0, 1, 1], 1);
    mask.append([1, 1, 0], 1);
    expect(rowsOf(mask.getBatch(undefined, 2), 3)).toEqual([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 0]]);
  });

  it('refuses more sequences than the rows hold', () => {
    const obs = fakeBuffer(1).get(OBS);
    expect(() => obs.getBatch(4, 3)).toThrow(BufferException);
    expect(() => obs.getBatch(8, 3, false)).toThrow(BufferException);
    expect(obs.getBatch(3, 3).length).toBe(27);
  });
});

describe('AgentBuffer', () => {
  it('resequences two agents into one update buffer with padded sequences', () => {
    const update = new AgentBuffer();
    fakeBuffer(2).resequenceAndAppend(update, { trainingLength: 2 });
    fakeBuffer(3).resequenceAndAppend(update, { trainingLength: 2 });
    expect(update.get(ACTION).length).toBe(20);
    expect(update.get(ACTION).width).toBe(2);
    expect(update.numExperiences).toBe(20);
    const rows = rowsOf(update.get(ACTION).rows, 2);
    expect(rows[8]).toEqual([284, 285]);
    expect(rows[9]).toEqual([0, 0]); // agent 2's padding
    expect(rows[10]).toEqual([304, 305]);
  });

  it('refuses to resequence or shuffle columns of different lengths', () => {
    const buffer = fakeBuffer(1);
    buffer.get(BufferKey.DONE).append(0);
    expect(buffer.checkLength([OBS, ACTION])).toBe(true);
    expect(buffer.checkLength([OBS, BufferKey.DONE])).toBe(false);
    expect(buffer.checkLength([OBS, BufferKey.MASKS])).toBe(false);
    expect(() => buffer.resequenceAndAppend(new AgentBuffer())).toThrow(BufferException);
    expect(() => buffer.shuffle(1, () => 0.5)).toThrow(/not all of the same length/);
  });

  it('makes mini batches that share the parent memory', () => {
    const update = new AgentBuffer();
    fakeBuffer(2).resequenceAndAppend(update, { trainingLength: 2 });
    const batch = update.makeMiniBatch(2, 5);
    expect(batch.keys()).toEqual(update.keys());
    expect(batch.numExperiences).toBe(3);
    expect(rowsOf(batch.get(ACTION).rows, 2)).toEqual([[224, 225], [234, 235], [244, 245]]);
    update.get(ACTION).row(2)[0] = -1;
    expect(batch.get(ACTION).row(0)[0]).toBe(-1);
    expect(update.makeMiniBatch(8, 99).numExperiences).toBe(2);
  });

  it('adopts whole rows as a column on their own memory, and refuses a partial row naming the column', () => {
    const buffer = new AgentBuffer();
    const data = Float32Array.from([1, 2, 3, 4, 5, 6]);
    buffer.adopt('obs:0', data, 3);
    expect(buffer.numExperiences).toBe(2);
    expect(Array.from(buffer.get('obs:0').row(1))).toEqual([4, 5, 6]);
    data[0] = -1;
    expect(buffer.get('obs:0').row(0)[0]).toBe(-1);
    expect(() => buffer.adopt('obs:1', data, 4)).toThrow('Column obs:1: 6 values do not make whole rows of 4.');
  });

  it('samples whole sequences with replacement', () => {
    const update = new AgentBuffer();
    fakeBuffer(1).resequenceAndAppend(update, { trainingLength: 2 });
    fakeBuffer(2).resequenceAndAppend(update, { trainingLength: 2 });
    const random = new SeededRandom(7);
    const batch = update.sampleMiniBatch(4, 1, () => random.next());
    expect(batch.keys()).toEqual(update.keys());
    expect(batch.get(ACTION).length).toBe(4);
    for (let i = 0; i < 4; i++) {
      // Each sampled row is one experience: the action sits 3 above the observation's first value.
      expect(batch.get(ACTION).row(i)[0]).toBe(batch.get(OBS).row(i)[0] === 0 ? 0 : batch.get(OBS).row(i)[0] + 3);
    }
    // 20 rows hold one sequence of 19, which can only start at row 0.
    const long = update.sampleMiniBatch(20, 19, () => random.next());
    expect(long.get(ACTION).length).toBe(19);
    expect(long.get(ACTION).row(0)[0]).toBe(104);
  });

  it('truncates to the newest rows, in whole sequences', () => {
    const update = new AgentBuffer();
    fakeBuffer(1).resequenceAndAppend(update, { trainingLength: 2 });
    fakeBuffer(2).resequenceAndAppend(update, { trainingLength: 2 });
    update.truncate(2);
    expect(update.numExperiences).toBe(2);
    expect(rowsOf(update.get(ACTION).rows, 2)).toEqual([[284, 285], [0, 0]]);
    fakeBuffer(1).resequenceAndAppend(update, { trainingLength: 2 });
    update.truncate(4, 3);
    expect(update.numExperiences).toBe(3);
    expect(update.get(OBS).length).toBe(3);
  });

  it('shuffles the same way in every column, reproducibly for a seed', () => {
    const shuffled = (seed: number) => {
      const buffer = fakeBuffer(1);
      const random = new SeededRandom(seed);
      buffer.shuffle(1, () => random.next());
      return buffer;
    };
    const buffer = shuffled(3);
    const firsts = Array.from({ length: 9 }, (_, i) => buffer.get(OBS).row(i)[0]);
    expect([...firsts].sort((a, b) => a - b)).toEqual([101, 111, 121, 131, 141, 151, 161, 171, 181]);
    expect(firsts).not.toEqual([101, 111, 121, 131, 141, 151, 161, 171, 181]);
    for (let i = 0; i < 9; i++) expect(buffer.get(ACTION).row(i)[0]).toBe(firsts[i] + 3);
    expect(Array.from(shuffled(3).get(OBS).rows)).toEqual(Array.from(buffer.get(OBS).rows));
  });

  it('shuffles whole sequences and drops the rows past the last one, as upstream', () => {
    const buffer = fakeBuffer(1);
    const random = new SeededRandom(11);
    buffer.shuffle(2, () => random.next());
    expect(buffer.numExperiences).toBe(8);
    for (let i = 0; i < 8; i += 2) {
      const first = buffer.get(OBS).row(i)[0];
      expect((first - 101) % 20).toBe(0); // sequences start at even steps
      expect(buffer.get(OBS).row(i + 1)[0]).toBe(first + 10);
    }
  });

  it('empties every column on resetAgent', () => {
    const buffer = fakeBuffer(1);
    buffer.resetAgent();
    expect(buffer.numExperiences).toBe(0);
    expect(buffer.keys()).toEqual([OBS, ACTION]);
    expect(new AgentBuffer().numExperiences).toBe(0);
  });
});
