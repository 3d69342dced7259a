/**
 * The messages of Unity ML-Agents' communicator (package communicator_objects), loaded from
 * protos/ with protobufjs, and typed views of them.
 *
 * Field names keep the .proto spelling (keepCase) so that they read exactly as upstream's.
 * Decoded messages are protobufjs message objects: unset scalars read as their defaults and
 * unset repeated fields as empty arrays, so the interfaces below mark nothing optional that a
 * decoded message always has. Messages we build to send may leave any field out.
 */
import * as path from 'path';
import * as protobuf from 'protobufjs';

/** The communication API version this trainer speaks (Unity ML-Agents' `UnityEnvironment.API_VERSION`). */
export const COMMUNICATION_API_VERSION = '1.5.0';

/** Where the .proto files live; src/communicator and dist/communicator both sit two levels below the package root. */
export const PROTO_DIR = path.resolve(__dirname, '..', '..', 'protos');

/** The package version we announce in the handshake. */
export const PACKAGE_VERSION: string = (
  require(path.resolve(__dirname, '..', '..', 'package.json')) as { version: string }
).version;

export const STATUS_OK = 200;
/** Either side sends this status to end the session. */
export const STATUS_QUIT = 400;

export enum CommandProto {
  STEP = 0,
  RESET = 1,
  QUIT = 2,
}

export enum CompressionTypeProto {
  NONE = 0,
  PNG = 1,
}

export enum ObservationTypeProto {
  DEFAULT = 0,
  GOAL_SIGNAL = 1,
}

/** Upstream's DimensionProperty flags, as ObservationProto.dimension_properties carries them. */
export enum DimensionPropertyProto {
  UNSPECIFIED = 0,
  NONE = 1,
  TRANSLATIONAL_EQUIVARIANCE = 2,
  VARIABLE_SIZE = 4,
}

/** How a camera sensor describes its channel-first [C, H, W] image. */
export const CHANNEL_FIRST_IMAGE_DIMENSIONS: readonly DimensionPropertyProto[] = [
  DimensionPropertyProto.NONE,
  DimensionPropertyProto.TRANSLATIONAL_EQUIVARIANCE,
  DimensionPropertyProto.TRANSLATIONAL_EQUIVARIANCE,
];

export enum SpaceTypeProto {
  discrete = 0,
  continuous = 1,
}

export interface HeaderProto {
  status?: number;
  message?: string;
}

export interface UnityRLCapabilitiesProto {
  baseRLCapabilities?: boolean;
  concatenatedPngObservations?: boolean;
  compressedChannelMapping?: boolean;
  hybridActions?: boolean;
  trainingAnalytics?: boolean;
  variableLengthObservation?: boolean;
  multiAgentGroups?: boolean;
}

/**
 * Every capability set: what this trainer announces in the handshake, and what the engine side
 * (src/sims) announces, as upstream's trainer and Unity's current packages do.
 */
export function allCapabilities(): UnityRLCapabilitiesProto {
  return {
    baseRLCapabilities: true,
    concatenatedPngObservations: true,
    compressedChannelMapping: true,
    hybridActions: true,
    trainingAnalytics: true,
    variableLengthObservation: true,
    multiAgentGroups: true,
  };
}

export interface ObservationProto {
  shape: number[];
  compression_type?: CompressionTypeProto;
  compressed_data?: Uint8Array | null;
  float_data?: { data: number[] } | null;
  compressed_channel_mapping?: number[];
  dimension_properties?: number[];
  observation_type?: ObservationTypeProto;
  name?: string;
}

export interface AgentInfoProto {
  reward?: number;
  done?: boolean;
  max_step_reached?: boolean;
  id?: number;
  action_mask?: boolean[];
  observations?: ObservationProto[];
  group_id?: number;
  group_reward?: number;
}

export interface AgentActionProto {
  vector_actions_deprecated?: number[] | Float32Array;
  value?: number;
  continuous_actions?: number[] | Float32Array;
  discrete_actions?: number[] | Int32Array;
}

export interface ActionSpecProto {
  num_continuous_actions?: number;
  num_discrete_actions?: number;
  discrete_branch_sizes?: number[];
  action_descriptions?: string[];
}

export interface BrainParametersProto {
  vector_action_size_deprecated?: number[];
  vector_action_descriptions_deprecated?: string[];
  vector_action_space_type_deprecated?: SpaceTypeProto;
  brain_name?: string;
  is_training?: boolean;
  action_spec?: ActionSpecProto | null;
}

export interface UnityRLInitializationOutputProto {
  name?: string;
  communication_version?: string;
  log_path?: string;
  brain_parameters?: BrainParametersProto[];
  package_version?: string;
  capabilities?: UnityRLCapabilitiesProto | null;
}

export interface UnityRLInitializationInputProto {
  seed?: number;
  communication_version?: string;
  package_version?: string;
  capabilities?: UnityRLCapabilitiesProto | null;
  num_areas?: number;
}

export interface UnityRLOutputProto {
  agentInfos?: { [behaviorName: string]: { value?: AgentInfoProto[] } };
  side_channel?: Uint8Array;
}

export interface UnityRLInputProto {
  agent_actions?: { [behaviorName: string]: { value?: AgentActionProto[] } };
  command?: CommandProto;
  side_channel?: Uint8Array;
}

export interface UnityOutputProto {
  rl_output?: UnityRLOutputProto | null;
  rl_initialization_output?: UnityRLInitializationOutputProto | null;
}

export interface UnityInputProto {
  rl_input?: UnityRLInputProto | null;
  rl_initialization_input?: UnityRLInitializationInputProto | null;
}

export interface UnityMessageProto {
  header?: HeaderProto | null;
  unity_output?: UnityOutputProto | null;
  unity_input?: UnityInputProto | null;
}

export interface DemonstrationMetaProto {
  api_version?: number;
  demonstration_name?: string;
  number_steps?: number;
  number_episodes?: number;
  mean_reward?: number;
}

export interface AgentInfoActionPairProto {
  agent_info?: AgentInfoProto | null;
  action_info?: AgentActionProto | null;
}

/** Every .proto file of the communicator, by file name. */
export const PROTO_FILE_NAMES = [
  'agent_action.proto',
  'agent_info.proto',
  'agent_info_action_pair.proto',
  'brain_parameters.proto',
  'capabilities.proto',
  'command.proto',
  'custom_reset_parameters.proto',
  'demonstration_meta.proto',
  'engine_configuration.proto',
  'header.proto',
  'observation.proto',
  'space_type.proto',
  'training_analytics.proto',
  'unity_input.proto',
  'unity_message.proto',
  'unity_output.proto',
  'unity_rl_initialization_input.proto',
  'unity_rl_initialization_output.proto',
  'unity_rl_input.proto',
  'unity_rl_output.proto',
  'unity_to_external.proto',
] as const;

let loadedRoot: protobuf.Root | undefined;

/** The protobufjs root holding every communicator message, loaded once. */
export function protoRoot(): protobuf.Root {
  if (loadedRoot === undefined) {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
    root.loadSync(
      PROTO_FILE_NAMES.map((f) => `mlagents_envs/communicator_objects/${f}`),
      { keepCase: true },
    );
    root.resolveAll();
    loadedRoot = root;
  }
  return loadedRoot;
}

/** A message type of package communicator_objects, e.g. `messageType('UnityMessageProto')`. */
export function messageType(name: string): protobuf.Type {
  return protoRoot().lookupType(`communicator_objects.${name}`);
}

/** Encode and decode one message type, typed. */
export interface Codec<T> {
  encode(message: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

function codecFor<T>(name: string): Codec<T> {
  let type: protobuf.Type | undefined;
  const resolved = (): protobuf.Type => (type ??= messageType(name));
  return {
    encode: (message: T) => resolved().encode(message as protobuf.Message).finish(),
    decode: (bytes: Uint8Array) => resolved().decode(bytes) as unknown as T,
  };
}

export const UnityMessage = codecFor<UnityMessageProto>('UnityMessageProto');
export const DemonstrationMeta = codecFor<DemonstrationMetaProto>('DemonstrationMetaProto');
export const BrainParameters = codecFor<BrainParametersProto>('BrainParametersProto');
export const AgentInfoActionPair = codecFor<AgentInfoActionPairProto>('AgentInfoActionPairProto');
export const AgentInfo = codecFor<AgentInfoProto>('AgentInfoProto');
export const AgentAction = codecFor<AgentActionProto>('AgentActionProto');
export const UnityRLInitializationOutput = codecFor<UnityRLInitializationOutputProto>(
  'UnityRLInitializationOutputProto',
);

/** The gRPC method path of the one rpc of service communicator_objects.UnityToExternalProto. */
export const EXCHANGE_METHOD_PATH = '/communicator_objects.UnityToExternalProto/Exchange';
