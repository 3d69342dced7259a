/**
 * For the tests of the built-ins whose agents walk and see with rays (Hallway, Pyramids): reading
 * one ray of a RayPerceptionSensor frame, and acting an agent in process step by step.
 */
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
