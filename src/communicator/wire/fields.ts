/**
 * Field numbers of the communicator messages the step codecs read and write by hand, read from
 * the .proto files in protos/ (the one place they are written; test/communicator/messages.test.ts
 * checks those against upstream's numbers). Only the fields the codecs touch are named.
 */
import { messageType } from '../messages';

/** `{ name: number }` for these fields of a communicator_objects message. */
function fieldNumbers<const Names extends readonly string[]>(
  message: string,
  names: Names,
): { readonly [Name in Names[number]]: number } {
  const type = messageType(message);
  const numbers: Record<string, number> = {};
  for (const name of names) {
    const field = type.fields[name];
    if (field === undefined) throw new Error(`${message} in protos/ has no field ${name}.`);
    numbers[name] = field.id;
  }
  return Object.freeze(numbers) as { readonly [Name in Names[number]]: number };
}

export const UnityMessageField = fieldNumbers('UnityMessageProto', ['header', 'unity_output', 'unity_input']);
export const HeaderField = fieldNumbers('HeaderProto', ['status']);
export const UnityOutputField = fieldNumbers('UnityOutputProto', ['rl_output', 'rl_initialization_output']);
export const UnityInputField = fieldNumbers('UnityInputProto', ['rl_input', 'rl_initialization_input']);
export const UnityRLOutputField = fieldNumbers('UnityRLOutputProto', ['agentInfos', 'side_channel']);
export const UnityRLInputField = fieldNumbers('UnityRLInputProto', ['agent_actions', 'command', 'side_channel']);

/** ListAgentInfoProto and ListAgentActionProto: one repeated field, `value`, of the same number. */
export const AgentListField = fieldNumbers('UnityRLOutputProto.ListAgentInfoProto', ['value']);
if (fieldNumbers('UnityRLInputProto.ListAgentActionProto', ['value']).value !== AgentListField.value) {
  throw new Error('ListAgentInfoProto.value and ListAgentActionProto.value have different numbers in protos/.');
}

export const AgentInfoField = fieldNumbers('AgentInfoProto', [
  'reward',
  'done',
  'max_step_reached',
  'id',
  'action_mask',
  'observations',
  'group_id',
  'group_reward',
]);

export const ObservationField = fieldNumbers('ObservationProto', [
  'shape',
  'compression_type',
  'compressed_data',
  'float_data',
  'compressed_channel_mapping',
  'dimension_properties',
  'observation_type',
  'name',
]);

export const FloatDataField = fieldNumbers('ObservationProto.FloatData', ['data']);

export const AgentActionField = fieldNumbers('AgentActionProto', [
  'vector_actions_deprecated',
  'value',
  'continuous_actions',
  'discrete_actions',
]);

/**
 * A protobuf map<string, V> travels as a repeated message of these two fields (the protobuf
 * language's definition of maps, not a .proto of ours).
 */
export const MapEntryField = Object.freeze({ key: 1, value: 2 });
