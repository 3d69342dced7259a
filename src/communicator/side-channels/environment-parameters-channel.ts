import { IncomingMessage } from './incoming-message';
import { OutgoingMessage } from './outgoing-message';
import { SideChannel } from './side-channel';

/** Unity's EnvironmentParametersChannel id. */
export const ENVIRONMENT_PARAMETERS_CHANNEL_ID = '534c891e-810f-11ea-a9d0-822485860400';

/** The int32 after the key: a fixed value or a sampler. */
export enum EnvironmentDataType {
  FLOAT = 0,
  SAMPLER = 1,
}

/** The distribution Unity samples a parameter from at each episode. */
export enum SamplerType {
  UNIFORM = 0,
  GAUSSIAN = 1,
  MULTIRANGEUNIFORM = 2,
}

/**
 * Sends environment parameters (curriculum values, randomized parameters) that Unity code
 * reads through Academy.Instance.EnvironmentParameters. Layout of each message:
 *   float:   string key, int32 FLOAT, float32 value
 *   sampler: string key, int32 SAMPLER, int32 seed, int32 sampler type, then
 *            uniform: float32 min, float32 max; gaussian: float32 mean, float32 std dev;
 *            multirange uniform: float list of the flattened [min, max] intervals.
 * The channel only sends; Unity never writes to it.
 */
export class EnvironmentParametersChannel extends SideChannel {
  constructor() {
    super(ENVIRONMENT_PARAMETERS_CHANNEL_ID);
  }

  override onMessageReceived(_msg: IncomingMessage): void {
    throw new Error(
      `EnvironmentParametersChannel (${ENVIRONMENT_PARAMETERS_CHANNEL_ID}) received a message ` +
        `from the environment; this channel only goes from the trainer to Unity`,
    );
  }

  setFloatParameter(key: string, value: number): void {
    const msg = new OutgoingMessage();
    msg.writeString(key);
    msg.writeInt32(EnvironmentDataType.FLOAT);
    msg.writeFloat32(value);
    this.queueMessageToSend(msg);
  }

  setUniformSamplerParameters(key: string, minValue: number, maxValue: number, seed: number): void {
    const msg = this.samplerHeader(key, seed, SamplerType.UNIFORM);
    msg.writeFloat32(minValue);
    msg.writeFloat32(maxValue);
    this.queueMessageToSend(msg);
  }

  setGaussianSamplerParameters(key: string, mean: number, stDev: number, seed: number): void {
    const msg = this.samplerHeader(key, seed, SamplerType.GAUSSIAN);
    msg.writeFloat32(mean);
    msg.writeFloat32(stDev);
    this.queueMessageToSend(msg);
  }

  setMultirangeUniformSamplerParameters(
    key: string,
    intervals: ReadonlyArray<readonly [number, number]>,
    seed: number,
  ): void {
    const msg = this.samplerHeader(key, seed, SamplerType.MULTIRANGEUNIFORM);
    msg.writeFloat32List(intervals.flatMap(([min, max]) => [min, max]));
    this.queueMessageToSend(msg);
  }

  private samplerHeader(key: string, seed: number, sampler: SamplerType): OutgoingMessage {
    const msg = new OutgoingMessage();
    msg.writeString(key);
    msg.writeInt32(EnvironmentDataType.SAMPLER);
    msg.writeInt32(seed);
    msg.writeInt32(sampler);
    return msg;
  }
}
