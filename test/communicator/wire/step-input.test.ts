/**
 * The trainer's step message written by hand (encodeStepInputMessage) must decode, with
 * protobufjs, to the message the trainer used to build with protobufjs: one AgentActionProto per
 * agent, the deprecated vector_actions filled beside the continuous and discrete actions. The
 * engine side reads it back into typed arrays (decodeStepInputMessage), with the same result as
 * protobufjs for any valid encoding.
 */
import {
  AgentActionProto,
  CommandProto,
  UnityInputProto,
  UnityMessage,
  UnityMessageProto,
  messageType,
} from '../../../src/communicator/messages';
import {
  ActionSizes,
  BehaviorActionsToSend,
  decodeStepInputMessage,
  encodeStepInputMessage,
  stepInputFromProto,
  tryDecodeStepInputMessage,
} from '../../../src/communicator/wire/step-input';
import { Rng, messyEncode } from './messy-encoder';

/** What UnityEnvironment sent before the hand-written encoder: built object by object for protobufjs. */
function referenceEncoding(command: CommandProto, sideChannel: Uint8Array, behaviors: readonly BehaviorActionsToSend[]): Uint8Array {
  const agentActions: { [name: string]: { value: AgentActionProto[] } } = {};
  for (const b of behaviors) {
    const value: AgentActionProto[] = [];
    for (let i = 0; i < b.count; i++) {
      const continuous = b.continuous.subarray(i * b.continuousSize, (i + 1) * b.continuousSize);
      const discrete = b.discrete.subarray(i * b.discreteSize, (i + 1) * b.discreteSize);
      value.push({
        vector_actions_deprecated: [...Array.from(continuous), ...Array.from(discrete)],
        continuous_actions: continuous,
        discrete_actions: discrete,
      });
    }
    agentActions[b.name] = { value };
  }
  const input: UnityInputProto = { rl_input: { command, agent_actions: agentActions, side_channel: sideChannel } };
  return UnityMessage.encode({ header: { status: 200 }, unity_input: input });
}

const asObject = (bytes: Uint8Array) =>
  messageType('UnityMessageProto').toObject(UnityMessage.decode(Buffer.from(bytes)) as never, {
    defaults: true,
    arrays: true,
    objects: true,
  });

function randomActions(rng: Rng, name: string, count: number, continuousSize: number, discreteSize: number): BehaviorActionsToSend {
  return {
    name,
    count,
    continuousSize,
    discreteSize,
    continuous: Float32Array.from({ length: count * continuousSize }, () => rng.float()),
    discrete: Int32Array.from({ length: count * discreteSize }, () => (rng.chance(0.9) ? rng.int(0, 300) : rng.int32())),
  };
}

describe('encodeStepInputMessage', () => {
  const rng = new Rng(3);
  const cases: Array<[string, CommandProto, Uint8Array, BehaviorActionsToSend[]]> = [
    ['continuous', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Ball', 5, 2, 0)]],
    ['discrete', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Grid', 4, 0, 3)]],
    ['hybrid', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Hybrid', 3, 2, 2)]],
    ['zero agents', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Empty', 0, 2, 1)]],
    ['no action at all', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Still', 2, 0, 0)]],
    [
      'several behaviors',
      CommandProto.STEP,
      new Uint8Array(0),
      [randomActions(rng, 'A', 3, 1, 0), randomActions(rng, 'B', 2, 0, 2), randomActions(rng, 'Ünïcode', 1, 1, 1)],
    ],
    ['side channel bytes', CommandProto.STEP, Uint8Array.from({ length: 300 }, (_, i) => i % 256), [randomActions(rng, 'Ball', 2, 2, 0)]],
    ['RESET with a side channel', CommandProto.RESET, Uint8Array.of(1, 2, 3, 4), []],
    ['RESET alone', CommandProto.RESET, new Uint8Array(0), []],
    ['a STEP with nothing in it', CommandProto.STEP, new Uint8Array(0), []],
    ['many agents', CommandProto.STEP, new Uint8Array(0), [randomActions(rng, 'Crowd', 1000, 2, 1)]],
  ];

  it.each(cases)('decodes to the protobufjs message: %s', (_label, command, sideChannel, behaviors) => {
    const bytes = encodeStepInputMessage({ command, sideChannel, actions: behaviors });
    expect(asObject(bytes)).toEqual(asObject(referenceEncoding(command, sideChannel, behaviors)));
  });

  it('writes the bytes protobufjs writes for one continuous agent', () => {
    const bytes = encodeStepInputMessage({
      command: CommandProto.STEP,
      actions: [{ name: 'B', count: 1, continuousSize: 1, discreteSize: 0, continuous: Float32Array.of(1), discrete: new Int32Array(0) }],
    });
    const protobufjs = UnityMessage.encode({
      header: { status: 200 },
      unity_input: { rl_input: { agent_actions: { B: { value: [{ vector_actions_deprecated: [1], continuous_actions: [1] }] } } } },
    });
    expect(Buffer.from(bytes).toString('hex')).toBe(Buffer.from(protobufjs).toString('hex'));
    // header 200; unity_input { rl_input { agent_actions { "B": [ {1: [1.0], 6: [1.0]} ] } } }
    expect(Buffer.from(bytes).toString('hex')).toBe('0a0308c8011a170a150a130a0142120e0a0c0a040000803f32040000803f');
  });

  it('is read back by the engine-side decoder', () => {
    const behaviors = [randomActions(rng, 'A', 7, 2, 1), randomActions(rng, 'B', 0, 1, 0), randomActions(rng, 'C', 3, 0, 2)];
    const bytes = encodeStepInputMessage({ command: CommandProto.STEP, sideChannel: Uint8Array.of(9), actions: behaviors });
    const sizes = new Map(behaviors.map((b) => [b.name, { continuous: b.continuousSize, discrete: b.discreteSize }]));
    const decoded = decodeStepInputMessage(bytes, sizes)!;
    expect(decoded.headerStatus).toBe(200);
    expect(decoded.command).toBe(CommandProto.STEP);
    expect(Array.from(decoded.sideChannel)).toEqual([9]);
    for (const b of behaviors) {
      expect(decoded.actions.get(b.name)).toEqual({ count: b.count, continuous: b.continuous, discrete: b.discrete });
    }
  });
});

describe('decodeStepInputMessage reads actions as protobufjs does', () => {
  function randomInputMessage(rng: Rng, sizes: Map<string, ActionSizes>): UnityMessageProto {
    const agentActions: { [name: string]: { value: AgentActionProto[] } } = {};
    for (const [name, size] of sizes) {
      if (rng.chance(0.2)) continue;
      agentActions[name] = {
        value: Array.from({ length: rng.int(0, 20) }, () => {
          const continuous = Array.from({ length: size.continuous }, () => rng.float());
          const discrete = Array.from({ length: size.discrete }, () => rng.int32());
          return {
            vector_actions_deprecated: [...continuous, ...discrete],
            value: rng.chance(0.2) ? rng.float() : 0,
            continuous_actions: continuous,
            discrete_actions: discrete,
          };
        }),
      };
    }
    // A behavior the engine does not know: its actions are left out on both paths.
    if (rng.chance(0.3)) agentActions.Unknown = { value: [{ continuous_actions: [1, 2, 3] }] };
    return {
      header: { status: rng.chance(0.9) ? 200 : 400 },
      unity_input: {
        rl_input: {
          agent_actions: agentActions,
          command: rng.pick([CommandProto.STEP, CommandProto.RESET, CommandProto.QUIT]),
          side_channel: rng.chance(0.3) ? Uint8Array.from({ length: rng.int(1, 30) }, () => rng.int(0, 255)) : undefined,
        },
      },
    };
  }

  it.each([1, 2, 3, 4, 5, 6, 7, 8])('on random messages, canonical and unusual encodings (seed %i)', (seed) => {
    const rng = new Rng(seed);
    for (let i = 0; i < 40; i++) {
      const sizes = new Map<string, ActionSizes>(
        Array.from({ length: rng.int(1, 3) }, (_, k) => [`B${k}`, { continuous: rng.int(0, 3), discrete: rng.int(0, 3) }]),
      );
      const message = randomInputMessage(rng, sizes);
      const bytes =
        i % 2 === 0
          ? UnityMessage.encode(message)
          : messyEncode(messageType('UnityMessageProto'), message as Record<string, unknown>, rng, { messiness: rng.pick([0.3, 1]) });
      const decoding = tryDecodeStepInputMessage(bytes, sizes);
      if (!('message' in decoding)) throw new Error(`slow path: ${decoding.slowPathReason}`);
      const reference = stepInputFromProto(UnityMessage.decode(bytes), sizes);
      expect(decoding.message.headerStatus).toBe(reference.headerStatus);
      expect(decoding.message.command).toBe(reference.command);
      expect(Buffer.from(decoding.message.sideChannel)).toEqual(Buffer.from(reference.sideChannel));
      expect(new Map(decoding.message.actions)).toStrictEqual(new Map(reference.actions));
    }
  });

  it('leaves wrong action counts and handshake messages to protobufjs', () => {
    const sizes = new Map([['B', { continuous: 2, discrete: 1 }]]);
    const reason = (message: UnityMessageProto) => {
      const decoding = tryDecodeStepInputMessage(UnityMessage.encode(message), sizes);
      return 'slowPathReason' in decoding ? decoding.slowPathReason : 'fast path';
    };
    const withActions = (value: AgentActionProto[]): UnityMessageProto => ({
      header: { status: 200 },
      unity_input: { rl_input: { agent_actions: { B: { value } } } },
    });
    expect(reason(withActions([{ continuous_actions: [1, 2], discrete_actions: [1] }]))).toBe('fast path');
    expect(reason(withActions([{ continuous_actions: [1], discrete_actions: [1] }]))).toMatch(/number of actions/);
    expect(reason(withActions([{ continuous_actions: [1, 2, 3], discrete_actions: [1] }]))).toMatch(/more actions/);
    expect(reason(withActions([{ continuous_actions: [1, 2], discrete_actions: [1, 2] }]))).toMatch(/more actions/);
    expect(reason({ header: { status: 200 }, unity_input: { rl_initialization_input: { seed: 1 } } })).toMatch(/rl_initialization_input/);
    // A known field with another wire type than declared (command as a length-delimited field).
    const oddCommand = Uint8Array.of(0x1a, 0x05, 0x0a, 0x03, 0x22, 0x01, 0x01);
    const odd = tryDecodeStepInputMessage(oddCommand, sizes);
    expect('slowPathReason' in odd && odd.slowPathReason).toMatch(/field 4 came with wire type 2/);
    // The slow path pads and cuts each agent's actions to the behavior's sizes.
    const padded = stepInputFromProto(UnityMessage.decode(UnityMessage.encode(withActions([{ continuous_actions: [5] }]))), sizes);
    expect(padded.actions.get('B')).toEqual({ count: 1, continuous: Float32Array.of(5, 0), discrete: Int32Array.of(0) });
  });
});
