/**
 * The fast step decoder (communicator/wire/step-output.ts + stepsFromColumns) must give exactly
 * the DecisionSteps and TerminalSteps that protobufjs + stepsFromProto give for the same bytes,
 * and must leave to that slow path every message it does not handle.
 *
 * Property-style: random messages from a seeded generator (random agent counts, done flags,
 * max_step, group ids and rewards, action masks, several observations and behaviors), encoded
 * canonically by protobufjs and in unusual but valid ways by test/communicator/wire/messy-encoder.ts.
 */
import * as protobuf from 'protobufjs';
import {
  AgentInfoProto,
  BrainParametersProto,
  ObservationProto,
  UnityMessage,
  UnityMessageProto,
  messageType,
} from '../../src/communicator/messages';
import {
  AgentInfoLayout,
  StepOutputMessage,
  decodeStepOutputMessage,
  encodeStepOutputMessage,
  tryDecodeStepOutputMessage,
} from '../../src/communicator/wire/step-output';
import { BehaviorSpec } from '../../src/env/behavior-spec';
import {
  DecisionSteps,
  TerminalSteps,
  agentInfoLayout,
  behaviorSpecFromProto,
  stepsFromColumns,
  stepsFromProto,
} from '../../src/env/steps';
import { Rng, messyEncode } from '../communicator/wire/messy-encoder';

interface BehaviorCase {
  name: string;
  brain: BrainParametersProto;
  shapes: number[][];
  branches: number[];
  spec: BehaviorSpec;
}

const unityMessageType = (): protobuf.Type => messageType('UnityMessageProto');

function randomShape(rng: Rng): number[] {
  switch (rng.int(0, 4)) {
    case 0:
      return [rng.int(0, 3)];
    case 1:
      return [rng.int(1, 12)];
    case 2:
      return [rng.int(1, 3), rng.int(1, 4)];
    default:
      return [rng.int(1, 2), rng.int(1, 3), rng.int(1, 3)];
  }
}

function randomObservation(rng: Rng, shape: number[], index: number): ObservationProto {
  const size = shape.reduce((a, b) => a * b, 1);
  const observation: ObservationProto = {
    shape,
    float_data: { data: Array.from({ length: size }, () => rng.float()) },
  };
  if (rng.chance(0.5)) observation.name = `Sensor${index}`;
  if (rng.chance(0.3)) observation.compression_type = 0;
  if (rng.chance(0.3)) observation.dimension_properties = shape.map(() => rng.int(0, 2));
  if (rng.chance(0.2)) observation.observation_type = 1;
  if (rng.chance(0.1)) observation.compressed_channel_mapping = [0, 0, 0];
  return observation;
}

function randomAgent(rng: Rng, behavior: BehaviorCase): AgentInfoProto {
  const done = rng.chance(0.25);
  const maskSize = behavior.branches.reduce((a, b) => a + b, 0);
  let mask: boolean[] = [];
  if (behavior.branches.length > 0 && rng.chance(0.7)) {
    mask = Array.from({ length: maskSize }, () => rng.chance(0.3));
  } else if (behavior.branches.length === 0 && rng.chance(0.2)) {
    // Masks of behaviors without discrete actions are not read, whatever their size.
    mask = Array.from({ length: rng.int(1, 5) }, () => rng.chance(0.5));
  }
  return {
    reward: rng.float(),
    done,
    max_step_reached: rng.chance(0.4),
    id: rng.int32(),
    action_mask: mask,
    observations: behavior.shapes.map((shape, i) => randomObservation(rng, shape, i)),
    group_id: rng.chance(0.3) ? rng.int32() : 0,
    group_reward: rng.chance(0.3) ? rng.float() : 0,
  };
}

function randomBehavior(rng: Rng, name: string): BehaviorCase {
  const shapes = Array.from({ length: rng.int(0, 3) }, () => randomShape(rng));
  const branches = rng.chance(0.5) ? Array.from({ length: rng.int(1, 3) }, () => rng.int(1, 4)) : [];
  const brain: BrainParametersProto = {
    brain_name: name,
    action_spec: { num_continuous_actions: rng.int(0, 3), num_discrete_actions: branches.length, discrete_branch_sizes: branches },
  };
  const behavior: BehaviorCase = { name, brain, shapes, branches, spec: undefined as unknown as BehaviorSpec };
  // The spec comes from the brain parameters and a first agent, as when the behavior appears.
  behavior.spec = behaviorSpecFromProto(brain, randomAgent(rng, behavior));
  return behavior;
}

function randomStepMessage(rng: Rng, behaviors: readonly BehaviorCase[]): UnityMessageProto {
  const agentInfos: { [name: string]: { value: AgentInfoProto[] } } = {};
  for (const behavior of behaviors) {
    if (rng.chance(0.15)) continue; // a behavior with no agent at this step is left out
    const count = rng.chance(0.1) ? 0 : rng.int(1, 30);
    agentInfos[behavior.name] = { value: Array.from({ length: count }, () => randomAgent(rng, behavior)) };
  }
  return {
    header: { status: rng.chance(0.9) ? 200 : 400 },
    unity_output: {
      rl_output: {
        agentInfos,
        side_channel: rng.chance(0.3) ? Uint8Array.from({ length: rng.int(1, 40) }, () => rng.int(0, 255)) : undefined,
      },
    },
  };
}

function layoutsOf(behaviors: readonly BehaviorCase[]): Map<string, AgentInfoLayout> {
  return new Map(behaviors.map((b) => [b.name, agentInfoLayout(b.spec)]));
}

type Steps = [DecisionSteps, TerminalSteps];

/** As UnityEnvironment reads a message on the slow path. */
function referenceSteps(bytes: Uint8Array, behaviors: readonly BehaviorCase[]): Map<string, Steps> {
  const message = UnityMessage.decode(bytes);
  const result = new Map<string, Steps>();
  for (const { name, spec } of behaviors) {
    const infos = message.unity_output?.rl_output?.agentInfos?.[name]?.value;
    result.set(
      name,
      infos !== undefined && infos.length > 0
        ? stepsFromProto(infos, spec, name, '3.0.0')
        : [DecisionSteps.empty(spec), TerminalSteps.empty(spec)],
    );
  }
  return result;
}

/** As UnityEnvironment reads a message on the fast path. */
function fastSteps(decoded: StepOutputMessage, behaviors: readonly BehaviorCase[]): Map<string, Steps> {
  const result = new Map<string, Steps>();
  for (const { name, spec } of behaviors) {
    const columns = decoded.behaviors.get(name);
    result.set(
      name,
      columns !== undefined && columns.count > 0
        ? stepsFromColumns(columns, spec)
        : [DecisionSteps.empty(spec), TerminalSteps.empty(spec)],
    );
  }
  return result;
}

/** The bytes of every typed array of the steps, so that -0 and +0 count as different. */
function bitsOf(steps: Steps): string[] {
  const [d, t] = steps;
  const arrays = [...d.obs, d.reward, d.agentId, d.groupId, d.groupReward, ...(d.actionMask ?? []), ...t.obs, t.reward, t.interrupted, t.agentId, t.groupId, t.groupReward];
  return arrays.map((a) => `${a.constructor.name}:${Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('hex')}`);
}

function expectSameAsReference(bytes: Uint8Array, behaviors: readonly BehaviorCase[]): StepOutputMessage {
  const decoding = tryDecodeStepOutputMessage(bytes, layoutsOf(behaviors));
  if (!('message' in decoding)) {
    throw new Error(`expected the fast path, got the slow path: ${decoding.slowPathReason}`);
  }
  const reference = UnityMessage.decode(bytes);
  expect(decoding.message.headerStatus).toBe(reference.header ? reference.header.status : null);
  expect(Buffer.from(decoding.message.sideChannel)).toEqual(Buffer.from(reference.unity_output?.rl_output?.side_channel ?? []));
  const fast = fastSteps(decoding.message, behaviors);
  const slow = referenceSteps(bytes, behaviors);
  for (const { name } of behaviors) {
    expect(fast.get(name)).toStrictEqual(slow.get(name));
    expect(bitsOf(fast.get(name)!)).toEqual(bitsOf(slow.get(name)!));
  }
  return decoding.message;
}

describe('the fast step decoder gives the same steps as protobufjs + stepsFromProto', () => {
  const seen = { agents: 0, terminal: 0, masks: 0, groups: 0, behaviors: 0 };

  it.each([1, 2, 3, 4, 5, 6])('on random messages encoded by protobufjs (seed %i)', (seed) => {
    const rng = new Rng(seed);
    for (let world = 0; world < 10; world++) {
      const behaviors = Array.from({ length: rng.int(1, 3) }, (_, i) => randomBehavior(rng, `Behavior${i}?team=${i}`));
      for (let step = 0; step < 8; step++) {
        const message = randomStepMessage(rng, behaviors);
        const decoded = expectSameAsReference(UnityMessage.encode(message), behaviors);
        for (const columns of decoded.behaviors.values()) {
          seen.behaviors++;
          seen.agents += columns.count;
          columns.done.forEach((d) => (seen.terminal += d));
          columns.actionMaskSent?.forEach((m) => (seen.masks += m));
          columns.groupId.forEach((g) => (seen.groups += g !== 0 ? 1 : 0));
        }
      }
    }
  });

  it.each([11, 12, 13, 14, 15, 16, 17, 18])('on random messages in unusual valid encodings (seed %i)', (seed) => {
    const rng = new Rng(seed);
    for (let world = 0; world < 10; world++) {
      const behaviors = Array.from({ length: rng.int(1, 3) }, (_, i) => randomBehavior(rng, `B${i}`));
      for (let step = 0; step < 8; step++) {
        const message = randomStepMessage(rng, behaviors);
        const bytes = messyEncode(unityMessageType(), message as Record<string, unknown>, rng, { messiness: rng.pick([0.2, 0.5, 1]) });
        expectSameAsReference(bytes, behaviors);
      }
    }
  });

  it('covered agents, terminal steps, masks, group ids and several behaviors', () => {
    // Runs after the cases above: they must have exercised what they claim to.
    expect(seen.agents).toBeGreaterThan(3000);
    expect(seen.terminal).toBeGreaterThan(500);
    expect(seen.masks).toBeGreaterThan(500);
    expect(seen.groups).toBeGreaterThan(500);
    expect(seen.behaviors).toBeGreaterThan(500);
  });

  it('reads the steps of a message the engine-side encoder wrote', () => {
    const rng = new Rng(99);
    const behavior = randomBehavior(rng, 'Walker');
    const message = randomStepMessage(rng, [behavior]);
    const agents = message.unity_output!.rl_output!.agentInfos!.Walker?.value ?? [];
    const count = agents.length;
    const maskSize = behavior.branches.reduce((a, b) => a + b, 0);
    const bytes = encodeStepOutputMessage({
      behaviors: [
        [
          'Walker',
          {
            count,
            id: Int32Array.from(agents, (a) => a.id ?? 0),
            reward: Float32Array.from(agents, (a) => a.reward ?? 0),
            done: Uint8Array.from(agents, (a) => (a.done ? 1 : 0)),
            maxStepReached: Uint8Array.from(agents, (a) => (a.max_step_reached ? 1 : 0)),
            groupId: Int32Array.from(agents, (a) => a.group_id ?? 0),
            groupReward: Float32Array.from(agents, (a) => a.group_reward ?? 0),
            actionMaskSize: behavior.branches.length > 0 ? maskSize : 0,
            actionMask: Uint8Array.from(agents.flatMap((a) => (a.action_mask!.length === maskSize ? a.action_mask!.map(Number) : new Array(maskSize).fill(0)))),
            observations: behavior.shapes.map((shape, i) => ({
              shape,
              name: `Sensor${i}`,
              floats: Float32Array.from(agents.flatMap((a) => a.observations![i].float_data!.data)),
            })),
          },
        ],
      ],
    });
    expectSameAsReference(bytes, [behavior]);
  });

  it('keeps a behavior the message leaves out, or sends with no agent, empty', () => {
    const rng = new Rng(5);
    const a = randomBehavior(rng, 'A');
    const b = randomBehavior(rng, 'B');
    const bytes = UnityMessage.encode({ header: { status: 200 }, unity_output: { rl_output: { agentInfos: { A: { value: [] } } } } });
    expectSameAsReference(bytes, [a, b]);
    // A map entry without its value (ListAgentInfoProto): protobufjs reads null, the env no agents.
    const noValue = Uint8Array.from([0x12, 0x07, 0x0a, 0x05, 0x12, 0x03, 0x0a, 0x01, 0x41]);
    expect(UnityMessage.decode(noValue).unity_output?.rl_output?.agentInfos?.A).toBeNull();
    const decoded = expectSameAsReference(noValue, [a, b]);
    expect(decoded.behaviors.get('A')?.count).toBe(0);
  });

  it('splits agents whose episode ended from those asking for a decision, in order', () => {
    const rng = new Rng(8);
    const behavior = randomBehavior(rng, 'Split');
    const agents = [false, true, false, true, true].map((done, i) => ({ ...randomAgent(rng, behavior), done, id: i + 1 }));
    const bytes = UnityMessage.encode({ header: { status: 200 }, unity_output: { rl_output: { agentInfos: { Split: { value: agents } } } } });
    expectSameAsReference(bytes, [behavior]);
    const [decision, terminal] = fastSteps(decodeStepOutputMessage(bytes, layoutsOf([behavior]))!, [behavior]).get('Split')!;
    expect(Array.from(decision.agentId)).toEqual([1, 3]);
    expect(Array.from(terminal.agentId)).toEqual([2, 4, 5]);
  });
});

describe('what the fast step decoder leaves to protobufjs', () => {
  const name = 'Ball';
  const brain: BrainParametersProto = { brain_name: name, action_spec: { num_continuous_actions: 0, num_discrete_actions: 1, discrete_branch_sizes: [3] } };
  const agent = (overrides: Partial<AgentInfoProto> = {}): AgentInfoProto => ({
    id: 1,
    reward: 0.5,
    action_mask: [false, true, false],
    observations: [{ shape: [2, 2], float_data: { data: [1, 2, 3, 4] }, name: 'Grid' }],
    ...overrides,
  });
  const spec = behaviorSpecFromProto(brain, agent());
  const layouts = new Map([[name, agentInfoLayout(spec)]]);
  const stepMessage = (agents: AgentInfoProto[], extra: Partial<UnityMessageProto['unity_output']> = {}): UnityMessageProto => ({
    header: { status: 200 },
    unity_output: { rl_output: { agentInfos: { [name]: { value: agents } } }, ...extra },
  });
  const slowPathReason = (bytes: Uint8Array): string => {
    const decoding = tryDecodeStepOutputMessage(bytes, layouts);
    return 'slowPathReason' in decoding ? decoding.slowPathReason : 'fast path';
  };
  const referenceError = (message: UnityMessageProto): string => {
    try {
      stepsFromProto(UnityMessage.decode(UnityMessage.encode(message)).unity_output!.rl_output!.agentInfos![name].value!, spec, name);
      return 'no error';
    } catch (error) {
      return (error as Error).message;
    }
  };
  /** A length-delimited field, by hand. */
  const field = (fieldNumber: number, payload: Uint8Array): Uint8Array =>
    protobuf.Writer.create().uint32((fieldNumber << 3) | 2).bytes(payload).finish();
  const concat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(Buffer.concat(parts));

  it('takes the ordinary message', () => {
    expect(slowPathReason(UnityMessage.encode(stepMessage([agent(), agent({ id: 2 })])))).toBe('fast path');
  });

  it('brain parameters of behaviors that appear', () => {
    const message = stepMessage([agent()], { rl_initialization_output: { brain_parameters: [brain] } });
    expect(slowPathReason(UnityMessage.encode(message))).toMatch(/rl_initialization_output/);
  });

  it('compressed (PNG) observations', () => {
    const png = agent({ observations: [{ shape: [2, 2], compression_type: 1, compressed_data: Uint8Array.of(1, 2) }] });
    expect(slowPathReason(UnityMessage.encode(stepMessage([png])))).toMatch(/compressed observation/);
    const dataOnly = agent({ observations: [{ shape: [2, 2], compressed_data: Uint8Array.of(1, 2) }] });
    expect(slowPathReason(UnityMessage.encode(stepMessage([dataOnly])))).toMatch(/compressed observation/);
  });

  it('agents of a behavior without a known spec', () => {
    const message: UnityMessageProto = { header: { status: 200 }, unity_output: { rl_output: { agentInfos: { Other: { value: [] } } } } };
    expect(slowPathReason(UnityMessage.encode(message))).toMatch(/behavior Other has no known spec/);
  });

  it('sizes, shapes and observation counts that do not match the spec, with the errors of the slow path', () => {
    const cases: Array<[AgentInfoProto, RegExp, RegExp]> = [
      [agent({ observations: [{ shape: [2, 2], float_data: { data: [1, 2, 3] } }] }), /floats its shape needs/, /holds 3 floats; its shape \[2, 2\] needs 4/],
      [agent({ observations: [{ shape: [2, 2], float_data: { data: [1, 2, 3, 4, 5] } }] }), /too many floats/, /holds 5 floats/],
      [agent({ observations: [{ shape: [4], float_data: { data: [1, 2, 3, 4] } }] }), /shape differs/, /has shape \[4\], but the behavior's spec says \[2, 2\]/],
      [agent({ observations: [{ shape: [2, 2, 1], float_data: { data: [1, 2, 3, 4] } }] }), /shape differs/, /has shape \[2, 2, 1\]/],
      [agent({ observations: [{ shape: [2], float_data: { data: [1, 2] } }] }), /shape differs/, /has shape \[2\]/],
      [agent({ observations: [{ shape: [2, 2] }] }), /floats its shape needs/, /holds 0 floats/],
      [agent({ observations: [] }), /fewer observations/, /sent 0 observations, but the behavior has 1 or more/],
      [agent({ action_mask: [true] }), /action mask/, /action mask of 1 entries; its discrete branches \[3\] need 3/],
      [agent({ action_mask: [true, true, true, true] }), /action mask is too long/, /action mask of 4 entries/],
      [agent({ observations: [{ shape: [2, 2], float_data: { data: [1, NaN, 3, 4] } }] }), /NaN or infinite/, /observations provided had NaN values: observation 0 \(Grid\) of agent 1/],
      [agent({ observations: [{ shape: [2, 2], float_data: { data: [1, 2, Infinity, 4] } }] }), /NaN or infinite/, /had Infinite values/],
      [agent({ reward: NaN }), /reward is NaN/, /rewards provided had NaN values/],
      [agent({ reward: -Infinity }), /reward is NaN/, /rewards provided had Infinite values/],
    ];
    for (const [bad, reason, error] of cases) {
      const message = stepMessage([agent(), bad]);
      expect(slowPathReason(UnityMessage.encode(message))).toMatch(reason);
      expect(referenceError(message)).toMatch(error);
    }
  });

  it('an extra observation, which the slow path ignores', () => {
    const extra = agent({ observations: [...agent().observations!, { shape: [1], float_data: { data: [9] } }] });
    const message = stepMessage([extra]);
    expect(slowPathReason(UnityMessage.encode(message))).toMatch(/more observations/);
    expect(referenceError(message)).toBe('no error');
  });

  it('a mask of the wrong size on an agent whose episode ended, which the slow path does not check', () => {
    const message = stepMessage([agent(), agent({ done: true, action_mask: [true] })]);
    expect(slowPathReason(UnityMessage.encode(message))).toMatch(/action mask/);
    expect(referenceError(message)).toBe('no error');
  });

  it('a singular message or a behavior sent twice (protobufjs decides how they combine)', () => {
    const one = UnityMessage.encode(stepMessage([agent()]));
    expect(slowPathReason(concat(one, one))).toMatch(/header came twice/);
    const header = UnityMessage.encode({ header: { status: 200 } });
    const output = messageType('UnityOutputProto').encode(stepMessage([agent()]).unity_output!).finish();
    expect(slowPathReason(concat(header, field(2, output), field(2, output)))).toMatch(/unity_output came twice/);
    const rlOutput = messageType('UnityRLOutputProto').encode(stepMessage([agent()]).unity_output!.rl_output!).finish();
    expect(slowPathReason(concat(header, field(2, concat(field(1, rlOutput), field(1, rlOutput)))))).toMatch(/rl_output came twice/);
    expect(slowPathReason(concat(header, field(2, field(1, concat(rlOutput, rlOutput)))))).toMatch(/behavior Ball came twice/);
    const list = messageType('UnityRLOutputProto.ListAgentInfoProto').encode({ value: [agent()] }).finish();
    const entry = concat(field(1, Buffer.from(name)), field(2, list), field(2, list));
    expect(slowPathReason(concat(header, field(2, field(1, field(2, entry)))))).toMatch(/value twice/);
    const observation = messageType('ObservationProto').encode(agent().observations![0]).finish();
    const floatData = messageType('ObservationProto.FloatData').encode({ data: [1, 2, 3, 4] }).finish();
    const doubled = concat(observation, field(4, floatData));
    const agentBytes = concat(messageType('AgentInfoProto').encode({ id: 1 }).finish(), field(13, doubled));
    const list2 = field(1, agentBytes);
    expect(slowPathReason(concat(header, field(2, field(1, field(2, concat(field(1, Buffer.from(name)), field(2, list2)))))))).toMatch(
      /float_data came twice/,
    );
  });

  it('known fields with an unexpected wire type, groups, bad UTF-8 and malformed bytes', () => {
    const header = UnityMessage.encode({ header: { status: 200 } });
    // header as a varint
    expect(slowPathReason(Uint8Array.of(0x08, 0x01))).toMatch(/field 1 came with wire type 0, not the one it is declared with/);
    // a reward written as a varint inside an agent
    const agentBytes = Uint8Array.of(0x38, 0x01);
    const list = field(1, agentBytes);
    const entry = concat(field(1, Buffer.from(name)), field(2, list));
    expect(slowPathReason(concat(header, field(2, field(1, field(2, entry)))))).toMatch(/field 7 came with wire type 0/);
    // an unknown field as a group (wire type 3 ... 4)
    expect(slowPathReason(concat(header, Uint8Array.of(0xfb, 0x07, 0xfc, 0x07)))).toMatch(/wire type 3/);
    // a behavior name that is not UTF-8
    const badName = concat(field(1, Uint8Array.of(0xc3, 0x28)), field(2, list));
    expect(slowPathReason(concat(header, field(2, field(1, field(2, badName)))))).toMatch(/not valid UTF-8/);
    // truncated: protobufjs throws on these bytes too
    const whole = UnityMessage.encode(stepMessage([agent()]));
    for (const cut of [1, 4, 8, whole.length - 1]) {
      expect(slowPathReason(whole.subarray(0, cut))).not.toBe('fast path');
      expect(() => UnityMessage.decode(whole.subarray(0, cut))).toThrow();
    }
    // a varint longer than 10 bytes
    expect(slowPathReason(Uint8Array.of(0x0a, 0x0b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))).toMatch(/longer than 10 bytes/);
  });
});
