#!/usr/bin/env node
/**
 * Basic, as Unity's Basic example: an agent on a line of 20 cells starts at cell 10; a small goal
 * at cell 7 pays 0.1, a large goal at cell 17 pays 1, and every step costs 0.01. One discrete
 * branch of 3 actions: 0 stay, 1 left, 2 right. The observation is the one-hot position (20).
 */
import { Academy } from '../sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../sdk/agent';
import { SimDefinition, SimOptionValues, intOption, runEnvironmentMain } from '../sdk/run-environment';

const MIN_POSITION = 0;
const MAX_POSITION = 20;
const EXTENTS = MAX_POSITION - MIN_POSITION;
const START_POSITION = 10;
const SMALL_GOAL = 7;
const LARGE_GOAL = 17;
const SMALL_GOAL_REWARD = 0.1;
const LARGE_GOAL_REWARD = 1;
const STEP_PENALTY = -0.01;

export const BASIC_BEHAVIOR: BehaviorParameters = {
  behaviorName: 'Basic',
  observations: [{ kind: 'vector', shape: [EXTENTS], name: 'BasicSensor' }],
  continuousActions: 0,
  discreteBranches: [3],
};

export class BasicAgent extends Agent {
  position = START_POSITION;

  constructor() {
    super(BASIC_BEHAVIOR);
  }

  override onEpisodeBegin(): void {
    this.position = START_POSITION;
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    writer.addOneHot(this.position, EXTENTS);
  }

  override onActionReceived(actions: ActionBuffers): void {
    const direction = actions.discrete[0] === 1 ? -1 : actions.discrete[0] === 2 ? 1 : 0;
    this.position = Math.min(MAX_POSITION, Math.max(MIN_POSITION, this.position + direction));
    this.addReward(STEP_PENALTY);
    if (this.position === SMALL_GOAL) {
      this.addReward(SMALL_GOAL_REWARD);
      this.endEpisode();
    } else if (this.position === LARGE_GOAL) {
      this.addReward(LARGE_GOAL_REWARD);
      this.endEpisode();
    }
  }

  /** Walks to the large goal: 0.93 an episode. */
  override heuristic(actionsOut: ActionBuffers): void {
    actionsOut.discrete[0] = 2;
  }
}

export const BASIC: SimDefinition = {
  name: 'Basic',
  description: 'a line of 20 cells with a small and a large goal (Unity\'s Basic example)',
  options: { agents: { type: 'string', default: '1', description: 'agents per training area' } },
  create(academy: Academy, options: SimOptionValues, numAreas: number): void {
    const count = intOption(options, 'agents') * numAreas;
    for (let i = 0; i < count; i++) academy.addAgent(new BasicAgent());
  },
};

if (require.main === module) {
  runEnvironmentMain(BASIC, process.argv.slice(2)).then((code) => process.exit(code));
}
