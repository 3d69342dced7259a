import {
  ENVIRONMENT_PARAMETERS_CHANNEL_ID,
  EnvironmentDataType,
  EnvironmentParametersChannel,
  SamplerType,
} from '../../../src/communicator/side-channels/environment-parameters-channel';
import { IncomingMessage } from '../../../src/communicator/side-channels/incoming-message';
import { hex, toHex } from './hex';

const single = (channel: EnvironmentParametersChannel): string => {
  const queued = channel.drainQueuedMessages();
  expect(queued).toHaveLength(1);
  return toHex(queued[0]);
};

describe('EnvironmentParametersChannel', () => {
  it("uses upstream's channel id and enum values", () => {
    expect(new EnvironmentParametersChannel().channelId).toBe(
      '534c891e-810f-11ea-a9d0-822485860400',
    );
    expect(ENVIRONMENT_PARAMETERS_CHANNEL_ID).toBe('534c891e-810f-11ea-a9d0-822485860400');
    expect([EnvironmentDataType.FLOAT, EnvironmentDataType.SAMPLER]).toEqual([0, 1]);
    expect([SamplerType.UNIFORM, SamplerType.GAUSSIAN, SamplerType.MULTIRANGEUNIFORM]).toEqual([
      0, 1, 2,
    ]);
  });

  it('writes a float parameter: key, FLOAT, float32 value', () => {
    const channel = new EnvironmentParametersChannel();
    channel.setFloatParameter('f', 0.5);
    expect(single(channel)).toBe(toHex(hex('01 00 00 00 66  00 00 00 00  00 00 00 3f')));
  });

  it('writes a uniform sampler: key, SAMPLER, seed, UNIFORM, min, max', () => {
    const channel = new EnvironmentParametersChannel();
    channel.setUniformSamplerParameters('ab', 0.5, 1.5, 7);
    expect(single(channel)).toBe(
      toHex(
        hex(
          '02 00 00 00 61 62' + // "ab"
            ' 01 00 00 00' + // SAMPLER
            ' 07 00 00 00' + // seed 7
            ' 00 00 00 00' + // UNIFORM
            ' 00 00 00 3f' + // min 0.5f
            ' 00 00 c0 3f', // max 1.5f
        ),
      ),
    );
  });

  it('writes a gaussian sampler: key, SAMPLER, seed, GAUSSIAN, mean, std dev', () => {
    const channel = new EnvironmentParametersChannel();
    channel.setGaussianSamplerParameters('g', 2, 3, -1);
    expect(single(channel)).toBe(
      toHex(
        hex(
          '01 00 00 00 67  01 00 00 00  ff ff ff ff  01 00 00 00  00 00 00 40  00 00 40 40',
        ),
      ),
    );
  });

  it('writes a multirange uniform sampler with the intervals flattened into a float list', () => {
    const channel = new EnvironmentParametersChannel();
    channel.setMultirangeUniformSamplerParameters(
      'm',
      [
        [-1, 0.5],
        [2, 3],
      ],
      42,
    );
    expect(single(channel)).toBe(
      toHex(
        hex(
          '01 00 00 00 6d' + // "m"
            ' 01 00 00 00' + // SAMPLER
            ' 2a 00 00 00' + // seed 42
            ' 02 00 00 00' + // MULTIRANGEUNIFORM
            ' 04 00 00 00' + // 4 floats
            ' 00 00 80 bf  00 00 00 3f  00 00 00 40  00 00 40 40',
        ),
      ),
    );
  });

  it('treats a message from the environment as an error', () => {
    expect(() =>
      new EnvironmentParametersChannel().onMessageReceived(new IncomingMessage(new Uint8Array(0))),
    ).toThrow(/EnvironmentParametersChannel .* received a message from the environment/);
  });
});
