/**
 * The in-process twin of a built environment under test: the same SimDefinition, seed and options
 * in an Academy of our own, fed the actions the test sends over gRPC and paused where the real one
 * waits for the trainer, so that a test can read where everything is (its agents' fields) and
 * compare what came over the wire with what the world holds.
 */
import { createHash } from 'crypto';
import { SeededRandom } from '../../src/common/random';
import { UnityEnvironment } from '../../src/env/unity-environment';
import { Academy, Brain, InfoBatch } from '../../src/sims/sdk/academy';
import { Agent } from '../../src/sims/sdk/agent';
import { SimDefinition, parseSimArgs } from '../../src/sims/sdk/run-environment';

/** What the agents reported at one decision, by agent id. */
export interface Snapshot {
  ids: number[];
  done: number[];
  reward: number[];
  observations: Map<number, Float32Array[]>;
}

/** A mirror of one behavior with one discrete branch, the only kind its tests drive. */
export class Mirror<A extends Agent> {
  readonly academy = new Academy();
  readonly agents: A[];
  private nextDecision: Promise<Snapshot>;
  private reached: ((snapshot: Snapshot) => void) | undefined;
  private answer: ((actions: Map<number, number>) => void) | undefined;

  constructor(
    definition: SimDefinition,
    private readonly behavior: string,
    seed: number,
    argv: string[] = [],
  ) {
    this.academy.seed(seed);
    definition.create(this.academy, parseSimArgs(definition, argv).values, 1);
    this.agents = this.academy.agents as A[];
    this.academy.reset();
    this.nextDecision = this.waitForDecision();
    const brain: Brain = { decide: (batches) => this.decide(batches) };
    void (async () => {
      for (;;) await this.academy.step(brain);
    })();
  }

  byId(id: number): A {
    return this.agents.find((a) => a.id === id)!;
  }

  /** What the agents reported at the decision the academy now waits at; their state is the trainer's. */
  decision(): Promise<Snapshot> {
    return this.nextDecision;
  }

  /** Gives the waiting decision its actions (by agent id); the academy runs on to the next one. */
  act(ids: ArrayLike<number>, actions: ArrayLike<number>): void {
    const answer = this.answer!;
    this.answer = undefined;
    this.nextDecision = this.waitForDecision();
    answer(new Map(Array.from(ids, (id, row) => [id, actions[row]])));
  }

  private waitForDecision(): Promise<Snapshot> {
    return new Promise((resolve) => (this.reached = resolve));
  }

  private async decide(batches: ReadonlyMap<string, InfoBatch>) {
    const batch = batches.get(this.behavior)!;
    const snapshot: Snapshot = {
      ids: Array.from(batch.id.subarray(0, batch.count)),
      done: Array.from(batch.done.subarray(0, batch.count)),
      reward: Array.from(batch.reward.subarray(0, batch.count)),
      observations: new Map(),
    };
    const sizes = batch.observations.map((o) => o.length / (2 * this.agents.length));
    for (let row = 0; row < batch.count; row++) {
      if (batch.done[row]) continue;
      snapshot.observations.set(batch.id[row], batch.observations.map((o, i) => o.slice(row * sizes[i], (row + 1) * sizes[i])));
    }
    const chosen = new Promise<Map<number, number>>((resolve) => (this.answer = resolve));
    this.reached!(snapshot);
    const actions = await chosen;
    const discrete = Int32Array.from(batch.decidingAgents(), (agent) => actions.get(agent.id)!);
    return { kind: 'actions' as const, actions: new Map([[this.behavior, { continuous: new Float32Array(0), discrete }]]) };
  }
}

/**
 * What a reset environment reports over `decisions` decisions of seeded random play (one discrete
 * branch of `actions`), one digest a decision: to tell whether two runs saw the same world.
 */
export async function randomPlayTrace(env: UnityEnvironment, behavior: string, decisions: number, actions: number): Promise<string[]> {
  const choose = new SeededRandom(4);
  const trace: string[] = [];
  for (let step = 0; step < decisions; step++) {
    const [decision, terminal] = env.getSteps(behavior);
    const digest = createHash('sha256');
    for (const array of [decision.agentId, decision.reward, ...decision.obs, terminal.agentId, terminal.reward]) {
      digest.update(Buffer.from(Float64Array.from(array).buffer));
    }
    trace.push(digest.digest('hex'));
    env.setActions(behavior, { discrete: Array.from(decision.agentId, () => [choose.int(actions)]) });
    await env.step();
  }
  return trace;
}
