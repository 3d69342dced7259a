/**
 * The points of one scalar tag of one behavior, as read from its event files: steps, wall times
 * and values in typed arrays that grow as the run writes more.
 */

/** Points as sent to the page: plain arrays, in the order written. */
export interface SeriesPoints {
  steps: number[];
  wallTimes: number[];
  values: number[];
}

export class ScalarSeries {
  private steps = new Float64Array(64);
  private wallTimes = new Float64Array(64);
  /** TensorBoard scalars are float32 on disk. */
  private values = new Float32Array(64);
  length = 0;

  push(step: number, wallTime: number, value: number): void {
    if (this.length === this.steps.length) this.grow();
    this.steps[this.length] = step;
    this.wallTimes[this.length] = wallTime;
    this.values[this.length] = value;
    this.length++;
  }

  get lastStep(): number {
    return this.length === 0 ? 0 : this.steps[this.length - 1];
  }

  get lastWallTime(): number {
    return this.length === 0 ? 0 : this.wallTimes[this.length - 1];
  }

  /** The point at index i (0 <= i < length). */
  stepAt(i: number): number {
    return this.steps[i];
  }

  wallTimeAt(i: number): number {
    return this.wallTimes[i];
  }

  /** The points from index `from` on, each one. */
  pointsFrom(from: number): SeriesPoints {
    const indices = Array.from({ length: Math.max(0, this.length - from) }, (_, i) => from + i);
    return this.pointsAt(indices);
  }

  /**
   * At most about `maxPoints` points that keep the series' shape: all of them when there are few
   * enough, otherwise per bucket of consecutive points its first, lowest, highest and last, so
   * that no spike vanishes from a chart as wide as the buckets are many.
   */
  overview(maxPoints: number): SeriesPoints {
    if (this.length <= maxPoints) return this.pointsFrom(0);
    const buckets = Math.max(1, Math.floor(maxPoints / 4));
    const indices: number[] = [];
    for (let b = 0; b < buckets; b++) {
      const start = Math.floor((b * this.length) / buckets);
      const end = Math.floor(((b + 1) * this.length) / buckets);
      let low = start;
      let high = start;
      for (let i = start + 1; i < end; i++) {
        if (this.values[i] < this.values[low]) low = i;
        if (this.values[i] > this.values[high]) high = i;
      }
      for (const i of new Set([start, Math.min(low, high), Math.max(low, high), end - 1])) indices.push(i);
    }
    return this.pointsAt(indices);
  }

  private pointsAt(indices: readonly number[]): SeriesPoints {
    return {
      steps: indices.map((i) => this.steps[i]),
      wallTimes: indices.map((i) => this.wallTimes[i]),
      values: indices.map((i) => this.values[i]),
    };
  }

  private grow(): void {
    const size = this.steps.length * 2;
    const steps = new Float64Array(size);
    const wallTimes = new Float64Array(size);
    const values = new Float32Array(size);
    steps.set(this.steps);
    wallTimes.set(this.wallTimes);
    values.set(this.values);
    this.steps = steps;
    this.wallTimes = wallTimes;
    this.values = values;
  }
}
