import {
  DEFAULT_ENGINE_CONFIG,
  ENGINE_CONFIGURATION_CHANNEL_ID,
  EngineConfigurationChannel,
  EngineConfigurationType,
} from '../../../src/communicator/side-channels/engine-configuration-channel';
import { IncomingMessage } from '../../../src/communicator/side-channels/incoming-message';
import { hex, toHex } from './hex';

const payloads = (channel: EngineConfigurationChannel): string[] =>
  channel.drainQueuedMessages().map(toHex);

describe('EngineConfigurationChannel', () => {
  it("uses upstream's channel id and message type values", () => {
    expect(new EngineConfigurationChannel().channelId).toBe('e951342c-4f7e-11ea-b238-784f4387d1f7');
    expect(ENGINE_CONFIGURATION_CHANNEL_ID).toBe('e951342c-4f7e-11ea-b238-784f4387d1f7');
    expect(EngineConfigurationType.SCREEN_RESOLUTION).toBe(0);
    expect(EngineConfigurationType.QUALITY_LEVEL).toBe(1);
    expect(EngineConfigurationType.TIME_SCALE).toBe(2);
    expect(EngineConfigurationType.TARGET_FRAME_RATE).toBe(3);
    expect(EngineConfigurationType.CAPTURE_FRAME_RATE).toBe(4);
  });

  it('writes the time-scale message as int32 2 then float32', () => {
    const channel = new EngineConfigurationChannel();
    channel.setConfigurationParameters({ timeScale: 20 });
    expect(payloads(channel)).toEqual([toHex(hex('02 00 00 00 00 00 a0 41'))]);
  });

  it('has the default configuration of upstream', () => {
    expect(DEFAULT_ENGINE_CONFIG).toEqual({
      width: 80,
      height: 80,
      qualityLevel: 1,
      timeScale: 20,
      targetFrameRate: -1,
      captureFrameRate: 60,
    });
    expect(Object.isFrozen(DEFAULT_ENGINE_CONFIG)).toBe(true);
  });

  it('sends one message per setting, in upstream order, for the default configuration', () => {
    const channel = new EngineConfigurationChannel();
    channel.setConfiguration(DEFAULT_ENGINE_CONFIG);
    expect(payloads(channel)).toEqual([
      '00 00 00 00 50 00 00 00 50 00 00 00', // SCREEN_RESOLUTION 80 x 80
      '01 00 00 00 01 00 00 00', // QUALITY_LEVEL 1
      '02 00 00 00 00 00 a0 41', // TIME_SCALE 20.0f
      '03 00 00 00 ff ff ff ff', // TARGET_FRAME_RATE -1
      '04 00 00 00 3c 00 00 00', // CAPTURE_FRAME_RATE 60
    ]);
  });

  it('sends only the settings given', () => {
    const channel = new EngineConfigurationChannel();
    channel.setConfigurationParameters({ qualityLevel: 5, captureFrameRate: 30 });
    expect(payloads(channel)).toEqual(['01 00 00 00 05 00 00 00', '04 00 00 00 1e 00 00 00']);
    channel.setConfigurationParameters({});
    expect(payloads(channel)).toEqual([]);
  });

  it('refuses half a screen resolution', () => {
    const channel = new EngineConfigurationChannel();
    expect(() => channel.setConfigurationParameters({ width: 100 })).toThrow(
      /width and height must be set together \(got only width\)/,
    );
    expect(() => channel.setConfigurationParameters({ height: 100 })).toThrow(/got only height/);
    expect(channel.hasQueuedMessages).toBe(false);
  });

  it('refuses a non-integer integer setting', () => {
    const channel = new EngineConfigurationChannel();
    expect(() => channel.setConfigurationParameters({ qualityLevel: 1.5 })).toThrow(
      /not a 32-bit integer/,
    );
  });

  it('treats a message from the environment as an error', () => {
    const channel = new EngineConfigurationChannel();
    expect(() => channel.onMessageReceived(new IncomingMessage(hex('02 00 00 00')))).toThrow(
      /EngineConfigurationChannel .* received a message from the environment/,
    );
  });
});
