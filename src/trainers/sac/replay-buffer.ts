/**
 * SAC's replay buffer (upstream's update_buffer of the SAC trainer): the experiences of every
 * agent, one row per step, in typed-array columns of a fixed capacity (buffer_size). Once full,
 * each new row overwrites the oldest, where upstream lets the buffer grow past buffer_size and
 * then cuts it to 80% of it: both keep about the newest buffer_size experiences.
 *
 * The columns grow (doubling) as rows arrive, up to the capacity: images make rows large (a
 * 84x84 RGB observation and its successor are 170 KB a row, 8.5 GB at upstream's default
 * buffer_size of 50000), and a run often ends before the buffer fills.
 *
 * Minibatches are drawn uniformly with replacement, as upstream's sample_mini_batch does.
 *
 * With memory (layout.sequenceLength > 1) rows come in whole sequences, the trainer padding each
 * trajectory's last one (upstream's resequence_and_append), and stay whole: the capacity is
 * rounded down to whole sequences, so a sequence never straddles the ring's end, and a minibatch
 * is batch_size / sequence_length sequences drawn uniformly (upstream's sample_mini_batch with a
 * sequence length). The rows then carry the agents' memories, the critic's memories and the
 * masks (0 on padding) besides.
 * With save_replay_buffer, the rows are written oldest first to a file in the checkpoint format
 * (src/networks/checkpoint-file.ts) and read back on --resume.
 */
import { writeFileWhole } from '../../common/whole-files';
import { CheckpointArray, CheckpointFormatError, encodeCheckpoint, readCheckpointFile } from '../../networks/checkpoint-file';

/** The widths of a behavior's rows. */
export interface ReplayLayout {
  readonly observationSizes: readonly number[];
  readonly continuousSize: number;
  /** Number of discrete branches. */
  readonly branchCount: number;
  /** Sum of the branch sizes: the width of an action mask row. */
  readonly maskWidth: number;
  /** With memory: values in an agent's memories (absent without, as in files written before memory). */
  readonly memorySize?: number;
  /** With memory: rows per sequence. */
  readonly sequenceLength?: number;
}

/** Rows of experiences: row i of every array is one step. */
export interface ReplayRows {
  readonly count: number;
  /** One array per observation, count x its size: what the agent saw before acting. */
  readonly observations: readonly Float32Array[];
  /** What it saw after acting. */
  readonly nextObservations: readonly Float32Array[];
  readonly continuousActions: Float32Array;
  readonly discreteActions: Int32Array;
  /** count x mask width, 1 where the action was allowed. */
  readonly actionMasks: Float32Array;
  /** The environment's reward after each step. */
  readonly rewards: Float32Array;
  /** 1 where the step ended the episode without a value to bootstrap from. */
  readonly dones: Float32Array;
  /** With memory: the agent's memories each step was decided from (count x memory size). */
  readonly memories?: Float32Array;
  /** With memory: the critic's memories at the start of each step's sequence (count x memory size). */
  readonly criticMemories?: Float32Array;
  /** With memory: 1 on steps, 0 on padding. */
  readonly masks?: Float32Array;
}

type ColumnName = 'continuousActions' | 'discreteActions' | 'actionMasks' | 'rewards' | 'dones' | 'memories' | 'criticMemories' | 'masks';
const COLUMNS: readonly ColumnName[] = ['continuousActions', 'discreteActions', 'actionMasks', 'rewards', 'dones'];
const MEMORY_COLUMNS: readonly ColumnName[] = ['memories', 'criticMemories', 'masks'];

/** Rows the columns hold at first (then twice as many each time they are full, up to the capacity). */
const INITIAL_ROWS = 1024;

/** What a replay buffer file holds; its arrays are named as the columns. */
const FILE_KIND = 'sac-replay-buffer';

export class ReplayBuffer {
  private observations: Float32Array[];
  private nextObservations: Float32Array[];
  private columns: Partial<Record<ColumnName, Float32Array>>;
  private readonly widths: Record<ColumnName, number>;
  /** The columns this buffer holds: the memory ones only with memory. */
  private readonly columnNames: readonly ColumnName[];
  /** Rows per sequence: sequence_length with memory, else 1. */
  readonly sequenceLength: number;
  /** Rows it holds at most: buffer_size, rounded down to whole sequences. */
  readonly capacity: number;
  /** Where the next row goes. */
  private next = 0;
  private rows = 0;
  /** Rows the columns have room for now. */
  private allocated: number;

  constructor(
    readonly layout: ReplayLayout,
    bufferSize: number,
  ) {
    const sequenceLength = layout.sequenceLength ?? 1;
    this.sequenceLength = sequenceLength;
    this.capacity = bufferSize - (bufferSize % sequenceLength);
    if (!(this.capacity >= 1)) {
      throw new Error(`The replay buffer needs room for at least one sequence of ${sequenceLength} experiences (buffer_size ${bufferSize}).`);
    }
    const capacity = this.capacity;
    this.allocated = Math.min(capacity, INITIAL_ROWS - (INITIAL_ROWS % sequenceLength) || sequenceLength);
    const rows = this.allocated;
    this.observations = layout.observationSizes.map((size) => new Float32Array(rows * size));
    this.nextObservations = layout.observationSizes.map((size) => new Float32Array(rows * size));
    this.widths = {
      continuousActions: layout.continuousSize,
      discreteActions: layout.branchCount,
      actionMasks: layout.maskWidth,
      rewards: 1,
      dones: 1,
      memories: layout.memorySize ?? 0,
      criticMemories: layout.memorySize ?? 0,
      masks: 1,
    };
    this.columnNames = layout.memorySize === undefined ? COLUMNS : [...COLUMNS, ...MEMORY_COLUMNS];
    this.columns = Object.fromEntries(this.columnNames.map((name) => [name, new Float32Array(rows * this.widths[name])]));
  }

  /** Experiences held (at most the capacity). */
  get size(): number {
    return this.rows;
  }

  /** Appends rows (whole sequences with memory), overwriting the oldest once the buffer is full. */
  add(rows: ReplayRows): void {
    if (rows.count % this.sequenceLength !== 0) {
      throw new Error(`The replay buffer takes whole sequences of ${this.sequenceLength} rows; got ${rows.count} rows.`);
    }
    for (const name of this.columnNames) {
      if (rows[name] === undefined) throw new Error(`The replay buffer's rows need their ${name} (the behavior has memory).`);
    }
    for (let i = 0; i < rows.count; i++) {
      const at = this.next;
      if (at >= this.allocated) this.grow();
      this.layout.observationSizes.forEach((size, k) => {
        for (let f = 0; f < size; f++) {
          this.observations[k][at * size + f] = rows.observations[k][i * size + f];
          this.nextObservations[k][at * size + f] = rows.nextObservations[k][i * size + f];
        }
      });
      for (const name of this.columnNames) {
        const width = this.widths[name];
        const source = rows[name]!;
        const column = this.columns[name]!;
        for (let f = 0; f < width; f++) column[at * width + f] = source[i * width + f];
      }
      this.next = (at + 1) % this.capacity;
      this.rows = Math.min(this.rows + 1, this.capacity);
    }
  }

  /** Doubles the room of every column (up to the capacity), keeping the rows. */
  private grow(): void {
    const rows = Math.min(this.capacity, 2 * this.allocated);
    const larger = (column: Float32Array, width: number): Float32Array => {
      const grown = new Float32Array(rows * width);
      grown.set(column);
      return grown;
    };
    const sizes = this.layout.observationSizes;
    this.observations = this.observations.map((column, k) => larger(column, sizes[k]));
    this.nextObservations = this.nextObservations.map((column, k) => larger(column, sizes[k]));
    for (const name of this.columnNames) this.columns[name] = larger(this.columns[name]!, this.widths[name]);
    this.allocated = rows;
  }

  /**
   * `count` rows drawn uniformly with replacement; with memory, count / sequenceLength whole
   * sequences (at least one). `random` gives numbers in [0, 1).
   */
  sample(count: number, random: () => number): ReplayRows {
    if (this.rows === 0) throw new Error('Cannot sample from an empty replay buffer.');
    const length = this.sequenceLength;
    const sequences = Math.max(1, Math.floor(count / length));
    const held = this.rows / length;
    const picks = new Int32Array(sequences * length);
    for (let s = 0; s < sequences; s++) {
      const start = Math.min(held - 1, Math.floor(random() * held)) * length;
      for (let t = 0; t < length; t++) picks[s * length + t] = start + t;
    }
    return this.gather(picks);
  }

  /** Writes every row, oldest first, to `file`. */
  save(file: string): void {
    const order = new Int32Array(this.rows);
    const oldest = this.rows < this.capacity ? 0 : this.next;
    for (let i = 0; i < this.rows; i++) order[i] = (oldest + i) % this.capacity;
    const rows = this.gather(order);
    const arrays = new Map<string, CheckpointArray>();
    rows.observations.forEach((values, k) => arrays.set(`obs:${k}`, values));
    rows.nextObservations.forEach((values, k) => arrays.set(`next_obs:${k}`, values));
    for (const name of this.columnNames) {
      arrays.set(name, name === 'discreteActions' ? Float32Array.from(rows.discreteActions) : rows[name]!);
    }
    writeFileWhole(file, encodeCheckpoint({ kind: FILE_KIND, count: rows.count, layout: this.layout }, arrays));
  }

  /** Appends the rows of a file written by save(); refuses one of another behavior's layout. */
  load(file: string): void {
    const { meta, arrays } = readReplayBufferFile(file);
    if (meta.kind !== FILE_KIND) throw new Error(`${file} is not a SAC replay buffer (it holds ${String(meta.kind)}).`);
    if (JSON.stringify(meta.layout) !== JSON.stringify(this.layout)) {
      throw new Error(
        `${file} holds experiences of another shape (${JSON.stringify(meta.layout)}, this behavior has ` +
          `${JSON.stringify(this.layout)}): delete it to start with an empty replay buffer.`,
      );
    }
    const array = (name: string): Float32Array => {
      const values = arrays.get(name);
      if (values === undefined) throw new Error(`${file} has no ${name} array.`);
      return Float32Array.from(values);
    };
    this.add(
      this.rowsOf(
        meta.count as number,
        this.layout.observationSizes.map((_, k) => array(`obs:${k}`)),
        this.layout.observationSizes.map((_, k) => array(`next_obs:${k}`)),
        array,
      ),
    );
  }

  /** The rows at these positions, in this order. */
  private gather(positions: Int32Array): ReplayRows {
    const count = positions.length;
    // Plain loops: a subarray per row costs more than copying its few values.
    const pick = (source: Float32Array, width: number): Float32Array => {
      const out = new Float32Array(count * width);
      for (let i = 0; i < count; i++) {
        const from = positions[i] * width;
        for (let f = 0; f < width; f++) out[i * width + f] = source[from + f];
      }
      return out;
    };
    const sizes = this.layout.observationSizes;
    return this.rowsOf(
      count,
      this.observations.map((values, k) => pick(values, sizes[k])),
      this.nextObservations.map((values, k) => pick(values, sizes[k])),
      (name) => pick(this.columns[name]!, this.widths[name]),
    );
  }

  /** Rows of these observations, their other columns read by name (the memory ones only with memory). */
  private rowsOf(
    count: number,
    observations: Float32Array[],
    nextObservations: Float32Array[],
    column: (name: ColumnName) => Float32Array,
  ): ReplayRows {
    return {
      count,
      observations,
      nextObservations,
      continuousActions: column('continuousActions'),
      discreteActions: Int32Array.from(column('discreteActions')),
      actionMasks: column('actionMasks'),
      rewards: column('rewards'),
      dones: column('dones'),
      ...(this.layout.memorySize === undefined
        ? {}
        : { memories: column('memories'), criticMemories: column('criticMemories'), masks: column('masks') }),
    };
  }
}

/** The file's contents; a damaged or foreign file is refused, naming it and the way out. */
function readReplayBufferFile(file: string): ReturnType<typeof readCheckpointFile> {
  try {
    return readCheckpointFile(file);
  } catch (error) {
    if (!(error instanceof CheckpointFormatError)) throw error;
    throw new Error(`The replay buffer ${file} cannot be read: ${error.message} Delete it to resume with an empty replay buffer.`);
  }
}
