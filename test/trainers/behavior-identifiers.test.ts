/**
 * Behavior names as upstream's BehaviorIdentifiers reads them: the name before `?` and the team
 * of `?team=N` (0 without one).
 */
import { parseBehaviorId } from '../../src/trainers/behavior-identifiers';

describe('parseBehaviorId (upstream BehaviorIdentifiers.from_name_behavior_id)', () => {
  it.each([
    ['1D?team=0', '1D', 0],
    ['1DOpp?team=1', '1DOpp', 1],
    ['SoccerTwos?team=12', 'SoccerTwos', 12],
    ['3DBall', '3DBall', 0],
    ['Striker?other=x&team=3', 'Striker', 3],
    ['Goalie?team=', 'Goalie', 0],
    ['Goalie?team=2#frag', 'Goalie', 2],
  ])('%s: brain %s, team %d', (name, brainName, teamId) => {
    expect(parseBehaviorId(name)).toEqual({ behaviorId: name, brainName, teamId });
  });

  it('refuses a team that is not a whole number, naming the behavior and the fix', () => {
    expect(() => parseBehaviorId('Striker?team=blue')).toThrow(/"Striker\?team=blue" has team "blue".*Team Id/);
  });
});
