/**
 * The reward signals this trainer builds, by their reward_signals key (upstream's
 * reward_provider_factory). A new signal: its provider file and one line here.
 */
import type { RewardSignals } from '../../config/settings';
import type { BehaviorSpec } from '../../env/behavior-spec';
import type { Logger } from '../../common/logger';
import type { RewardProvider } from './reward-provider';
import { ExtrinsicRewardProvider } from './extrinsic';
import { GailRewardProvider } from './gail';
import { RndRewardProvider } from './rnd';
import { CuriosityRewardProvider } from './curiosity';

type Factory<K extends keyof RewardSignals> = (settings: NonNullable<RewardSignals[K]>, behavior: string, spec: BehaviorSpec, seed: number, logger: Logger | null) => RewardProvider;

const FACTORIES: { [K in keyof RewardSignals]?: Factory<K> } = {
  extrinsic: (settings) => new ExtrinsicRewardProvider(settings),
  rnd: (settings, _, spec, seed, logger) => new RndRewardProvider(settings, spec, seed, logger),
  gail: (settings, behavior, spec, seed, logger) => new GailRewardProvider(settings, spec, seed, { behavior, logger }),
  curiosity: (settings, _, spec, seed, logger) => new CuriosityRewardProvider(settings, spec, seed, logger),
};

/** The signals createRewardProvider() builds. */
export const BUILT_REWARD_SIGNALS: readonly string[] = Object.keys(FACTORIES);

/** The provider of one reward signal of behavior `behavior`; an unknown or unbuilt name throws, naming it. */
export function createRewardProvider<K extends keyof RewardSignals>(
  name: K,
  settings: NonNullable<RewardSignals[K]>,
  behavior: string,
  spec: BehaviorSpec,
  seed: number,
  logger: Logger | null = null,
): RewardProvider {
  const factory = FACTORIES[name] as Factory<K> | undefined;
  if (factory === undefined) throw new Error(`Unknown or unbuilt reward signal type ${String(name)}.`);
  return factory(settings, behavior, spec, seed, logger);
}

/** A behavior's providers, in its reward_signals order; each signal's seed offset by its position. */
export function createRewardProviders(signals: RewardSignals, behavior: string, spec: BehaviorSpec, seed: number, logger: Logger | null = null): Map<string, RewardProvider> {
  const providers = new Map<string, RewardProvider>();
  Object.keys(signals).forEach((name, index) => {
    const key = name as keyof RewardSignals;
    providers.set(name, createRewardProvider(key, signals[key]!, behavior, spec, seed + 1000 * (index + 1), logger));
  });
  return providers;
}
