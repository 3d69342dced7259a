/**
 * The engine side's step message written by hand from columns (encodeStepOutputMessage) must
 * decode, with protobufjs, to the message of one AgentInfoProto per agent that the scripted
 * environment used to build for protobufjs.
 */
import {
  AgentInfoProto,
  UnityMessage,
  UnityMessageProto,
  UnityRLInitializationOutput,
  messageType,
} from '../../../src/communicator/messages';
import { AgentInfosToSend, StepOutputToSend, encodeStepOutputMessage } from '../../../src/communicator/wire/step-output';
import { Rng } from './messy-encoder';

/** The same step, built object by object for protobufjs. */
function referenceMessage(output: StepOutputToSend): UnityMessageProto {
  const agentInfos: { [name: string]: { value: AgentInfoProto[] } } = {};
  for (const [name, a] of output.behaviors) {
    const maskSize = a.actionMaskSize ?? 0;
    agentInfos[name] = {
      value: Array.from({ length: a.count }, (_, row) => ({
        id: a.id[row],
        reward: a.reward[row],
        done: a.done[row] === 1,
        max_step_reached: a.maxStepReached[row] === 1,
        group_id: a.groupId?.[row] ?? 0,
        group_reward: a.groupReward?.[row] ?? 0,
        action_mask: Array.from(a.actionMask?.subarray(row * maskSize, (row + 1) * maskSize) ?? [], (m) => m === 1),
        observations: a.observations.map((o) => {
          const size = o.shape.reduce((x, y) => x * y, 1);
          return {
            shape: [...o.shape],
            name: o.name ?? '',
            dimension_properties: [...(o.dimensionProperties ?? [])],
            observation_type: o.observationType ?? 0,
            ...(o.pngImages
              ? { compression_type: 1, compressed_data: o.pngImages[row] }
              : { compression_type: 0, float_data: { data: Array.from(o.floats!.subarray(row * size, (row + 1) * size)) } }),
          };
        }),
      })),
    };
  }
  return {
    header: { status: 200 },
    unity_output: {
      rl_output: { agentInfos, side_channel: output.sideChannel ?? new Uint8Array(0) },
      rl_initialization_output:
        output.initializationOutput !== undefined ? UnityRLInitializationOutput.decode(output.initializationOutput) : undefined,
    },
  };
}

const asObject = (bytes: Uint8Array) =>
  messageType('UnityMessageProto').toObject(UnityMessage.decode(Buffer.from(bytes)) as never, {
    defaults: true,
    arrays: true,
    objects: true,
    bytes: Array,
  });

function randomAgents(rng: Rng, count: number, options: { png?: boolean; masks?: number } = {}): AgentInfosToSend {
  const maskSize = options.masks ?? 0;
  return {
    count,
    id: Int32Array.from({ length: count }, () => rng.int32()),
    reward: Float32Array.from({ length: count }, () => rng.float()),
    done: Uint8Array.from({ length: count }, () => (rng.chance(0.3) ? 1 : 0)),
    maxStepReached: Uint8Array.from({ length: count }, () => (rng.chance(0.3) ? 1 : 0)),
    groupId: Int32Array.from({ length: count }, () => (rng.chance(0.5) ? rng.int32() : 0)),
    groupReward: Float32Array.from({ length: count }, () => (rng.chance(0.5) ? rng.float() : 0)),
    actionMaskSize: maskSize,
    actionMask: Uint8Array.from({ length: count * maskSize }, () => (rng.chance(0.4) ? 1 : 0)),
    observations: [
      { shape: [5], name: 'VectorSensor', floats: Float32Array.from({ length: count * 5 }, () => rng.float()) },
      { shape: [2, 3], floats: Float32Array.from({ length: count * 6 }, () => rng.float()), observationType: 1, dimensionProperties: [1, 2] },
      { shape: [0], name: 'Empty', floats: new Float32Array(0) },
      ...(options.png
        ? [
            {
              shape: [3, 4, 4],
              name: 'Camera',
              dimensionProperties: [1, 2, 2],
              pngImages: Array.from({ length: count }, () => Uint8Array.from({ length: rng.int(0, 300) }, () => rng.int(0, 255))),
            },
          ]
        : []),
    ],
  };
}

describe('encodeStepOutputMessage', () => {
  const rng = new Rng(21);
  const cases: Array<[string, StepOutputToSend]> = [
    ['one behavior', { behaviors: [['Ball', randomAgents(rng, 6)]] }],
    ['action masks', { behaviors: [['Grid', randomAgents(rng, 5, { masks: 7 })]] }],
    ['PNG observations', { behaviors: [['Camera', randomAgents(rng, 3, { png: true })]] }],
    ['zero agents', { behaviors: [['Nobody', randomAgents(rng, 0)]] }],
    ['several behaviors and a side channel', {
      behaviors: [['A', randomAgents(rng, 4)], ['B', randomAgents(rng, 2, { masks: 3 })], ['', randomAgents(rng, 1)]],
      sideChannel: Uint8Array.from({ length: 500 }, (_, i) => i % 251),
    }],
    ['brain parameters of a new behavior', {
      behaviors: [['New', randomAgents(rng, 2)]],
      initializationOutput: UnityRLInitializationOutput.encode({
        brain_parameters: [{ brain_name: 'New', is_training: true, action_spec: { num_continuous_actions: 2 } }],
      }),
    }],
    ['many agents', { behaviors: [['Crowd', randomAgents(rng, 1000, { masks: 2 })]] }],
  ];

  it.each(cases)('decodes to the protobufjs message: %s', (_label, output) => {
    const bytes = encodeStepOutputMessage(output);
    expect(asObject(bytes)).toEqual(asObject(UnityMessage.encode(referenceMessage(output))));
  });
});
