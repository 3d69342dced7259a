/** The critic's memories kept per agent between trajectory pieces, and their bound. */
import { memoryLogger } from '../../src/common/logger';
import { ActionSpec } from '../../src/env/behavior-spec';
import { selectBackend } from '../../src/networks/backend';
import { AgentBuffer, BufferKey } from '../../src/trainers/buffer';
import { CriticMemories } from '../../src/trainers/critic-memories';
import { Trajectory } from '../../src/trainers/trajectory';
import { behavior, model } from '../networks/model-fixtures';

beforeAll(async () => {
  await selectBackend('wasm', memoryLogger());
});

const spec = behavior([2], ActionSpec.createContinuous(1));

/** A 2-step piece of `agentId`'s episode. */
function piece(agentId: string, done: boolean): Trajectory {
  return new Trajectory({
    agentId,
    behaviorId: 'B',
    steps: {
      length: 2,
      obs: [new Float32Array([0.5, -1, 1, 0.25])],
      continuousActions: new Float32Array(2),
      discreteActions: new Int32Array(0),
      continuousLogProbs: new Float32Array(2),
      discreteLogProbs: new Float32Array(0),
      actionMasks: new Float32Array(0),
      prevActions: new Int32Array(0),
      rewards: new Float32Array(2),
      groupRewards: new Float32Array(2),
      groupStatuses: [[], []],
    },
    nextObs: [new Float32Array([1, 1])],
    nextGroupObs: [],
    doneReached: done,
    interrupted: false,
  });
}

/** The critic memories the piece's first step starts from. */
function startOf(memories: CriticMemories, agentId: string, done = false): number[] {
  const buffer = new AgentBuffer();
  memories.estimate(piece(agentId, done), buffer, true);
  return Array.from(buffer.get(BufferKey.CRITIC_MEMORY).row(0));
}

describe('CriticMemories', () => {
  const net = model(spec, { network: { hidden_units: 8, num_layers: 1, memory: { memory_size: 4, sequence_length: 2 } } });
  const zeros = [0, 0, 0, 0];

  it('runs the critic on from where the agent\'s previous piece left it, and from zeros after its episode ended', () => {
    const memories = new CriticMemories(net, 2);
    expect(startOf(memories, 'a')).toEqual(zeros);
    expect(startOf(memories, 'a', true)).not.toEqual(zeros);
    expect(startOf(memories, 'a')).toEqual(zeros);
    expect(memories.size).toBe(1);
  });

  it('keeps at most its capacity of agents, dropping the least recently updated', () => {
    const memories = new CriticMemories(net, 2, 3);
    for (const agent of ['a', 'b', 'c']) startOf(memories, agent);
    startOf(memories, 'a'); // a is now the most recently updated
    startOf(memories, 'd'); // past 3: b goes
    expect(memories.size).toBe(3);
    expect(startOf(memories, 'b')).toEqual(zeros);
    expect(startOf(memories, 'a')).not.toEqual(zeros);
  });
});
