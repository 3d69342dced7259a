/**
 * Training statistics as ML-Agents gathers them (mlagents/trainers/stats.py): trainers and agent
 * processors add values under a category (the behavior name) and a key (the TensorBoard tag);
 * at every summary step the values of each key are summarized and handed to every writer
 * (console, TensorBoard, gauges), then forgotten.
 */
import { StatsAggregationMethod } from '../communicator/side-channels/stats-side-channel';
import type { Hyperparameters } from './python-format';

export { StatsAggregationMethod };

/** Python's str.capitalize(): the reward signal names in tags read "Extrinsic", "Gail", "Rnd". */
function capitalize(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1).toLowerCase();
}

/**
 * The keys upstream's trainers report, which are the TensorBoard tags users know. Templates
 * take the reward signal name as configured ("extrinsic", "curiosity", "gail", "rnd") or the
 * environment parameter name. Stats sent by the environment through the stats side channel use
 * whatever keys the Unity project chose.
 */
export const STAT_KEYS = {
  /** Episode reward, per finished episode (rl_trainer). */
  cumulativeReward: 'Environment/Cumulative Reward',
  /** Steps of each finished episode (agent_processor). */
  episodeLength: 'Environment/Episode Length',
  /** POCA: group reward per finished episode. */
  groupCumulativeReward: 'Environment/Group Cumulative Reward',
  /** Curriculum lesson of an environment parameter, set every step (trainer_controller). */
  lessonNumber: (parameter: string) => `Environment/Lesson Number/${parameter}`,
  /** Entropy of the policy at each decision (agent_processor). */
  entropy: 'Policy/Entropy',
  /** Per reward signal, its reward over each finished episode: "Policy/Extrinsic Reward". */
  signalReward: (signal: string) => `Policy/${capitalize(signal)} Reward`,
  /** SAC: per reward signal, the mean value estimate of each trajectory: "Policy/Extrinsic Value". */
  signalValue: (signal: string) => `Policy/${capitalize(signal)} Value`,
  /** Per reward signal, the mean value estimate of each trajectory: "Policy/Extrinsic Value Estimate". */
  valueEstimate: (signal: string) => `Policy/${capitalize(signal)} Value Estimate`,
  /** POCA: "Policy/Extrinsic Baseline Estimate". */
  baselineEstimate: (signal: string) => `Policy/${capitalize(signal)} Baseline Estimate`,
  learningRate: 'Policy/Learning Rate',
  epsilon: 'Policy/Epsilon',
  beta: 'Policy/Beta',
  policyLoss: 'Losses/Policy Loss',
  valueLoss: 'Losses/Value Loss',
  /** POCA. */
  baselineLoss: 'Losses/Baseline Loss',
  /** SAC. */
  q1Loss: 'Losses/Q1 Loss',
  q2Loss: 'Losses/Q2 Loss',
  continuousEntropyCoeff: 'Policy/Continuous Entropy Coeff',
  discreteEntropyCoeff: 'Policy/Discrete Entropy Coeff',
  /** Reward signal updates. */
  curiosityForwardLoss: 'Losses/Curiosity Forward Loss',
  curiosityInverseLoss: 'Losses/Curiosity Inverse Loss',
  gailLoss: 'Losses/GAIL Loss',
  gailPolicyEstimate: 'Policy/GAIL Policy Estimate',
  gailExpertEstimate: 'Policy/GAIL Expert Estimate',
  rndLoss: 'Losses/RND Loss',
  /** Self-play (ghost trainer): the learning team's ELO. */
  selfPlayElo: 'Self-play/ELO',
  /** 1 while the trainer still trains, 0 after max_steps: the console's "Training." (hidden in TensorBoard). */
  isTraining: 'Is Training',
  /** The trainer's step count (hidden in TensorBoard). */
  step: 'Step',
} as const;

/** The keys upstream's mlagents-learn keeps out of TensorBoard. */
export const TENSORBOARD_HIDDEN_KEYS: readonly string[] = [STAT_KEYS.isTraining, STAT_KEYS.step];

/** What a property given to add_property is (upstream's StatsPropertyType). */
export enum StatsPropertyType {
  /** The behavior's trainer settings, printed at start and written as a TensorBoard text. */
  HYPERPARAMETERS = 'hyperparameters',
  /** A boolean: whether the behavior trains with self-play (the console then shows the ELO). */
  SELF_PLAY = 'selfplay',
}

/** The values of one key since the last summary, and how to combine them (upstream's StatsSummary). */
export class StatsSummary {
  constructor(
    readonly values: Float64Array,
    readonly aggregationMethod: StatsAggregationMethod,
  ) {}

  get num(): number {
    return this.values.length;
  }

  get sum(): number {
    let total = 0;
    for (const value of this.values) total += value;
    return total;
  }

  get mean(): number {
    return this.sum / this.values.length;
  }

  /** Population standard deviation, as numpy's std. */
  get std(): number {
    const mean = this.mean;
    let squares = 0;
    for (const value of this.values) squares += (value - mean) * (value - mean);
    return Math.sqrt(squares / this.values.length);
  }

  /** The one number written for this key: the sum for SUM, the mean otherwise. */
  get aggregatedValue(): number {
    return this.aggregationMethod === StatsAggregationMethod.SUM ? this.sum : this.mean;
  }
}

/** Where summaries go: the console, TensorBoard, gauges, or anything else. */
export interface StatsWriter {
  /** Sees every value as it is added (upstream's on_add_stat). */
  onAddStat?(category: string, key: string, value: number, aggregation: StatsAggregationMethod): void;
  /** One summary per key that received values since the last summary, in the order keys first came. */
  writeStats(category: string, values: ReadonlyMap<string, StatsSummary>, step: number): void;
  addProperty?(category: string, type: StatsPropertyType, value: unknown): void;
  close?(): void;
}

/** A growable float64 buffer: a summary period can hold a value per agent per step. */
class StatValues {
  private buffer = new Float64Array(16);
  length = 0;

  constructor(public method: StatsAggregationMethod) {}

  push(value: number): void {
    if (this.length === this.buffer.length) {
      const grown = new Float64Array(this.buffer.length * 2);
      grown.set(this.buffer);
      this.buffer = grown;
    }
    this.buffer[this.length++] = value;
  }

  replace(value: number): void {
    this.length = 0;
    this.push(value);
  }

  summary(): StatsSummary {
    return new StatsSummary(this.buffer.slice(0, this.length), this.method);
  }
}

/**
 * The writers of a run and one reporter per category. Upstream keeps these in class-level
 * globals; here the run owns one registry, so tests and concurrent runs stay apart.
 */
export class StatsRegistry {
  private readonly writers: StatsWriter[] = [];
  private readonly reporters = new Map<string, StatsReporter>();

  addWriter(writer: StatsWriter): void {
    this.writers.push(writer);
  }

  /** The reporter of a category (one per category, shared by everyone who asks). */
  reporter(category: string): StatsReporter {
    let reporter = this.reporters.get(category);
    if (reporter === undefined) {
      reporter = new StatsReporter(category, this.writers);
      this.reporters.set(category, reporter);
    }
    return reporter;
  }

  /** Closes every writer (event files are flushed and closed). */
  close(): void {
    for (const writer of this.writers) writer.close?.();
  }
}

/** Collects the stats of one category and writes their summaries to the registry's writers. */
export class StatsReporter {
  private readonly stats = new Map<string, StatValues>();

  constructor(
    readonly category: string,
    private readonly writers: readonly StatsWriter[],
  ) {}

  addProperty(type: StatsPropertyType.HYPERPARAMETERS, value: Hyperparameters): void;
  addProperty(type: StatsPropertyType.SELF_PLAY, value: boolean): void;
  addProperty(type: StatsPropertyType, value: unknown): void {
    for (const writer of this.writers) writer.addProperty?.(this.category, type, value);
  }

  /**
   * Adds a value to the key's values of this summary period. MOST_RECENT keeps only the latest
   * value, as set_stat does: upstream routes every MOST_RECENT stat through set_stat.
   */
  addStat(key: string, value: number, aggregation = StatsAggregationMethod.AVERAGE): void {
    if (aggregation === StatsAggregationMethod.MOST_RECENT) {
      this.setStat(key, value);
      return;
    }
    this.valuesOf(key, aggregation).push(value);
    for (const writer of this.writers) writer.onAddStat?.(this.category, key, value, aggregation);
  }

  /** Replaces the key's values with this one: for values where only the latest counts. */
  setStat(key: string, value: number): void {
    this.valuesOf(key, StatsAggregationMethod.MOST_RECENT).replace(value);
    for (const writer of this.writers) {
      writer.onAddStat?.(this.category, key, value, StatsAggregationMethod.MOST_RECENT);
    }
  }

  /** The summary of a key since the last write, or null when it received no value. */
  getStatsSummary(key: string): StatsSummary | null {
    const values = this.stats.get(key);
    return values === undefined || values.length === 0 ? null : values.summary();
  }

  /** Hands every key's summary to every writer at `step`, then starts a new summary period. */
  writeStats(step: number): void {
    const summaries = new Map<string, StatsSummary>();
    for (const [key, values] of this.stats) {
      if (values.length > 0) summaries.set(key, values.summary());
    }
    for (const writer of this.writers) writer.writeStats(this.category, summaries, step);
    this.stats.clear();
  }

  private valuesOf(key: string, method: StatsAggregationMethod): StatValues {
    let values = this.stats.get(key);
    if (values === undefined) {
      values = new StatValues(method);
      this.stats.set(key, values);
    }
    // As upstream, the method given last decides how the key is summarized.
    values.method = method;
    return values;
  }
}
