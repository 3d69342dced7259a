/**
 * The protos must put the same bytes on the wire as Unity ML-Agents' own: field numbers, wire
 * types and enum values. Expected bytes are written out by hand from the protobuf encoding rules.
 */
import * as protobuf from 'protobufjs';
import {
  AgentAction,
  AgentInfo,
  AgentInfoActionPair,
  BrainParameters,
  DemonstrationMeta,
  EXCHANGE_METHOD_PATH,
  UnityMessage,
  messageType,
  protoRoot,
} from '../../src/communicator/messages';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex').match(/../g)?.join(' ') ?? '';
const bytesOf = (spaced: string) => Uint8Array.from(Buffer.from(spaced.replace(/ /g, ''), 'hex'));

describe('field numbers of every message match upstream', () => {
  const expected: Record<string, Record<string, number>> = {
    AgentActionProto: { vector_actions_deprecated: 1, value: 4, continuous_actions: 6, discrete_actions: 7 },
    AgentInfoProto: {
      reward: 7, done: 8, max_step_reached: 9, id: 10, action_mask: 11, observations: 13, group_id: 14, group_reward: 15,
    },
    AgentInfoActionPairProto: { agent_info: 1, action_info: 2 },
    ActionSpecProto: { num_continuous_actions: 1, num_discrete_actions: 2, discrete_branch_sizes: 3, action_descriptions: 4 },
    BrainParametersProto: {
      vector_action_size_deprecated: 3, vector_action_descriptions_deprecated: 5, vector_action_space_type_deprecated: 6,
      brain_name: 7, is_training: 8, action_spec: 9,
    },
    UnityRLCapabilitiesProto: {
      baseRLCapabilities: 1, concatenatedPngObservations: 2, compressedChannelMapping: 3, hybridActions: 4,
      trainingAnalytics: 5, variableLengthObservation: 6, multiAgentGroups: 7,
    },
    CustomResetParametersProto: {},
    DemonstrationMetaProto: { api_version: 1, demonstration_name: 2, number_steps: 3, number_episodes: 4, mean_reward: 5 },
    EngineConfigurationProto: { width: 1, height: 2, quality_level: 3, time_scale: 4, target_frame_rate: 5, show_monitor: 6 },
    HeaderProto: { status: 1, message: 2 },
    ObservationProto: {
      shape: 1, compression_type: 2, compressed_data: 3, float_data: 4, compressed_channel_mapping: 5,
      dimension_properties: 6, observation_type: 7, name: 8,
    },
    'ObservationProto.FloatData': { data: 1 },
    TrainingEnvironmentInitialized: {
      mlagents_version: 1, mlagents_envs_version: 2, python_version: 3, torch_version: 4, torch_device_type: 5,
      num_envs: 6, num_environment_parameters: 7, run_options: 8,
    },
    TrainingBehaviorInitialized: {
      behavior_name: 1, trainer_type: 2, extrinsic_reward_enabled: 3, gail_reward_enabled: 4, curiosity_reward_enabled: 5,
      rnd_reward_enabled: 6, behavioral_cloning_enabled: 7, recurrent_enabled: 8, visual_encoder: 9,
      num_network_layers: 10, num_network_hidden_units: 11, trainer_threaded: 12, self_play_enabled: 13,
      curriculum_enabled: 14, config: 15,
    },
    UnityInputProto: { rl_input: 1, rl_initialization_input: 2 },
    UnityOutputProto: { rl_output: 1, rl_initialization_output: 2 },
    UnityMessageProto: { header: 1, unity_output: 2, unity_input: 3 },
    UnityRLInitializationInputProto: { seed: 1, communication_version: 2, package_version: 3, capabilities: 4, num_areas: 5 },
    UnityRLInitializationOutputProto: {
      name: 1, communication_version: 2, log_path: 3, brain_parameters: 5, package_version: 7, capabilities: 8,
    },
    UnityRLInputProto: { agent_actions: 1, command: 4, side_channel: 5 },
    'UnityRLInputProto.ListAgentActionProto': { value: 1 },
    UnityRLOutputProto: { agentInfos: 2, side_channel: 3 },
    'UnityRLOutputProto.ListAgentInfoProto': { value: 1 },
  };

  it.each(Object.keys(expected))('%s', (name) => {
    const type = messageType(name);
    const actual = Object.fromEntries(type.fieldsArray.map((f) => [f.name, f.id]));
    expect(actual).toEqual(expected[name]);
  });
});

describe('enums match upstream', () => {
  const values = (name: string) => (protoRoot().lookup(`communicator_objects.${name}`) as protobuf.Enum).values;
  it('CommandProto', () => expect(values('CommandProto')).toEqual({ STEP: 0, RESET: 1, QUIT: 2 }));
  it('CompressionTypeProto', () => expect(values('CompressionTypeProto')).toEqual({ NONE: 0, PNG: 1 }));
  it('ObservationTypeProto', () => expect(values('ObservationTypeProto')).toEqual({ DEFAULT: 0, GOAL_SIGNAL: 1 }));
  it('SpaceTypeProto', () => expect(values('SpaceTypeProto')).toEqual({ discrete: 0, continuous: 1 }));
});

describe('the service', () => {
  it('is communicator_objects.UnityToExternalProto with Exchange(UnityMessageProto) returns UnityMessageProto', () => {
    const service = protoRoot().lookupService('communicator_objects.UnityToExternalProto');
    const exchange = service.methods.Exchange;
    expect(Object.keys(service.methods)).toEqual(['Exchange']);
    expect(exchange.resolvedRequestType?.fullName).toBe('.communicator_objects.UnityMessageProto');
    expect(exchange.resolvedResponseType?.fullName).toBe('.communicator_objects.UnityMessageProto');
    expect(exchange.requestStream).toBeFalsy();
    expect(exchange.responseStream).toBeFalsy();
    expect(EXCHANGE_METHOD_PATH).toBe('/communicator_objects.UnityToExternalProto/Exchange');
  });
});

describe('bytes of hand-built messages', () => {
  it('AgentActionProto: packed floats in field 6, packed int32 in field 7', () => {
    const bytes = AgentAction.encode({ continuous_actions: [1], discrete_actions: [2] });
    expect(hex(bytes)).toBe('32 04 00 00 80 3f 3a 01 02');
    const decoded = AgentAction.decode(bytes);
    expect(Array.from(decoded.continuous_actions!)).toEqual([1]);
    expect(Array.from(decoded.discrete_actions!)).toEqual([2]);
  });

  it('AgentInfoProto: reward, done, id, group id and group reward', () => {
    const bytes = AgentInfo.encode({ reward: 1, done: true, id: 5, group_id: 3, group_reward: 0.5 });
    expect(hex(bytes)).toBe('3d 00 00 80 3f 40 01 50 05 70 03 7d 00 00 00 3f');
  });

  it('AgentInfoProto with an observation and an action mask', () => {
    const bytes = AgentInfo.encode({
      action_mask: [true, false],
      observations: [{ shape: [1], float_data: { data: [0.5] }, name: 'v' }],
    });
    // 5a = field 11 packed bools; 6a = field 13 message: shape 0a 01 01, float_data 22 06 (0a 04 0.5), name 42 01 'v'
    expect(hex(bytes)).toBe('5a 02 01 00 6a 0e 0a 01 01 22 06 0a 04 00 00 00 3f 42 01 76');
  });

  it('a PNG observation uses compression type 1 and field 3 bytes', () => {
    const bytes = messageType('ObservationProto')
      .encode({ shape: [3, 1, 1], compression_type: 1, compressed_data: Uint8Array.of(0xaa, 0xbb), dimension_properties: [1, 2, 2], observation_type: 1 })
      .finish();
    expect(hex(bytes)).toBe('0a 03 03 01 01 10 01 1a 02 aa bb 32 03 01 02 02 38 01');
  });

  it('UnityMessageProto of the trainer handshake answer', () => {
    const bytes = UnityMessage.encode({
      header: { status: 200 },
      unity_input: {
        rl_initialization_input: {
          seed: 7,
          communication_version: '1.5.0',
          package_version: '1',
          capabilities: { baseRLCapabilities: true, multiAgentGroups: true },
          num_areas: 2,
        },
      },
    });
    expect(hex(bytes)).toBe(
      [
        '0a 03 08 c8 01', // header { status: 200 }
        '1a 16', // unity_input (22 bytes)
        '12 14', // rl_initialization_input (20 bytes)
        '08 07', // seed 7
        '12 05 31 2e 35 2e 30', // "1.5.0"
        '1a 01 31', // "1"
        '22 04 08 01 38 01', // capabilities: baseRL (1), multiAgentGroups (7)
        '28 02', // num_areas 2
      ].join(' '),
    );
  });

  it('UnityMessageProto of the engine first message: capabilities in field 8 of rl_initialization_output', () => {
    const bytes = UnityMessage.encode({
      header: { status: 200 },
      unity_output: {
        rl_initialization_output: { name: 'E', communication_version: '1.5.0', package_version: '3', capabilities: { hybridActions: true } },
      },
    });
    expect(hex(bytes)).toBe(
      ['0a 03 08 c8 01', '12 13', '12 11', '0a 01 45', '12 05 31 2e 35 2e 30', '3a 01 33', '42 02 20 01'].join(' '),
    );
  });

  it('UnityRLInputProto: a map entry of actions per behavior, command and side channel', () => {
    const bytes = UnityMessage.encode({
      unity_input: {
        rl_input: {
          agent_actions: { B: { value: [{ continuous_actions: [1] }] } },
          command: 1,
          side_channel: Uint8Array.of(9),
        },
      },
    });
    expect(hex(bytes)).toBe(
      [
        '1a 16', // unity_input
        '0a 14', // rl_input
        '0a 0d', // agent_actions map entry
        '0a 01 42', // key "B"
        '12 08 0a 06 32 04 00 00 80 3f', // value: ListAgentActionProto { value: [ { continuous_actions: [1] } ] }
        '20 01', // command RESET
        '2a 01 09', // side_channel
      ].join(' '),
    );
  });

  it('UnityRLOutputProto: agentInfos is field 2, side_channel field 3', () => {
    const bytes = UnityMessage.encode({
      unity_output: { rl_output: { agentInfos: { B: { value: [{ id: 1 }] } }, side_channel: Uint8Array.of(7) } },
    });
    expect(hex(bytes)).toBe(['12 10', '0a 0e', '12 09', '0a 01 42', '12 04 0a 02 50 01', '1a 01 07'].join(' '));
  });

  it('BrainParametersProto with an ActionSpecProto', () => {
    const bytes = BrainParameters.encode({
      brain_name: 'B',
      is_training: true,
      action_spec: { num_continuous_actions: 2, num_discrete_actions: 1, discrete_branch_sizes: [3] },
    });
    expect(hex(bytes)).toBe('3a 01 42 40 01 4a 07 08 02 10 01 1a 01 03');
  });

  it('DemonstrationMetaProto and AgentInfoActionPairProto', () => {
    expect(hex(DemonstrationMeta.encode({ api_version: 1, demonstration_name: 'd', number_steps: 2, number_episodes: 3, mean_reward: 1 }))).toBe(
      '08 01 12 01 64 18 02 20 03 2d 00 00 80 3f',
    );
    expect(hex(AgentInfoActionPair.encode({ agent_info: { id: 1 }, action_info: { discrete_actions: [1] } }))).toBe(
      '0a 02 50 01 12 03 3a 01 01',
    );
  });

  it('decodes bytes written by hand into the same values', () => {
    const decoded = UnityMessage.decode(bytesOf('0a 03 08 90 03 12 10 0a 0e 12 09 0a 01 42 12 04 0a 02 50 01 1a 01 07'));
    expect(decoded.header?.status).toBe(400);
    expect(decoded.unity_output?.rl_output?.agentInfos?.B.value?.[0].id).toBe(1);
    expect(Array.from(decoded.unity_output?.rl_output?.side_channel ?? [])).toEqual([7]);
  });
});
