/**
 * For the tests of the built-ins whose agents walk and see with rays (Hallway, Pyramids): reading
 * one ray of a RayPerceptionSensor frame, acting an agent in process step by step, and playing an
 * episode over gRPC to its MaxStep.
 */
import type { DecisionSteps, TerminalSteps } from '../../src/env/steps';
import type { UnityEnvironment } from '../../src/env/unity-environment';
import { ActionBuffers, Agent } from '../../src/sims/sdk/agent';

/** Ray `ray` of a frame whose rays each hold [one-hot of `tagCount` tags, missed, fraction]. */
export function rayOf(frame: Float32Array, ray: number, tagCount: number): { tag: number | null; missed: number; fraction: number } {
  const values = Array.from(frame.subarray(ray * (tagCount + 2), (ray + 1) * (tagCount + 2)));
  const tag = values.slice(0, tagCount).indexOf(1);
  return { tag: tag === -1 ? null : tag, missed: values[tagCount], fraction: values[tagCount + 1] };
}

/** Has `agent` take the discrete `action` for `steps` steps, or until its episode ends. */
export function act(agent: Agent, action: number, steps = 1): void {
  const out = new ActionBuffers(0, 1);
  out.discrete[0] = action;
  for (let i = 0; i < steps && agent.endRequest === null; i++) agent.onActionReceived(out);
}

/**
 * Over gRPC, has the one agent of `behavior` repeat the discrete `action` until its episode is
 * interrupted at MaxStep, checking on the way that each decision costs `decisionPenalty` and that
 * the same agent starts its next episode in the message that ends this one. Returns the decisions
 * the episode took, the sum of its rewards, and that last message's steps.
 */
export async function playUntilInterrupted(
  env: UnityEnvironment,
  behavior: string,
  action: number,
  decisionPenalty: number,
): Promise<{ decisions: number; total: number; decision: DecisionSteps; terminal: TerminalSteps }> {
  const id = env.getSteps(behavior)[0].agentId[0];
  let total = 0;
  let decisions = 1;
  for (;;) {
    env.setActions(behavior, { discrete: [[action]] });
    await env.step();
    const [decision, terminal] = env.getSteps(behavior);
    if (terminal.length > 0) {
      expect(Array.from(terminal.agentId)).toEqual([id]);
      expect(terminal.interrupted[0]).toBe(1);
      expect(terminal.reward[0]).toBe(decisionPenalty);
      expect(Array.from(decision.agentId)).toEqual([id]);
      expect(decision.reward[0]).toBe(0);
      return { decisions, total: total + terminal.reward[0], decision, terminal };
    }
    decisions += 1;
    expect(decision.reward[0]).toBe(decisionPenalty);
    total += decision.reward[0];
  }
}
