/**
 * Field numbers of the communicator messages the step codecs read and write by hand, as in
 * protos/mlagents_envs/communicator_objects/*.proto (test/communicator/messages.test.ts checks the
 * .proto files against upstream's numbers).
 */

export enum UnityMessageField {
  header = 1,
  unity_output = 2,
  unity_input = 3,
}

export enum HeaderField {
  status = 1,
}

export enum UnityOutputField {
  rl_output = 1,
  rl_initialization_output = 2,
}

export enum UnityInputField {
  rl_input = 1,
  rl_initialization_input = 2,
}

export enum UnityRLOutputField {
  agentInfos = 2,
  side_channel = 3,
}

export enum UnityRLInputField {
  agent_actions = 1,
  command = 4,
  side_channel = 5,
}

/** A protobuf map<string, V> is a repeated message of these two fields. */
export enum MapEntryField {
  key = 1,
  value = 2,
}

/** ListAgentInfoProto and ListAgentActionProto: one repeated field. */
export enum AgentListField {
  value = 1,
}

export enum AgentInfoField {
  reward = 7,
  done = 8,
  max_step_reached = 9,
  id = 10,
  action_mask = 11,
  observations = 13,
  group_id = 14,
  group_reward = 15,
}

export enum ObservationField {
  shape = 1,
  compression_type = 2,
  compressed_data = 3,
  float_data = 4,
  compressed_channel_mapping = 5,
  dimension_properties = 6,
  observation_type = 7,
  name = 8,
}

export enum FloatDataField {
  data = 1,
}

export enum AgentActionField {
  vector_actions_deprecated = 1,
  value = 4,
  continuous_actions = 6,
  discrete_actions = 7,
}
