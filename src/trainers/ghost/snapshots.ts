/**
 * The past policies a ghost trainer keeps and their ratings (upstream's policy_snapshots and
 * policy_elos in ghost/trainer.py): a ring of `window` snapshots, each taken every save_steps,
 * and one ELO rating per slot plus the learning policy's own, last.
 */
import type { SeededRandom } from '../../common/random';
import type { CheckpointArray } from '../../networks/checkpoint-file';

/** A policy's weights and normalizer statistics, copied (ActorCritic.stateArrays). */
export type Weights = ReadonlyMap<string, CheckpointArray>;

/** Which snapshot a team plays: an index into the window, or LATEST for the learning policy's newest weights. */
export const LATEST = -1;

export class SnapshotWindow {
  readonly snapshots: Weights[] = [];
  /** One rating per slot, then the learning policy's: window + 1 of them. */
  readonly ratings: number[];
  /** The slot the next snapshot takes. */
  nextSlot = 0;

  constructor(
    readonly window: number,
    initialElo: number,
  ) {
    this.ratings = new Array<number>(window + 1).fill(initialElo);
  }

  get currentElo(): number {
    return this.ratings[this.window];
  }

  set currentElo(rating: number) {
    this.ratings[this.window] = rating;
  }

  /** The rating of a snapshot (LATEST: the learning policy's). */
  ratingOf(opponent: number): number {
    return this.ratings[opponent === LATEST ? this.window : opponent];
  }

  /** The opponent lost `change` of rating; LATEST is the learning policy itself, as upstream's index -1. */
  lowerRating(opponent: number, change: number): void {
    this.ratings[opponent === LATEST ? this.window : opponent] -= change;
  }

  /** Keeps `weights` in the next slot, overwriting the oldest once the window is full; the slot takes the current rating. */
  save(weights: Weights): void {
    if (this.nextSlot < this.snapshots.length) this.snapshots[this.nextSlot] = weights;
    else this.snapshots.push(weights);
    this.ratings[this.nextSlot] = this.currentElo;
    this.nextSlot = (this.nextSlot + 1) % this.window;
  }

  /**
   * The opponent of the next games: the latest policy with probability
   * play_against_latest_model_ratio, otherwise a snapshot drawn uniformly from the window.
   */
  pickOpponent(random: SeededRandom, playAgainstLatestRatio: number): number {
    if (random.next() < 1 - playAgainstLatestRatio) return random.int(this.snapshots.length);
    return LATEST;
  }
}

/** A copy of weights that later training cannot change. */
export function copyWeights(weights: Weights): Weights {
  return new Map([...weights].map(([name, values]) => [name, values.slice()]));
}
