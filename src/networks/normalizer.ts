/**
 * Running normalization of vector observations (network_settings.normalize), as upstream's
 * Normalizer: a running mean and a running sum of squared deviations, updated batch by batch
 * (the parallel form of Welford's algorithm), and observations mapped to
 * clip((x - mean) / sqrt(variance / steps), -5, 5).
 *
 * The statistics start as upstream's do: steps 1, mean 0, variance 1. They are kept in float64,
 * so that millions of steps do not wear away their precision.
 */
import { CheckpointArray, requireCheckpointArray } from './checkpoint-file';

/** Normalized values are clipped to [-NORMALIZED_CLIP, NORMALIZED_CLIP]. */
export const NORMALIZED_CLIP = 5;

/** A normalizer's statistics, as they travel between threads. */
export interface NormalizerState {
  readonly steps: number;
  readonly mean: Float64Array;
  readonly variance: Float64Array;
}

export class RunningNormalizer implements NormalizerState {
  /** Observations seen, plus the one upstream starts with. */
  steps = 1;
  readonly mean: Float64Array;
  /** Sum of squared deviations from the mean (upstream's running_variance). */
  readonly variance: Float64Array;

  constructor(readonly size: number) {
    this.mean = new Float64Array(size);
    this.variance = new Float64Array(size).fill(1);
  }

  /** Adds `count` observations (row-major, count x size) to the statistics. */
  update(observations: Float32Array, count: number): void {
    if (count === 0) return;
    const size = this.size;
    const totalSteps = this.steps + count;
    for (let f = 0; f < size; f++) {
      const oldMean = this.mean[f];
      let shift = 0;
      for (let i = 0; i < count; i++) shift += observations[i * size + f] - oldMean;
      const newMean = oldMean + shift / totalSteps;
      let squares = 0;
      for (let i = 0; i < count; i++) {
        const x = observations[i * size + f];
        squares += (x - newMean) * (x - oldMean);
      }
      this.mean[f] = newMean;
      this.variance[f] += squares;
    }
    this.steps = totalSteps;
  }

  /** One normalized value of feature `f`. */
  normalize(x: number, f: number): number {
    const scaled = (x - this.mean[f]) / Math.sqrt(this.variance[f] / this.steps);
    return scaled > NORMALIZED_CLIP ? NORMALIZED_CLIP : scaled < -NORMALIZED_CLIP ? -NORMALIZED_CLIP : scaled;
  }

  /** Normalizes `count` rows (row-major, count x size) in place. */
  normalizeRows(rows: Float32Array, count: number): Float32Array {
    const size = this.size;
    for (let i = 0; i < count; i++) {
      for (let f = 0; f < size; f++) rows[i * size + f] = this.normalize(rows[i * size + f], f);
    }
    return rows;
  }

  /** Its statistics as checkpoint arrays: normalizer.mean, normalizer.variance, normalizer.steps. */
  stateArrays(): Array<[string, CheckpointArray]> {
    return [
      ['normalizer.mean', this.mean],
      ['normalizer.variance', this.variance],
      ['normalizer.steps', new Float64Array([this.steps])],
    ];
  }

  /** Restores stateArrays(); a missing or misshapen array throws, naming it. */
  loadStateArrays(arrays: ReadonlyMap<string, CheckpointArray>): void {
    this.mean.set(requireCheckpointArray(arrays, 'normalizer.mean', this.size));
    this.variance.set(requireCheckpointArray(arrays, 'normalizer.variance', this.size));
    this.steps = requireCheckpointArray(arrays, 'normalizer.steps', 1)[0];
  }

  copyFrom(other: NormalizerState): void {
    if (other.mean.length !== this.size) {
      throw new Error(`Cannot copy a normalizer of ${other.mean.length} features into one of ${this.size}.`);
    }
    this.steps = other.steps;
    this.mean.set(other.mean);
    this.variance.set(other.variance);
  }

  /** A copy of its statistics. */
  state(): NormalizerState {
    return { steps: this.steps, mean: this.mean.slice(), variance: this.variance.slice() };
  }

  /**
   * The statistics of the observations update() added since `earlier` (its state() then), on
   * their own: their count, mean and sum of squared deviations. Undoes the combination merge() does.
   */
  addedSince(earlier: NormalizerState): NormalizerState {
    const added = this.steps - earlier.steps;
    const mean = new Float64Array(this.size);
    const variance = new Float64Array(this.size);
    if (added > 0) {
      for (let f = 0; f < this.size; f++) {
        mean[f] = (this.steps * this.mean[f] - earlier.steps * earlier.mean[f]) / added;
        const shift = mean[f] - earlier.mean[f];
        variance[f] = this.variance[f] - earlier.variance[f] - ((earlier.steps * added) / this.steps) * shift * shift;
      }
    }
    return { steps: added, mean, variance };
  }

  /**
   * Adds observations described by their own statistics (another normalizer's addedSince()), as
   * update() would have added them: the pairwise combination of Chan, Golub and LeVeque, which
   * update() itself computes for a batch, so the order in which observations arrive does not matter.
   */
  merge(added: NormalizerState): void {
    if (added.steps === 0) return;
    const total = this.steps + added.steps;
    for (let f = 0; f < this.size; f++) {
      const shift = added.mean[f] - this.mean[f];
      this.mean[f] += (shift * added.steps) / total;
      this.variance[f] += added.variance[f] + ((shift * shift * this.steps * added.steps) / total);
    }
    this.steps = total;
  }
}
