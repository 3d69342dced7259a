import { IncomingMessage } from './incoming-message';
import { OutgoingMessage } from './outgoing-message';
import { SideChannel } from './side-channel';

/** Unity's EngineConfigurationChannel id. */
export const ENGINE_CONFIGURATION_CHANNEL_ID = 'e951342c-4f7e-11ea-b238-784f4387d1f7';

/** First int32 of every message on this channel: which setting the message carries. */
export enum EngineConfigurationType {
  SCREEN_RESOLUTION = 0,
  QUALITY_LEVEL = 1,
  TIME_SCALE = 2,
  TARGET_FRAME_RATE = 3,
  CAPTURE_FRAME_RATE = 4,
}

/** Engine settings; an absent field leaves Unity's current value alone. */
export interface EngineConfig {
  /** Screen width in pixels; only together with height. */
  width?: number;
  /** Screen height in pixels; only together with width. */
  height?: number;
  qualityLevel?: number;
  /** Multiplier on simulated time (float). */
  timeScale?: number;
  /** -1 lets Unity run as fast as it can. */
  targetFrameRate?: number;
  /** Fixed simulated frame rate, independent of the real one. */
  captureFrameRate?: number;
}

/** What mlagents-learn sends when nothing is configured (upstream's EngineConfig.default_config). */
export const DEFAULT_ENGINE_CONFIG: Readonly<Required<EngineConfig>> = Object.freeze({
  width: 80,
  height: 80,
  qualityLevel: 1,
  timeScale: 20,
  targetFrameRate: -1,
  captureFrameRate: 60,
});

/**
 * Sets Unity's screen size, quality level, time scale and frame rates. One message per
 * setting: an int32 EngineConfigurationType, then the value (int32s, the time scale a float32).
 * The channel only sends; Unity never writes to it.
 */
export class EngineConfigurationChannel extends SideChannel {
  constructor() {
    super(ENGINE_CONFIGURATION_CHANNEL_ID);
  }

  override onMessageReceived(_msg: IncomingMessage): void {
    throw new Error(
      `EngineConfigurationChannel (${ENGINE_CONFIGURATION_CHANNEL_ID}) received a message from ` +
        `the environment; this channel only goes from the trainer to Unity`,
    );
  }

  /** Queues one message for each setting given, in upstream's order. */
  setConfigurationParameters(config: EngineConfig): void {
    const { width, height, qualityLevel, timeScale, targetFrameRate, captureFrameRate } = config;
    // Unity sets both dimensions at once, so half a resolution cannot be sent.
    if ((width === undefined) !== (height === undefined)) {
      throw new Error(
        'EngineConfigurationChannel: width and height must be set together (got only ' +
          `${width === undefined ? 'height' : 'width'})`,
      );
    }
    if (width !== undefined && height !== undefined) {
      this.send(EngineConfigurationType.SCREEN_RESOLUTION, (m) => {
        m.writeInt32(width);
        m.writeInt32(height);
      });
    }
    if (qualityLevel !== undefined) {
      this.send(EngineConfigurationType.QUALITY_LEVEL, (m) => m.writeInt32(qualityLevel));
    }
    if (timeScale !== undefined) {
      this.send(EngineConfigurationType.TIME_SCALE, (m) => m.writeFloat32(timeScale));
    }
    if (targetFrameRate !== undefined) {
      this.send(EngineConfigurationType.TARGET_FRAME_RATE, (m) => m.writeInt32(targetFrameRate));
    }
    if (captureFrameRate !== undefined) {
      this.send(EngineConfigurationType.CAPTURE_FRAME_RATE, (m) => m.writeInt32(captureFrameRate));
    }
  }

  /** Same as setConfigurationParameters; kept for upstream's set_configuration. */
  setConfiguration(config: EngineConfig): void {
    this.setConfigurationParameters(config);
  }

  private send(type: EngineConfigurationType, writeValue: (msg: OutgoingMessage) => void): void {
    const msg = new OutgoingMessage();
    msg.writeInt32(type);
    writeValue(msg);
    this.queueMessageToSend(msg);
  }
}
