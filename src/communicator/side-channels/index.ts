/** Side channels of the Unity ML-Agents protocol, trainer side. */
export { IncomingMessage } from './incoming-message';
export { OutgoingMessage } from './outgoing-message';
export {
  SideChannel,
  channelIdFromBytes,
  channelIdToBytes,
  normalizeChannelId,
} from './side-channel';
export { SideChannelManager } from './side-channel-manager';
export type { SideChannelLogger, SideChannelManagerOptions } from './side-channel-manager';
export {
  DEFAULT_ENGINE_CONFIG,
  ENGINE_CONFIGURATION_CHANNEL_ID,
  EngineConfigurationChannel,
  EngineConfigurationType,
} from './engine-configuration-channel';
export type { EngineConfig } from './engine-configuration-channel';
export {
  ENVIRONMENT_PARAMETERS_CHANNEL_ID,
  EnvironmentDataType,
  EnvironmentParametersChannel,
  SamplerType,
} from './environment-parameters-channel';
export { FLOAT_PROPERTIES_CHANNEL_ID, FloatPropertiesChannel } from './float-properties-channel';
export {
  STATS_SIDE_CHANNEL_ID,
  StatsAggregationMethod,
  StatsSideChannel,
} from './stats-side-channel';
export type { EnvironmentStats, StatList } from './stats-side-channel';
export { RawBytesChannel } from './raw-bytes-channel';
