/**
 * The training data of one agent or of a whole update: named columns of fixed-width float32 rows,
 * as upstream's AgentBuffer (buffer.py). Row t of every column belongs to the same experience.
 *
 * Keys are upstream's: BufferKey values for the plain fields, and "prefix:suffix" strings for the
 * numbered observations and the per-reward-signal fields (upstream's AgentBuffer._encode_key form,
 * e.g. "obs:0", "next_obs:0", "advantage:extrinsic").
 */

/**
 * The plain fields (upstream's BufferKey). The group fields hold one slot per groupmate: a
 * trajectory has as many slots as its most groupmates at a step, an update buffer as many as its
 * trajectories' most (padGroupSlots), absent groupmates' slots padded (group_obs with NaN, as
 * upstream's padded_to_batch; actions and rewards with 0).
 */
export const BufferKey = {
  ACTION_MASK: 'action_mask',
  CONTINUOUS_ACTION: 'continuous_action',
  NEXT_CONT_ACTION: 'next_continuous_action',
  CONTINUOUS_LOG_PROBS: 'continuous_log_probs',
  DISCRETE_ACTION: 'discrete_action',
  NEXT_DISC_ACTION: 'next_discrete_action',
  DISCRETE_LOG_PROBS: 'discrete_log_probs',
  DONE: 'done',
  ENVIRONMENT_REWARDS: 'environment_rewards',
  MASKS: 'masks',
  MEMORY: 'memory',
  CRITIC_MEMORY: 'critic_memory',
  PREV_ACTION: 'prev_action',
  ADVANTAGES: 'advantages',
  DISCOUNTED_RETURNS: 'discounted_returns',
  GROUP_REWARD: 'group_reward',
  GROUPMATE_REWARDS: 'groupmate_reward',
  GROUP_CONTINUOUS_ACTION: 'group_continuous_action',
  // Upstream's value, its spelling kept.
  GROUP_DISCRETE_ACTION: 'group_discrete_aaction',
  BASELINE_MEMORY: 'poca_baseline_memory',
} as const;

/** Prefixes of the numbered observation fields (upstream's ObservationKeyPrefix). */
export const ObservationKeyPrefix = {
  OBSERVATION: 'obs',
  NEXT_OBSERVATION: 'next_obs',
  GROUP_OBSERVATION: 'group_obs',
} as const;

/** Prefixes of the fields kept per reward signal (upstream's RewardSignalKeyPrefix). */
export const RewardSignalKeyPrefix = {
  REWARDS: 'rewards',
  RETURNS: 'returns',
  ADVANTAGE: 'advantage',
  BASELINES: 'baselines',
} as const;

/** Observation `index` as the agent saw it before acting (upstream's ObsUtil.get_name_at). */
export function observationKey(index: number): string {
  return `${ObservationKeyPrefix.OBSERVATION}:${index}`;
}

/** Observation `index` after the action (upstream's ObsUtil.get_name_at_next). */
export function nextObservationKey(index: number): string {
  return `${ObservationKeyPrefix.NEXT_OBSERVATION}:${index}`;
}

/** Whether `key` is one of the nextObservationKey()s. */
export function isNextObservationKey(key: string): boolean {
  return key.startsWith(`${ObservationKeyPrefix.NEXT_OBSERVATION}:`);
}

/** Observation `index` of each groupmate, slot after slot (upstream's GroupObsUtil.get_name_at). */
export function groupObservationKey(index: number): string {
  return `${ObservationKeyPrefix.GROUP_OBSERVATION}:${index}`;
}

/** The per-reward-signal keys (upstream's RewardSignalUtil). */
export const RewardSignalKeys = {
  rewards: (signal: string): string => `${RewardSignalKeyPrefix.REWARDS}:${signal}`,
  returns: (signal: string): string => `${RewardSignalKeyPrefix.RETURNS}:${signal}`,
  advantage: (signal: string): string => `${RewardSignalKeyPrefix.ADVANTAGE}:${signal}`,
  baselineEstimates: (signal: string): string => `${RewardSignalKeyPrefix.BASELINES}:${signal}`,
};

/** A request the buffer's contents cannot satisfy (upstream's BufferException). */
export class BufferException extends Error {
  override name = 'BufferException';
}

/**
 * One field: rows of `width` float32 values in a growable Float32Array. The width is fixed by the
 * first row written. Zero-width rows (an empty action part) can be appended and counted.
 */
export class BufferColumn {
  /** What `getBatch` pads sequences with: the last row times this value (upstream: set by each append). */
  paddingValue = 0;
  private data: Float32Array;
  private rowCount = 0;
  private rowWidth = -1;

  constructor(readonly key: string) {
    this.data = new Float32Array(0);
  }

  /** A column whose rows are `rowCount` rows of `width` values of `data`, shared, not copied. */
  static view(key: string, data: Float32Array, width: number, rowCount: number): BufferColumn {
    const column = new BufferColumn(key);
    column.data = data;
    column.rowWidth = width;
    column.rowCount = rowCount;
    return column;
  }

  get length(): number {
    return this.rowCount;
  }

  /** Values per row; 0 before the first row. */
  get width(): number {
    return Math.max(0, this.rowWidth);
  }

  /** All rows, one after another: a view, valid until the column next changes. */
  get rows(): Float32Array {
    return this.data.subarray(0, this.rowCount * this.width);
  }

  /** Row `index`: a view, valid until the column next changes. */
  row(index: number): Float32Array {
    const width = this.width;
    return this.data.subarray(index * width, (index + 1) * width);
  }

  /** Adds one row: a number for a one-value row, or the row's values. */
  append(row: number | ArrayLike<number>, paddingValue = 0): void {
    const width = typeof row === 'number' ? 1 : row.length;
    this.claimWidth(width);
    this.reserve(this.rowCount + 1);
    if (typeof row === 'number') {
      this.data[this.rowCount] = row;
    } else {
      this.data.set(row, this.rowCount * width);
    }
    this.rowCount++;
    this.paddingValue = paddingValue;
  }

  /** Adds rows given one after another in `values`; `width` defaults to the column's, or 1 for a new column. */
  extend(values: ArrayLike<number>, width = this.rowWidth < 0 ? 1 : this.rowWidth): void {
    const count = this.rowsIn(values, width);
    this.claimWidth(width);
    this.reserve(this.rowCount + count);
    this.data.set(values, this.rowCount * width);
    this.rowCount += count;
  }

  /** Replaces every row with those in `values` (copied). */
  set(values: ArrayLike<number>, width = this.rowWidth < 0 ? 1 : this.rowWidth): void {
    const count = this.rowsIn(values, width);
    this.rowWidth = width;
    this.rowCount = 0;
    this.reserve(count);
    this.data.set(values, 0);
    this.rowCount = count;
  }

  clear(): void {
    this.rowCount = 0;
  }

  /**
   * The newest `batchSize` sequences of `trainingLength` rows, as upstream's get_batch.
   * Sequential: sequences do not overlap; when the rows do not fill the last sequence, every row is
   * returned followed by padding rows (the last row times `paddingValue`). Not sequential: the
   * overlapping windows ending at each of the newest `batchSize` rows.
   * Without padding the result is a view of the column; otherwise a new array.
   */
  getBatch(batchSize?: number, trainingLength = 1, sequential = true): Float32Array {
    const count = this.rowCount;
    const width = this.width;
    if (sequential) {
      const leftover = count % trainingLength;
      const available = Math.floor(count / trainingLength) + (leftover !== 0 ? 1 : 0);
      const sequences = batchSize ?? available;
      if (sequences > available) {
        throw new BufferException(
          `Column ${this.key} holds ${count} rows: ${available} sequences of ${trainingLength}, ` +
            `fewer than the ${sequences} asked for.`,
        );
      }
      if (sequences * trainingLength <= count) {
        return this.data.subarray((count - sequences * trainingLength) * width, count * width);
      }
      const paddingRows = trainingLength - leftover;
      const out = new Float32Array((count + paddingRows) * width);
      out.set(this.rows, 0);
      const last = this.row(count - 1);
      for (let p = 0; p < paddingRows; p++) {
        const offset = (count + p) * width;
        for (let j = 0; j < width; j++) out[offset + j] = last[j] * this.paddingValue;
      }
      return out;
    }
    const windows = batchSize ?? count - trainingLength + 1;
    if (count - trainingLength + 1 < windows) {
      throw new BufferException(
        `Column ${this.key} holds ${count} rows: fewer than ${windows} windows of ${trainingLength}.`,
      );
    }
    const out = new Float32Array(windows * trainingLength * width);
    for (let w = 0; w < windows; w++) {
      const end = count - windows + 1 + w;
      out.set(this.data.subarray((end - trainingLength) * width, end * width), w * trainingLength * width);
    }
    return out;
  }

  /** Rows [start, end) as a column sharing this one's memory (no copy). */
  slice(start: number, end: number): BufferColumn {
    const from = Math.min(Math.max(0, start), this.rowCount);
    const to = Math.min(Math.max(from, end), this.rowCount);
    const width = this.width;
    const view = BufferColumn.view(this.key, this.data.subarray(from * width, to * width), this.rowWidth, to - from);
    view.paddingValue = this.paddingValue;
    return view;
  }

  /** A new column of the `length`-row sequences starting at each of `starts`, in that order. */
  gather(starts: ArrayLike<number>, length: number): BufferColumn {
    const width = this.width;
    const out = new Float32Array(starts.length * length * width);
    for (let i = 0; i < starts.length; i++) {
      const from = starts[i] * width;
      out.set(this.data.subarray(from, from + length * width), i * length * width);
    }
    const column = BufferColumn.view(this.key, out, this.rowWidth, starts.length * length);
    column.paddingValue = this.paddingValue;
    return column;
  }

  /** Drops the rows before `start`, in place. */
  dropBefore(start: number): void {
    const width = this.width;
    this.data.copyWithin(0, start * width, this.rowCount * width);
    this.rowCount -= start;
  }

  private rowsIn(values: ArrayLike<number>, width: number): number {
    if (width < 1 || values.length % width !== 0) {
      throw new BufferException(
        `Column ${this.key}: ${values.length} values do not make whole rows of ${width}.`,
      );
    }
    return values.length / width;
  }

  private claimWidth(width: number): void {
    if (this.rowWidth < 0 || this.rowCount === 0) {
      this.rowWidth = width;
    } else if (width !== this.rowWidth) {
      throw new BufferException(`Column ${this.key} holds rows of ${this.rowWidth} values; got a row of ${width}.`);
    }
  }

  /** Makes room for `rows` rows, doubling so that appending stays amortized O(1). */
  private reserve(rows: number): void {
    const needed = rows * this.width;
    if (needed <= this.data.length) return;
    const grown = new Float32Array(Math.max(needed, this.data.length * 2, 16 * this.width));
    grown.set(this.rows, 0);
    this.data = grown;
  }
}

/** Named columns of experiences (upstream's AgentBuffer). */
export class AgentBuffer {
  private readonly columns = new Map<string, BufferColumn>();

  /** The column under `key`; an empty one is created when there is none (as upstream's defaultdict). */
  get(key: string): BufferColumn {
    let column = this.columns.get(key);
    if (column === undefined) {
      column = new BufferColumn(key);
      this.columns.set(key, column);
    }
    return column;
  }

  has(key: string): boolean {
    return this.columns.has(key);
  }

  /** Makes `data` (whole rows of `width` values) the column under `key`, itself, not a copy. */
  adopt(key: string, data: Float32Array, width: number): void {
    if (width < 1 || data.length % width !== 0) {
      throw new BufferException(`Column ${key}: ${data.length} values do not make whole rows of ${width}.`);
    }
    this.columns.set(key, BufferColumn.view(key, data, width, data.length / width));
  }

  /** The keys, in the order their columns were created. */
  keys(): string[] {
    return [...this.columns.keys()];
  }

  /** The number of experiences: the length of the first column (upstream's num_experiences). */
  get numExperiences(): number {
    const first = this.columns.values().next();
    return first.done ? 0 : first.value.length;
  }

  /** True when every key has a column and all have the same length (always true for fewer than two keys). */
  checkLength(keys: readonly string[]): boolean {
    if (keys.length < 2) return true;
    let length = -1;
    for (const key of keys) {
      const column = this.columns.get(key);
      if (column === undefined) return false;
      if (length >= 0 && column.length !== length) return false;
      length = column.length;
    }
    return true;
  }

  /** Empties every column, keeping the keys (upstream's reset_agent). */
  resetAgent(): void {
    for (const column of this.columns.values()) column.clear();
  }

  /**
   * Reorders whole sequences of `sequenceLength` rows, the same way in every column of `keys`.
   * As upstream, rows past the last whole sequence are dropped. `random` gives floats in [0, 1).
   */
  shuffle(sequenceLength: number, random: () => number, keys: readonly string[] = this.keys()): void {
    if (!this.checkLength(keys)) {
      throw new BufferException('Unable to shuffle: the columns are not all of the same length.');
    }
    if (keys.length === 0) return;
    const sequences = Math.floor(this.get(keys[0]).length / sequenceLength);
    const order = new Int32Array(sequences);
    for (let i = 0; i < sequences; i++) order[i] = i;
    for (let i = sequences - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      const swap = order[i];
      order[i] = order[j];
      order[j] = swap;
    }
    for (let i = 0; i < sequences; i++) order[i] *= sequenceLength;
    for (const key of keys) this.columns.set(key, this.get(key).gather(order, sequenceLength));
  }

  /** Rows [start, end) of every column, sharing this buffer's memory (no copy). */
  makeMiniBatch(start: number, end: number): AgentBuffer {
    const batch = new AgentBuffer();
    for (const [key, column] of this.columns) batch.columns.set(key, column.slice(start, end));
    return batch;
  }

  /**
   * `batchSize / sequenceLength` sequences drawn at random, with replacement, starting at multiples
   * of `sequenceLength` (upstream's sample_mini_batch). The rows are copied.
   */
  sampleMiniBatch(batchSize: number, sequenceLength: number, random: () => number): AgentBuffer {
    const wanted = Math.floor(batchSize / sequenceLength);
    const inBuffer = Math.floor(this.numExperiences / sequenceLength);
    const starts = new Int32Array(wanted);
    for (let i = 0; i < wanted; i++) starts[i] = Math.floor(random() * inBuffer) * sequenceLength;
    const batch = new AgentBuffer();
    for (const [key, column] of this.columns) batch.columns.set(key, column.gather(starts, sequenceLength));
    return batch;
  }

  /** Keeps the newest `maxLength` rows, rounded down to whole sequences (upstream's truncate). */
  truncate(maxLength: number, sequenceLength = 1): void {
    const current = this.numExperiences;
    const kept = maxLength - (maxLength % sequenceLength);
    if (current <= kept) return;
    for (const column of this.columns.values()) column.dropBefore(current - kept);
  }

  /**
   * Appends the columns of `keys` to `target` as whole sequences of `trainingLength` rows, the last
   * one padded as getBatch pads, so that recurrent training never sees a sequence cut short
   * (upstream's resequence_and_append).
   */
  resequenceAndAppend(
    target: AgentBuffer,
    options: { keys?: readonly string[]; batchSize?: number; trainingLength?: number } = {},
  ): void {
    const keys = options.keys ?? this.keys();
    if (!this.checkLength(keys)) {
      throw new BufferException(`The columns ${keys.join(', ')} are not all of the same length.`);
    }
    for (const key of keys) {
      const column = this.get(key);
      target.get(key).extend(column.getBatch(options.batchSize, options.trainingLength ?? 1), column.width);
    }
  }
}

/** The group columns, each with what pads an absent groupmate's slot. */
function groupColumns(buffer: AgentBuffer): Array<[BufferColumn, number]> {
  const found: Array<[BufferColumn, number]> = [];
  for (let i = 0; buffer.has(groupObservationKey(i)); i++) found.push([buffer.get(groupObservationKey(i)), NaN]);
  for (const key of [BufferKey.GROUP_CONTINUOUS_ACTION, BufferKey.GROUP_DISCRETE_ACTION, BufferKey.GROUPMATE_REWARDS]) {
    if (buffer.has(key)) found.push([buffer.get(key), 0]);
  }
  return found;
}

/** Groupmate slots of a buffer's group columns (the width of groupmate_reward: one value a slot); 0 without them. */
export function groupSlots(buffer: AgentBuffer): number {
  return buffer.has(BufferKey.GROUPMATE_REWARDS) ? buffer.get(BufferKey.GROUPMATE_REWARDS).width : 0;
}

/**
 * Widens every group column to `slots` groupmate slots, the new slots padded as absent
 * groupmates' are, so that buffers of different group sizes append to one another.
 */
export function padGroupSlots(buffer: AgentBuffer, slots: number): void {
  const current = groupSlots(buffer);
  if (current >= slots) return;
  for (const [column, padding] of groupColumns(buffer)) {
    const slotWidth = column.width / current;
    const rows = column.length;
    const wider = new Float32Array(rows * slots * slotWidth).fill(padding);
    const old = column.rows;
    for (let r = 0; r < rows; r++) wider.set(old.subarray(r * current * slotWidth, (r + 1) * current * slotWidth), r * slots * slotWidth);
    column.set(wider, slots * slotWidth);
  }
}
