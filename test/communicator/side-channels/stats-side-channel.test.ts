import { SideChannelManager } from '../../../src/communicator/side-channels/side-channel-manager';
import {
  STATS_SIDE_CHANNEL_ID,
  StatsAggregationMethod,
  StatsSideChannel,
} from '../../../src/communicator/side-channels/stats-side-channel';
import { IncomingMessage } from '../../../src/communicator/side-channels/incoming-message';
import { hex } from './hex';

const STATS_ID_BYTES = 'b7 f7 d8 a1 c8 ce f9 50 b7 8b d3 e1 65 a7 85 20';

describe('StatsSideChannel', () => {
  it("uses upstream's channel id and aggregation values", () => {
    expect(new StatsSideChannel().channelId).toBe('a1d8f7b7-cec8-50f9-b78b-d3e165a78520');
    expect(STATS_SIDE_CHANNEL_ID).toBe('a1d8f7b7-cec8-50f9-b78b-d3e165a78520');
    expect(StatsAggregationMethod.AVERAGE).toBe(0);
    expect(StatsAggregationMethod.MOST_RECENT).toBe(1);
    expect(StatsAggregationMethod.SUM).toBe(2);
    expect(StatsAggregationMethod.HISTOGRAM).toBe(3);
  });

  it('parses key, float32 value and aggregation method, grouping values by key', () => {
    const channel = new StatsSideChannel();
    const manager = new SideChannelManager([channel]);
    manager.processSideChannelMessage(
      hex(
        `${STATS_ID_BYTES} 0d 00 00 00  01 00 00 00 72  00 00 c0 3f  02 00 00 00` + // "r" 1.5 SUM
          ` ${STATS_ID_BYTES} 0d 00 00 00  01 00 00 00 72  00 00 00 3f  03 00 00 00` + // "r" 0.5 HISTOGRAM
          ` ${STATS_ID_BYTES} 0d 00 00 00  01 00 00 00 68  00 00 80 bf  01 00 00 00` + // "h" -1 MOST_RECENT
          ` ${STATS_ID_BYTES} 09 00 00 00  01 00 00 00 68  00 00 00 40`, // "h" 2, no method: AVERAGE
      ),
    );
    const stats = channel.getAndResetStats();
    expect([...stats.keys()]).toEqual(['r', 'h']);
    expect(stats.get('r')).toEqual([
      [1.5, StatsAggregationMethod.SUM],
      [0.5, StatsAggregationMethod.HISTOGRAM],
    ]);
    expect(stats.get('h')).toEqual([
      [-1, StatsAggregationMethod.MOST_RECENT],
      [2, StatsAggregationMethod.AVERAGE],
    ]);
  });

  it('getAndResetStats empties the store', () => {
    const channel = new StatsSideChannel();
    channel.onMessageReceived(new IncomingMessage(hex('01 00 00 00 61 00 00 80 3f 00 00 00 00')));
    expect(channel.getAndResetStats().get('a')).toEqual([[1, StatsAggregationMethod.AVERAGE]]);
    expect(channel.getAndResetStats().size).toBe(0);
  });

  it('rejects an unknown aggregation method', () => {
    const channel = new StatsSideChannel();
    expect(() =>
      channel.onMessageReceived(new IncomingMessage(hex('01 00 00 00 61 00 00 80 3f 07 00 00 00'))),
    ).toThrow(/unknown aggregation method 7 for stat "a"/);
  });
});
