import { IncomingMessage } from './incoming-message';
import { SideChannel } from './side-channel';

/** Unity's StatsSideChannel id (uuid5 of the URL "com.unity.ml-agents/StatsSideChannel"). */
export const STATS_SIDE_CHANNEL_ID = 'a1d8f7b7-cec8-50f9-b78b-d3e165a78520';

/** How the values of one stat within a summary period are combined (Unity's StatAggregationMethod). */
export enum StatsAggregationMethod {
  AVERAGE = 0,
  MOST_RECENT = 1,
  SUM = 2,
  HISTOGRAM = 3,
}

/** The values received for one key, oldest first, each with its aggregation method. */
export type StatList = Array<[value: number, method: StatsAggregationMethod]>;
export type EnvironmentStats = Map<string, StatList>;

/**
 * Receives the stats that Unity code records with Academy.Instance.StatsRecorder.
 * Each message: string key, float32 value, int32 aggregation method.
 */
export class StatsSideChannel extends SideChannel {
  private stats: EnvironmentStats = new Map();

  constructor() {
    super(STATS_SIDE_CHANNEL_ID);
  }

  override onMessageReceived(msg: IncomingMessage): void {
    const key = msg.readString();
    const value = msg.readFloat32();
    // Unity builds older than the aggregation field send none; the default 0 means AVERAGE.
    const method = msg.readInt32(StatsAggregationMethod.AVERAGE);
    if (StatsAggregationMethod[method] === undefined) {
      throw new Error(
        `StatsSideChannel: unknown aggregation method ${method} for stat ${JSON.stringify(key)}`,
      );
    }
    let list = this.stats.get(key);
    if (!list) {
      list = [];
      this.stats.set(key, list);
    }
    list.push([value, method as StatsAggregationMethod]);
  }

  /** Everything received since the last call, and a fresh empty store. */
  getAndResetStats(): EnvironmentStats {
    const stats = this.stats;
    this.stats = new Map();
    return stats;
  }
}
