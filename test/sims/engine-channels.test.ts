/** The engine's ends of the side channels read what the trainer's ends write, and the reverse. */
import { SideChannelManager } from '../../src/communicator/side-channels/side-channel-manager';
import { EngineConfigurationChannel } from '../../src/communicator/side-channels/engine-configuration-channel';
import { EnvironmentParametersChannel } from '../../src/communicator/side-channels/environment-parameters-channel';
import { StatsAggregationMethod, StatsSideChannel } from '../../src/communicator/side-channels/stats-side-channel';
import { EngineConfigurationReceiver, EnvironmentParametersReceiver, StatsRecorder } from '../../src/sims/sdk/engine-channels';

function deliver(from: SideChannelManager, to: SideChannelManager): void {
  to.processSideChannelMessage(from.generateSideChannelMessages());
}

it('reads the engine configuration the trainer sends', () => {
  const trainer = new EngineConfigurationChannel();
  const engine = new EngineConfigurationReceiver();
  trainer.setConfigurationParameters({ width: 84, height: 64, qualityLevel: 5, timeScale: 20, targetFrameRate: -1, captureFrameRate: 60 });
  deliver(new SideChannelManager([trainer]), new SideChannelManager([engine]));
  expect(engine.settings).toEqual({ width: 84, height: 64, qualityLevel: 5, timeScale: 20, targetFrameRate: -1, captureFrameRate: 60 });
});

it('reads constant and sampled environment parameters', () => {
  const trainer = new EnvironmentParametersChannel();
  const engine = new EnvironmentParametersReceiver();
  trainer.setFloatParameter('gravity', 4.5);
  trainer.setUniformSamplerParameters('scale', 0.5, 1.5, 7);
  trainer.setGaussianSamplerParameters('mass', 10, 0.001, 7);
  trainer.setMultirangeUniformSamplerParameters('gap', [[0, 1], [10, 11]], 7);
  deliver(new SideChannelManager([trainer]), new SideChannelManager([engine]));
  expect(engine.getWithDefault('gravity', 9.81)).toBeCloseTo(4.5, 6);
  expect(engine.getWithDefault('unset', 3)).toBe(3);
  const scales = Array.from({ length: 200 }, () => engine.getWithDefault('scale', 0));
  expect(Math.min(...scales)).toBeGreaterThanOrEqual(0.5);
  expect(Math.max(...scales)).toBeLessThan(1.5);
  expect(new Set(scales).size).toBeGreaterThan(150);
  expect(engine.getWithDefault('mass', 0)).toBeCloseTo(10, 1);
  const gaps = Array.from({ length: 200 }, () => engine.getWithDefault('gap', -1));
  expect(gaps.every((g) => (g >= 0 && g <= 1) || (g >= 10 && g <= 11))).toBe(true);
  expect(gaps.some((g) => g < 1) && gaps.some((g) => g > 10)).toBe(true);
});

it('sends stats the trainer reads with their aggregation method', () => {
  const engine = new StatsRecorder();
  const trainer = new StatsSideChannel();
  engine.add('Env/Score', 3);
  engine.add('Env/Count', 2, StatsAggregationMethod.SUM);
  deliver(new SideChannelManager([engine]), new SideChannelManager([trainer]));
  expect(trainer.getAndResetStats()).toEqual(
    new Map([
      ['Env/Score', [[3, StatsAggregationMethod.AVERAGE]]],
      ['Env/Count', [[2, StatsAggregationMethod.SUM]]],
    ]),
  );
});
