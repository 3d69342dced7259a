/**
 * The GhostController: the order teams learn in, the reset after a change, and the ELO change of
 * a game, checked against upstream's GhostController run on the same ratings (numbers printed by
 * ml-agents release_21's ghost/controller.py).
 */
import { memoryLogger } from '../../../src/common/logger';
import { GhostController, RatedOpponent, eloChange } from '../../../src/trainers/ghost/controller';

/** A team's trainer whose opponent is slot `opponent` of `ratings`, as upstream's policy_elos. */
function rated(ratings: number[], opponent: number): RatedOpponent & { ratings: number[] } {
  return {
    ratings,
    get opponentElo() {
      return ratings[opponent];
    },
    changeOpponentElo(change: number) {
      ratings[opponent] -= change;
    },
  };
}

describe('GhostController: teams take turns', () => {
  it('the first team to appear learns; a change passes learning on, resets once, and comes back around', () => {
    const controller = new GhostController(memoryLogger());
    expect(controller.learningTeam).toBe(-1);
    const trainer = rated([1200], 0);
    for (const team of [0, 1, 2]) controller.subscribeTeam(team, trainer);
    controller.subscribeTeam(1, trainer); // a second behavior of a team changes nothing
    expect(controller.teamOrder).toEqual([0, 1, 2]);
    expect(controller.shouldReset()).toBe(false);
    controller.changeTrainingTeam(100);
    expect(controller.learningTeam).toBe(1);
    expect(controller.teamOrder).toEqual([1, 2, 0]);
    expect(controller.shouldReset()).toBe(true);
    expect(controller.shouldReset()).toBe(false);
    controller.changeTrainingTeam(200);
    controller.changeTrainingTeam(300);
    expect(controller.learningTeam).toBe(0);
  });

  it('a resumed run takes up the recorded turn, whatever order the teams appear in', () => {
    const controller = new GhostController(memoryLogger());
    controller.restoreTeamOrder([1, 0]);
    controller.subscribeTeam(0, rated([1200], 0));
    controller.subscribeTeam(1, rated([1200], 0));
    expect(controller.teamOrder).toEqual([1, 0]);
    controller.subscribeTeam(2, rated([1200], 0));
    expect(controller.teamOrder).toEqual([1, 0, 2]);
  });
});

describe('GhostController: ELO (upstream compute_elo_rating_changes)', () => {
  it('matches upstream on a series of games, the opponent snapshot losing what the learner gains', () => {
    const controller = new GhostController(memoryLogger());
    const learner = rated([1200, 1200, 1200, 1200], 0);
    const opponent = rated([1400, 1000, 1250, 1300], 2);
    controller.subscribeTeam(0, learner);
    controller.subscribeTeam(1, opponent);
    // [learner's rating, result, upstream's change, the opponent's slot after it]
    const games: Array<[number, number, number, number]> = [
      [1300, 1, 0.4285368825916185, 1249.5714631174085],
      [1300, 0, -0.5720671265900216, 1250.1435302439986],
      [1300, 0.5, -0.07126076836696793, 1250.2147910123656],
      [1500, 1, 0.19187397421268826, 1250.0229170381529],
    ];
    for (const [rating, result, change, after] of games) {
      expect(controller.computeEloRatingChange(rating, result)).toBeCloseTo(change, 12);
      expect(opponent.ratings[2]).toBeCloseTo(after, 9);
    }
    expect(learner.ratings).toEqual([1200, 1200, 1200, 1200]);
    expect(opponent.ratings.filter((_, i) => i !== 2)).toEqual([1400, 1000, 1300]);
  });

  it('equal ratings expect half a point: a win gains 0.5, a draw nothing', () => {
    expect(eloChange(1200, 1200, 1)).toBe(0.5);
    expect(eloChange(1200, 1200, 0.5)).toBe(0);
    expect(eloChange(1600, 1200, 0)).toBeCloseTo(-10 / 11, 12);
  });
});
