/** The Academy's stepping rules, in process, with a brain that records what it is asked. */
import { ActionsByBehavior, Academy, Brain, Decision, InfoBatch } from '../../src/sims/sdk/academy';
import { ActionBuffers, Agent, BehaviorParameters, ObservationWriter } from '../../src/sims/sdk/agent';
import { HeuristicBrain } from '../../src/sims/sdk/brains';

/** Counts its steps; its observation is [step count, last action]; ends after `endAt` steps if set. */
class CountingAgent extends Agent {
  acted: number[] = [];
  episodesBegun = 0;

  constructor(behavior: Partial<BehaviorParameters> = {}, private readonly endAt = 0) {
    super({ behaviorName: 'Counter', observations: [{ kind: 'vector', shape: [2] }], continuousActions: 1, discreteBranches: [3], ...behavior });
  }

  override onEpisodeBegin(): void {
    this.episodesBegun += 1;
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    writer.add(this.stepCount);
    writer.add(this.acted[this.acted.length - 1] ?? -1);
  }

  override onActionReceived(actions: ActionBuffers): void {
    this.acted.push(actions.continuous[0]);
    this.addReward(1);
    if (this.endAt > 0 && this.stepCount >= this.endAt) this.endEpisode();
  }

  override writeDiscreteActionMask(mask: import('../../src/sims/sdk/agent').ActionMask): void {
    mask.setActionEnabled(0, 2, false);
  }

  override heuristic(out: ActionBuffers): void {
    out.continuous[0] = 0.5;
  }
}

/** Answers every agent that asks with the action `next()`, and keeps copies of the batches. */
class RecordingBrain implements Brain {
  readonly seen: Array<{ ids: number[]; done: number[]; maxStep: number[]; reward: number[]; obs: number[]; mask: number[] }> = [];
  private counter = 0;

  async decide(batches: ReadonlyMap<string, InfoBatch>): Promise<Decision> {
    const actions = new Map<string, { continuous: Float32Array; discrete: Int32Array }>();
    for (const [name, batch] of batches) {
      this.seen.push({
        ids: Array.from(batch.id.subarray(0, batch.count)),
        done: Array.from(batch.done.subarray(0, batch.count)),
        maxStep: Array.from(batch.maxStepReached.subarray(0, batch.count)),
        reward: Array.from(batch.reward.subarray(0, batch.count)),
        obs: Array.from(batch.observations[0].subarray(0, batch.count * 2)),
        mask: Array.from(batch.actionMask.subarray(0, batch.count * batch.actionMaskSize)),
      });
      const deciding = batch.decidingAgents().length;
      const continuous = new Float32Array(deciding).map(() => (this.counter += 1));
      actions.set(name, { continuous, discrete: new Int32Array(deciding) });
    }
    return { kind: 'actions', actions: actions as ActionsByBehavior };
  }
}

it('asks for decisions every decisionPeriod steps and repeats the action in between', async () => {
  const academy = new Academy();
  const agent = new CountingAgent({ decisionPeriod: 3 });
  academy.addAgent(agent);
  academy.reset();
  const brain = new RecordingBrain();
  for (let i = 0; i < 7; i++) await academy.step(brain);
  // Decisions at academy steps 0, 3 and 6 only: as Unity, the brain is not asked at steps where
  // no agent reports. The agent acts at every step with the last decision.
  expect(brain.seen.map((s) => s.ids)).toEqual([[1], [1], [1]]);
  expect(agent.acted).toEqual([1, 1, 1, 2, 2, 2, 3]);
  // Reward accumulates between decisions and is reported with the next decision.
  expect(brain.seen[1].reward).toEqual([3]);
  // The mask forbids the third action of the branch.
  expect(brain.seen[0].mask).toEqual([0, 0, 1]);
});

it('does not act between decisions when takeActionsBetweenDecisions is off', async () => {
  const academy = new Academy();
  const agent = new CountingAgent({ decisionPeriod: 2, takeActionsBetweenDecisions: false });
  academy.addAgent(agent);
  academy.reset();
  const brain = new RecordingBrain();
  for (let i = 0; i < 4; i++) await academy.step(brain);
  expect(agent.acted).toEqual([1, 2]);
});

it('reports an episode end as a terminal step beside the next episode\'s first decision, under the same id', async () => {
  const academy = new Academy();
  const agent = new CountingAgent({}, 2);
  academy.addAgent(agent);
  academy.reset();
  const brain = new RecordingBrain();
  for (let i = 0; i < 3; i++) await academy.step(brain);
  expect(brain.seen[2].ids).toEqual([1, 1]);
  expect(brain.seen[2].done).toEqual([1, 0]);
  expect(brain.seen[2].maxStep).toEqual([0, 0]);
  expect(brain.seen[2].reward).toEqual([1, 0]);
  // The terminal observation is taken after the last action (2 steps, action 2); the new
  // episode's first decision comes at its step 1.
  expect(brain.seen[2].obs).toEqual([2, 2, 1, 2]);
  expect(agent.episodesBegun).toBe(2);
  expect(agent.completedEpisodeCount).toBe(1);
});

it('interrupts an episode at maxStep', async () => {
  const academy = new Academy();
  academy.addAgent(new CountingAgent({ maxStep: 2 }));
  academy.reset();
  const brain = new RecordingBrain();
  for (let i = 0; i < 3; i++) await academy.step(brain);
  expect(brain.seen[2].done).toEqual([1, 0]);
  expect(brain.seen[2].maxStep).toEqual([1, 0]);
  expect(brain.seen[1].done).toEqual([0]);
});

it('lets the heuristics decide when no trainer does', async () => {
  const academy = new Academy();
  const agent = new CountingAgent();
  academy.addAgent(agent);
  academy.reset();
  const brain = new HeuristicBrain();
  for (let i = 0; i < 3; i++) await academy.step(brain);
  expect(agent.acted).toEqual([0.5, 0.5, 0.5]);
});

it('refuses agents of one behavior with different specs', () => {
  const academy = new Academy();
  academy.addAgent(new CountingAgent());
  expect(() => academy.addAgent(new CountingAgent({ continuousActions: 2 }))).toThrow(/must all have the same observations and actions/);
});

/** Sees a 1-pixel grayscale camera showing its step in the episode, its last 3 frames stacked. */
class StackingAgent extends Agent {
  constructor(private readonly endAt: number) {
    super({
      behaviorName: 'Stacking',
      observations: [{ kind: 'visual', channels: 1, height: 1, width: 1, compressed: false, stacks: 3 }],
      continuousActions: 1,
      discreteBranches: [],
    });
  }

  override collectObservations(_index: number, writer: ObservationWriter): void {
    writer.add(this.stepCount);
  }

  override onActionReceived(): void {
    if (this.stepCount >= this.endAt) this.endEpisode();
  }
}

it('stacks a camera\'s frames oldest first, zeros before an episode\'s first ones, as Unity\'s StackingSensor', async () => {
  const academy = new Academy();
  academy.addAgent(new StackingAgent(3));
  const seen: Array<{ done: number[]; frames: number[] }> = [];
  academy.addBatchListener((batches) => {
    const batch = batches.get('Stacking')!;
    seen.push({ done: Array.from(batch.done.subarray(0, batch.count)), frames: Array.from(batch.observations[0].subarray(0, 3 * batch.count)) });
  });
  academy.reset();
  for (let step = 0; step < 5; step++) await academy.step(new HeuristicBrain());
  expect(seen).toEqual([
    { done: [0], frames: [0, 0, 1] },
    { done: [0], frames: [0, 1, 2] },
    { done: [0], frames: [1, 2, 3] },
    // The episode ends at its third step: its terminal frame (of that step again), then a new
    // episode whose stack starts empty.
    { done: [1, 0], frames: [2, 3, 3, 0, 0, 1] },
    { done: [0], frames: [0, 1, 2] },
  ]);
});
