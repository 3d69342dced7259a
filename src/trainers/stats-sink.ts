/**
 * Where the trainers report their numbers: the part of upstream's StatsReporter they call.
 * src/stats implements it (console, TensorBoard, run logs).
 */
import { StatsAggregationMethod } from '../communicator/side-channels/stats-side-channel';

export interface StatsSink {
  /** Adds one value of `key` to the current summary period; `aggregation` defaults to AVERAGE. */
  addStat(key: string, value: number, aggregation?: StatsAggregationMethod): void;
  /** Replaces whatever `key` holds in the current summary period (MOST_RECENT). */
  setStat(key: string, value: number): void;
}
