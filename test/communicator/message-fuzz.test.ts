/**
 * Fuzzing the trainer's decoding of the environment's messages: valid step and handshake messages
 * as the engine side writes them, random bytes, and valid messages mutated (bytes flipped, cut,
 * inserted, repeated, varints blown up), run through what the trainer does with a message
 * (decodeIncomingMessage, then the spec and the steps of each behavior, as UnityEnvironment does).
 * Each must be read or refused with an error of the decoders; none may fail another way, hang or
 * take unbounded memory. Seeded: a failure repeats.
 */
import { SeededRandom } from '../../src/common/random';
import { UnityMessage, UnityRLInitializationOutput } from '../../src/communicator/messages';
import { decodeIncomingMessage } from '../../src/communicator/rpc-communicator';
import { AgentInfoLayout, encodeStepOutputMessage } from '../../src/communicator/wire/step-output';
import { BehaviorSpec } from '../../src/env/behavior-spec';
import { agentInfoLayout, behaviorSpecFromProto, stepsFromColumns, stepsFromProto } from '../../src/env/steps';
import { encodeObservationPng } from '../../src/sims/sdk/png';

const SEED = 11;
const MUTATIONS = 3000;
const BUDGET_BYTES = 64 * 1024 * 1024;
const MIB = 1024 * 1024;

const BRAINS = [
  { brain_name: 'Ball', is_training: true, action_spec: { num_continuous_actions: 2 } },
  { brain_name: 'Grid', is_training: true, action_spec: { num_discrete_actions: 2, discrete_branch_sizes: [3, 2] } },
];

function ballAgents(random: SeededRandom, count: number) {
  return {
    count,
    id: Int32Array.from({ length: count }, (_, i) => i + 1),
    reward: Float32Array.from({ length: count }, () => random.range(-1, 1)),
    done: Uint8Array.from({ length: count }, () => (random.next() < 0.2 ? 1 : 0)),
    maxStepReached: new Uint8Array(count),
    observations: [{ shape: [8], floats: Float32Array.from({ length: count * 8 }, () => random.range(-5, 5)) }],
  };
}

function gridAgents(random: SeededRandom, count: number) {
  const image = () => encodeObservationPng(Float32Array.from({ length: 3 * 8 * 8 }, () => random.next()), 3, 8, 8);
  return {
    count,
    id: Int32Array.from({ length: count }, (_, i) => i + 10),
    reward: new Float32Array(count),
    done: new Uint8Array(count),
    maxStepReached: new Uint8Array(count),
    actionMaskSize: 5,
    actionMask: Uint8Array.from({ length: count * 5 }, () => (random.next() < 0.3 ? 1 : 0)),
    observations: [
      { shape: [3, 8, 8], dimensionProperties: [1, 2, 2], pngImages: Array.from({ length: count }, image) },
      { shape: [4], floats: Float32Array.from({ length: count * 4 }, () => random.next()) },
    ],
  };
}

/** The valid messages mutations start from: a handshake, a goodbye, and steps with and without new behaviors. */
function validMessages(random: SeededRandom): Uint8Array[] {
  const messages: Uint8Array[] = [
    UnityMessage.encode({
      header: { status: 200 },
      unity_output: { rl_initialization_output: { name: 'Fuzz', communication_version: '1.5.0' } },
    }),
    UnityMessage.encode({ header: { status: 400 } }),
  ];
  for (const count of [1, 3, 7]) {
    messages.push(encodeStepOutputMessage({ behaviors: [['Ball', ballAgents(random, count)]] }));
    messages.push(
      encodeStepOutputMessage({
        behaviors: [
          ['Ball', ballAgents(random, count)],
          ['Grid', gridAgents(random, count)],
        ],
        sideChannel: Uint8Array.from({ length: 24 }, () => random.int(256)),
        initializationOutput: UnityRLInitializationOutput.encode({ brain_parameters: BRAINS }),
      }),
    );
  }
  return messages;
}

/** One mutation of `bytes`, picked at random. */
function mutate(random: SeededRandom, bytes: Uint8Array, others: readonly Uint8Array[]): Uint8Array {
  const out = Array.from(bytes);
  const at = () => random.int(out.length + 1);
  switch (random.int(8)) {
    case 0: // flip a few bytes
      for (let i = random.int(8) + 1; i > 0 && out.length > 0; i--) out[random.int(out.length)] = random.int(256);
      break;
    case 1: // cut short
      out.length = at();
      break;
    case 2: // insert random bytes
      out.splice(at(), 0, ...Array.from({ length: random.int(16) + 1 }, () => random.int(256)));
      break;
    case 3: {
      // repeat a slice
      const start = at();
      const slice = out.slice(start, start + random.int(64) + 1);
      for (let i = random.int(20) + 1; i > 0; i--) out.splice(at(), 0, ...slice);
      break;
    }
    case 4: // a huge varint (a length, a count or a shape) where a byte was
      if (out.length > 0) out.splice(random.int(out.length), 1, 0xff, 0xff, 0xff, 0xff, 0x07);
      break;
    case 5: // remove a slice
      out.splice(at(), random.int(32) + 1);
      break;
    case 6: // join two messages
      return Uint8Array.from([...out.slice(0, at()), ...others[random.int(others.length)]]);
    default: // nothing valid: random bytes
      return Uint8Array.from({ length: random.int(256) }, () => random.int(256));
  }
  return Uint8Array.from(out);
}

/** What the trainer does with a message: decode it, learn the specs of new behaviors, build the steps. */
function consume(bytes: Uint8Array, specs: Map<string, BehaviorSpec>, layouts: Map<string, AgentInfoLayout> | null): void {
  const incoming = decodeIncomingMessage(bytes, layouts, BUDGET_BYTES);
  if (incoming.fast !== undefined) {
    for (const [name, columns] of incoming.fast.behaviors) stepsFromColumns(columns, specs.get(name)!);
    return;
  }
  const output = incoming.message!.unity_output ?? {};
  const agentInfos = output.rl_output?.agentInfos ?? {};
  const known = new Map(specs);
  for (const brain of output.rl_initialization_output?.brain_parameters ?? []) {
    const agents = agentInfos[brain.brain_name ?? '']?.value ?? [];
    if (agents.length > 0) known.set(brain.brain_name ?? '', behaviorSpecFromProto(brain, agents[0]));
  }
  for (const [name, spec] of known) {
    const infos = agentInfos[name]?.value ?? [];
    if (infos.length > 0) stepsFromProto(infos, spec, name, '2.0.0', BUDGET_BYTES);
  }
}

/** Errors the decoders raise on purpose; anything else (a TypeError, an allocation failure...) is a bug. */
function isDecodingError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (['WireFormatError', 'DecodeCostError', 'UnityObservationError', 'ActionSpecError'].includes(error.name)) return true;
  // protobufjs: "index out of range" (a RangeError), "invalid wire type", "invalid varint encoding"...
  return /index out of range|invalid wire type|invalid varint|illegal|missing required/i.test(error.message);
}

it(`reads or refuses ${MUTATIONS} random and mutated messages with the decoders' own errors, quickly and in bounded memory`, () => {
  const random = new SeededRandom(SEED);
  const valid = validMessages(random);
  // The behaviors the trainer knows from earlier steps, as UnityEnvironment keeps them.
  const specs = new Map<string, BehaviorSpec>();
  const step = UnityMessage.decode(valid[valid.length - 1]).unity_output!;
  for (const brain of step.rl_initialization_output!.brain_parameters!) {
    specs.set(brain.brain_name!, behaviorSpecFromProto(brain, step.rl_output!.agentInfos![brain.brain_name!].value![0]));
  }
  const layouts = new Map([...specs].map(([name, spec]) => [name, agentInfoLayout(spec)]));

  // Every valid message is read.
  for (const bytes of valid) consume(bytes, specs, layouts);

  const heapAtStart = process.memoryUsage().heapUsed;
  let peakHeap = heapAtStart;
  let slowest = 0;
  const outcomes = { read: 0, refused: 0 };
  const unexpected: string[] = [];
  for (let i = 0; i < MUTATIONS; i++) {
    const bytes = mutate(random, valid[random.int(valid.length)], valid);
    const started = performance.now();
    try {
      // Before the handshake no behavior is known; after it, the fast decoder reads what it can.
      consume(bytes, specs, random.next() < 0.2 ? null : layouts);
      outcomes.read++;
    } catch (error) {
      outcomes.refused++;
      if (!isDecodingError(error)) unexpected.push(`mutation ${i}: ${(error as Error).stack ?? String(error)}`);
    }
    slowest = Math.max(slowest, performance.now() - started);
    if (i % 100 === 0) peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  }
  expect(unexpected).toEqual([]);
  // Both outcomes happen: the mutations reach past the first checks.
  expect(outcomes.read).toBeGreaterThan(MUTATIONS / 50);
  expect(outcomes.refused).toBeGreaterThan(MUTATIONS / 2);
  expect(slowest).toBeLessThan(1000);
  expect(peakHeap - heapAtStart).toBeLessThan(200 * MIB);
});
