/**
 * The parts of a behavior name as Unity sends it (upstream's BehaviorIdentifiers,
 * behavior_id_utils.py): Unity appends `?team=N` to the Behavior Name when an agent's Team Id is
 * set. The name before `?` picks the trainer and its configuration; the team id picks the side
 * in self-play. A name without a team is team 0.
 */

export interface BehaviorIdentifiers {
  /** The whole name, as the environment sent it (e.g. `Striker?team=1`). */
  readonly behaviorId: string;
  /** The name before `?`: the key under `behaviors:` and the folder of the run. */
  readonly brainName: string;
  readonly teamId: number;
}

/**
 * Splits a behavior name as upstream's (a URL's path and query): the first `team` parameter of
 * the query is the team id. A team that is not a whole number is refused, naming the behavior.
 */
export function parseBehaviorId(behaviorId: string): BehaviorIdentifiers {
  const withoutFragment = behaviorId.split('#', 1)[0];
  const queryAt = withoutFragment.indexOf('?');
  if (queryAt < 0) return { behaviorId, brainName: withoutFragment, teamId: 0 };
  const team = new URLSearchParams(withoutFragment.slice(queryAt + 1)).get('team');
  // As Python's parse_qs, a parameter without a value counts as absent.
  const teamId = team === null || team === '' ? 0 : Number(team.trim());
  if (!Number.isInteger(teamId)) {
    throw new Error(
      `The behavior name ${JSON.stringify(behaviorId)} has team ${JSON.stringify(team)}, which is not a whole number: ` +
        "set the agents' Team Id in Behavior Parameters to 0, 1, ...",
    );
  }
  return { behaviorId, brainName: withoutFragment.slice(0, queryAt), teamId };
}
