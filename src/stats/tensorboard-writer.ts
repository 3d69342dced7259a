/**
 * TensorBoard output as ML-Agents writes it (stats.py TensorboardWriter over torch's
 * SummaryWriter): one event file per behavior under `<results>/<run-id>/<behavior>/`, a scalar
 * event per key at each summary (tag = the key, value = the sum for SUM stats and the mean
 * otherwise), a `<key>_hist` histogram for HISTOGRAM stats, and the hyperparameters as the text
 * summary "Hyperparameters/text_summary".
 */
import * as fs from 'fs';
import * as path from 'path';
import type { Logger } from '../common/logger';
import { EventFileWriter, TensorDataType, type HistogramProto, type SummaryValue } from './event-file';
import { hyperparametersText, type Hyperparameters } from './python-format';
import { StatsAggregationMethod, StatsPropertyType, type StatsSummary, type StatsWriter } from './stats-reporter';

export interface TensorboardWriterOptions {
  logger: Logger;
  /** Delete event files left in a behavior's folder by an earlier run (upstream: when not resuming). */
  clearPastData?: boolean;
  /** Keys never written (upstream's mlagents-learn hides TENSORBOARD_HIDDEN_KEYS). */
  hiddenKeys?: readonly string[];
  /** Seconds since the Unix epoch, for the events' wall_time. */
  clock?: () => number;
}

export class TensorboardWriter implements StatsWriter {
  private readonly files = new Map<string, EventFileWriter>();
  private readonly hiddenKeys: ReadonlySet<string>;

  constructor(
    readonly baseDir: string,
    private readonly options: TensorboardWriterOptions,
  ) {
    this.hiddenKeys = new Set(options.hiddenKeys ?? []);
  }

  writeStats(category: string, values: ReadonlyMap<string, StatsSummary>, step: number): void {
    const file = this.fileOf(category);
    for (const [key, summary] of values) {
      if (this.hiddenKeys.has(key)) continue;
      file.add({ step, summary: { value: [{ tag: key, simple_value: summary.aggregatedValue }] } });
      if (summary.aggregationMethod === StatsAggregationMethod.HISTOGRAM) {
        const histo = histogramOf(summary.values);
        // Upstream's histogram code fails on values that fall in no bucket (NaN, beyond 1e20);
        // the scalar above is kept and the histogram left out.
        if (histo !== null) file.add({ step, summary: { value: [{ tag: `${key}_hist`, histo }] } });
      }
    }
    file.flush();
  }

  addProperty(category: string, type: StatsPropertyType, value: unknown): void {
    if (type !== StatsPropertyType.HYPERPARAMETERS) return;
    const file = this.fileOf(category);
    const text = hyperparametersText(value as Hyperparameters);
    file.add({ step: 0, summary: { value: [textSummary('Hyperparameters', text)] } });
    file.flush();
  }

  /** The event file of a category, once something was written for it. */
  eventFilePath(category: string): string | undefined {
    return this.files.get(category)?.path;
  }

  close(): void {
    for (const file of this.files.values()) file.close();
    this.files.clear();
  }

  private fileOf(category: string): EventFileWriter {
    let file = this.files.get(category);
    if (file !== undefined) return file;
    const directory = path.resolve(this.baseDir, category);
    const relative = path.relative(path.resolve(this.baseDir), directory);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
      throw new Error(
        `The behavior name ${JSON.stringify(category)} would put its TensorBoard files outside ${this.baseDir}`,
      );
    }
    fs.mkdirSync(directory, { recursive: true });
    if (this.options.clearPastData) this.deleteEventFiles(directory);
    file = new EventFileWriter(directory, this.options.clock);
    this.files.set(category, file);
    return file;
  }

  private deleteEventFiles(directory: string): void {
    for (const name of fs.readdirSync(directory)) {
      if (!name.startsWith('events.out')) continue;
      this.options.logger.warning(`Deleting TensorBoard data ${name} that was left over from a previous run.`);
      const fullPath = path.join(directory, name);
      try {
        fs.rmSync(fullPath);
      } catch {
        this.options.logger.error(`${fullPath} was left over from a previous run and not deleted.`);
      }
    }
  }
}

/** A text summary as torch's add_text writes it: read by TensorBoard's text plugin. */
export function textSummary(tag: string, text: string): SummaryValue {
  return {
    tag: `${tag}/text_summary`,
    metadata: { plugin_data: { plugin_name: 'text' } },
    tensor: {
      dtype: TensorDataType.DT_STRING,
      tensor_shape: { dim: [{ size: 1 }] },
      string_val: [Buffer.from(text, 'utf8')],
    },
  };
}

let defaultBucketEdges: Float64Array | undefined;

/**
 * TensorFlow's default histogram bucket edges, which torch's add_histogram uses: 0 and
 * ±1e-12 * 1.1^k up to 1e20, ascending.
 */
export function histogramBucketEdges(): Float64Array {
  if (defaultBucketEdges === undefined) {
    const positive: number[] = [];
    for (let edge = 1e-12; edge < 1e20; edge *= 1.1) positive.push(edge);
    const edges = new Float64Array(positive.length * 2 + 1);
    positive.forEach((edge, i) => {
      edges[positive.length - 1 - i] = -edge;
      edges[positive.length + 1 + i] = edge;
    });
    defaultBucketEdges = edges;
  }
  return defaultBucketEdges;
}

/**
 * The histogram torch writes for `values` (numpy's histogram over the default edges, trimmed to
 * the buckets from the one before the first non-empty bucket to the last non-empty one), or
 * null when no value falls in a bucket.
 */
export function histogramOf(values: Float64Array): HistogramProto | null {
  const edges = histogramBucketEdges();
  const last = edges.length - 1;
  const counts = new Float64Array(last);
  for (const value of values) {
    // numpy's buckets are [edge(i), edge(i+1)), the last one closed; NaN and outliers count nowhere.
    if (!(value >= edges[0] && value <= edges[last])) continue;
    let low = 0;
    let high = last;
    while (high - low > 1) {
      const middle = (low + high) >>> 1;
      if (value >= edges[middle]) low = middle;
      else high = middle;
    }
    counts[low] += 1;
  }
  const first = counts.findIndex((count) => count > 0);
  if (first < 0) return null;
  let end = counts.length;
  while (counts[end - 1] === 0) end--;
  // TensorBoard reads only right edges, so the empty bucket left of the first one carries the left edge.
  const bucket = first > 0 ? Array.from(counts.subarray(first - 1, end)) : [0, ...counts.subarray(0, end)];
  const bucketLimit = Array.from(edges.subarray(first, end + 1));
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let sumSquares = 0;
  for (const value of values) {
    min = Math.min(min, value);
    max = Math.max(max, value);
    sum += value;
    sumSquares += value * value;
  }
  return { min, max, num: values.length, sum, sum_squares: sumSquares, bucket_limit: bucketLimit, bucket };
}
