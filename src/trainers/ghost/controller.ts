/**
 * The one coordinator of a run's self-play (upstream's GhostController, ghost/controller.py):
 * which team learns now, the order the others take turns in, and the ELO arithmetic between the
 * learning team and the snapshot it plays against, whichever ghost trainer holds that snapshot
 * (in an asymmetric game each team has a trainer of its own).
 */
import type { Logger } from '../../common/logger';

/** What the controller reads and changes of the trainer of a team that is not learning. */
export interface RatedOpponent {
  /** The rating of the snapshot its team plays now. */
  readonly opponentElo: number;
  /** The learning team gained `change` against it: its snapshot loses as much. */
  changeOpponentElo(change: number): void;
}

/** Upstream's deque maxlen: at most this many teams wait for their turn. */
const MAX_WAITING_TEAMS = 10;

/**
 * The learning policy's rating change after one game: the result (1 win, 0.5 draw, 0 loss) less
 * the expected score against the opponent's rating, with upstream's K of 1.
 */
export function eloChange(rating: number, opponentRating: number, result: number): number {
  const mine = 10 ** (rating / 400);
  const theirs = 10 ** (opponentRating / 400);
  return result - mine / (mine + theirs);
}

export class GhostController {
  private learning = -1;
  /** The teams waiting for their turn to learn, next first. */
  private waiting: number[] = [];
  private readonly trainers = new Map<number, RatedOpponent>();
  private changedTeam = false;

  constructor(private readonly logger: Logger) {}

  /** The team that learns now; -1 before any team appeared. */
  get learningTeam(): number {
    return this.learning;
  }

  /** The learning team, then the waiting ones in turn: what a checkpoint records. */
  get teamOrder(): number[] {
    return this.learning < 0 ? [] : [this.learning, ...this.waiting];
  }

  /**
   * A resumed run takes up the turns where its checkpoint left them; teams that appear later
   * than those recorded queue up as usual.
   */
  restoreTeamOrder(order: readonly number[]): void {
    if (order.length === 0) return;
    [this.learning, ...this.waiting] = order;
  }

  /** A team's trainer, once per team; the first team to appear learns first. */
  subscribeTeam(teamId: number, trainer: RatedOpponent): void {
    if (this.trainers.has(teamId)) return;
    this.trainers.set(teamId, trainer);
    if (this.teamOrder.includes(teamId)) return;
    if (this.learning < 0) {
      this.learning = teamId;
    } else {
      this.waiting.push(teamId);
      if (this.waiting.length > MAX_WAITING_TEAMS) this.waiting.shift();
    }
  }

  /** The learning team goes to the back of the line; the next one learns. */
  changeTrainingTeam(step: number): void {
    this.waiting.push(this.learning);
    if (this.waiting.length > MAX_WAITING_TEAMS) this.waiting.shift();
    this.learning = this.waiting.shift()!;
    this.changedTeam = true;
    this.logger.debug(`Self-play: team ${this.learning} learns from step ${step}.`);
  }

  /** True once after each change of the learning team: the environments are then reset, as upstream's. */
  shouldReset(): boolean {
    const changed = this.changedTeam;
    this.changedTeam = false;
    return changed;
  }

  /**
   * One finished game of the learning team, `result` from its side: the opponents' snapshots
   * lose what it gains. Returns the learning policy's change.
   */
  computeEloRatingChange(rating: number, result: number): number {
    const opponents = [...this.trainers].filter(([team]) => team !== this.learning).map(([, trainer]) => trainer);
    // As upstream, with more than two teams the last one's snapshot is the rating played against.
    const opponentRating = opponents.length === 0 ? 0 : opponents[opponents.length - 1].opponentElo;
    const change = eloChange(rating, opponentRating, result);
    for (const opponent of opponents) opponent.changeOpponentElo(change);
    return change;
  }
}
