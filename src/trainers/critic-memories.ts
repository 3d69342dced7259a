/**
 * What PPO's, SAC's and POCA's trainers share for recurrent critics (upstream's
 * TorchOptimizer.get_trajectory_value_estimates, and the sequence starts its optimizers read).
 *
 * An agent's trajectory arrives in pieces (time_horizon cuts it); the critic's memories must run
 * on from one piece to the next of the same episode, as the agent's own memories do, so they are
 * kept per agent between trajectories and forgotten when its episode ends.
 *
 * A deliberate difference: upstream's PPO and SAC trainers ask for the estimates without the
 * agent's id, so their critic_memory_dict keeps one entry, under "", for whichever trajectory
 * comes next. With one agent (upstream's test environments) that is the same as ours
 * (test/trainers/ppo/recurrent-upstream-update.test.ts); with several, upstream's critic starts
 * a piece from another agent's memories.
 */
import type { ActorCritic } from '../networks/actor-critic';
import { AgentBuffer, BufferKey } from './buffer';
import type { Trajectory } from './trajectory';

/**
 * The most agents whose critic memories are kept between trajectory pieces. An agent that leaves
 * without ending its episode never frees its entry: past this many, the least recently updated go.
 */
export const MAX_CRITIC_MEMORIES = 10_000;

/** The critic's estimates over one trajectory. */
export interface CriticEstimates {
  readonly values: Record<string, Float32Array>;
  /** After the last step, when asked for (PPO's bootstrap); null otherwise. */
  readonly nextValues: Record<string, Float32Array> | null;
}

/**
 * Per agent, a critic's memories where its last trajectory piece ended (upstream's
 * critic_memory_dict; POCA's value and baseline memories), until its episode ends.
 */
export class AgentMemories<T> {
  private readonly byAgent = new Map<string, T>();

  constructor(private readonly capacity = MAX_CRITIC_MEMORIES) {}

  /** How many agents' memories are kept. */
  get size(): number {
    return this.byAgent.size;
  }

  /** Where the agent's previous piece of this episode left its critic; undefined at an episode's start. */
  get(agentId: string): T | undefined {
    return this.byAgent.get(agentId);
  }

  /** Keeps the memories after `trajectory` for its next piece; an ended episode forgets them, interrupted or not, as the agent's own are. */
  keep(trajectory: Trajectory, memories: T): void {
    this.byAgent.delete(trajectory.agentId);
    if (trajectory.doneReached) return;
    // Re-inserted, so that the Map's order is least recently updated first.
    this.byAgent.set(trajectory.agentId, memories);
    if (this.byAgent.size > this.capacity) this.byAgent.delete(this.byAgent.keys().next().value!);
  }
}

export class CriticMemories {
  /** Per agent, the critic's memories where its last trajectory ended. */
  private readonly byAgent: AgentMemories<Float32Array>;

  /** How many agents' memories are kept. */
  get size(): number {
    return this.byAgent.size;
  }

  /** `sequenceLength`: training sequences' length (network_settings.memory.sequence_length). */
  constructor(
    private readonly model: ActorCritic,
    private readonly sequenceLength: number,
    capacity = MAX_CRITIC_MEMORIES,
  ) {
    this.byAgent = new AgentMemories(capacity);
  }

  /**
   * The critic's estimates at each step of `trajectory`, and after its last step when `bootstrap`.
   * With memory, the critic runs sequence after sequence from where the agent's previous piece
   * left it, and the memories each step's sequence started from go in `buffer` (critic_memory)
   * for training.
   */
  estimate(trajectory: Trajectory, buffer: AgentBuffer, bootstrap: boolean): CriticEstimates {
    const model = this.model;
    const n = trajectory.length;
    const observations = trajectory.steps.obs;
    if (model.memorySize === 0) {
      return { values: model.values(observations, n), nextValues: bootstrap ? model.values(trajectory.nextObs, 1) : null };
    }
    const start = this.byAgent.get(trajectory.agentId) ?? new Float32Array(model.memorySize);
    const estimates = model.criticValuesInSequences(observations, n, start, this.sequenceLength);
    buffer.get(BufferKey.CRITIC_MEMORY).set(estimates.stepMemories, model.memorySize);
    this.byAgent.keep(trajectory, estimates.finalMemories);
    return { values: estimates.values, nextValues: bootstrap ? model.values(trajectory.nextObs, 1, estimates.finalMemories) : null };
  }
}

/**
 * The rows (`width` values each) at the start of each sequence of `sequenceLength` rows: every
 * sequenceLength-th row of `values`, from the first (where a recurrent network's memories are read).
 */
export function rowsAtSequenceStarts(values: Float32Array, width: number, sequenceLength: number): Float32Array {
  const rows = width === 0 ? 0 : values.length / width;
  const count = Math.ceil(rows / sequenceLength);
  const starts = new Float32Array(count * width);
  for (let s = 0; s < count; s++) starts.set(values.subarray(s * sequenceLength * width, (s * sequenceLength + 1) * width), s * width);
  return starts;
}
