/**
 * The engine's ends of the built-in side channels: it reads the engine configuration (time
 * scale...) and the environment parameters (curriculum values, samplers) the trainer sends, and
 * writes stats (Unity's StatsRecorder). The framing and ids are those of src/communicator.
 */
import { IncomingMessage } from '../../communicator/side-channels/incoming-message';
import { OutgoingMessage } from '../../communicator/side-channels/outgoing-message';
import { SideChannel } from '../../communicator/side-channels/side-channel';
import {
  ENGINE_CONFIGURATION_CHANNEL_ID,
  EngineConfigurationType,
} from '../../communicator/side-channels/engine-configuration-channel';
import {
  ENVIRONMENT_PARAMETERS_CHANNEL_ID,
  EnvironmentDataType,
  SamplerType,
} from '../../communicator/side-channels/environment-parameters-channel';
import { STATS_SIDE_CHANNEL_ID, StatsAggregationMethod } from '../../communicator/side-channels/stats-side-channel';
import { SeededRandom } from '../../common/random';

export interface EngineSettings {
  width: number;
  height: number;
  qualityLevel: number;
  timeScale: number;
  targetFrameRate: number;
  captureFrameRate: number;
}

/** Keeps the engine settings the trainer sent; those it never sent stay unset. */
export class EngineConfigurationReceiver extends SideChannel {
  readonly settings: Partial<EngineSettings> = {};

  constructor() {
    super(ENGINE_CONFIGURATION_CHANNEL_ID);
  }

  override onMessageReceived(msg: IncomingMessage): void {
    const type = msg.readInt32() as EngineConfigurationType;
    switch (type) {
      case EngineConfigurationType.SCREEN_RESOLUTION:
        this.settings.width = msg.readInt32();
        this.settings.height = msg.readInt32();
        break;
      case EngineConfigurationType.QUALITY_LEVEL:
        this.settings.qualityLevel = msg.readInt32();
        break;
      case EngineConfigurationType.TIME_SCALE:
        this.settings.timeScale = msg.readFloat32();
        break;
      case EngineConfigurationType.TARGET_FRAME_RATE:
        this.settings.targetFrameRate = msg.readInt32();
        break;
      case EngineConfigurationType.CAPTURE_FRAME_RATE:
        this.settings.captureFrameRate = msg.readInt32();
        break;
      default:
        throw new Error(`Unknown engine configuration message type ${type}.`);
    }
  }
}

/** A float32 from the wire as it was written: 9.81, not 9.8100004196167. */
export function float32Text(value: number): string {
  return String(Number(value.toPrecision(7)));
}

/** A value the trainer set: a constant, or a sampler drawn anew at each read (as Unity's). */
type Parameter = { constant: number } | { sample: () => number };

/** Academy.Instance.EnvironmentParameters: the values of curricula and randomization. */
export class EnvironmentParametersReceiver extends SideChannel {
  private readonly parameters = new Map<string, Parameter>();
  /** Told each value the trainer sets, in words ("2.5", "uniform in [1, 3], seed 7"): the player's log shows them. */
  onParameterSet: ((key: string, description: string) => void) | undefined;

  constructor() {
    super(ENVIRONMENT_PARAMETERS_CHANNEL_ID);
  }

  override onMessageReceived(msg: IncomingMessage): void {
    const key = msg.readString();
    const type = msg.readInt32() as EnvironmentDataType;
    if (type === EnvironmentDataType.FLOAT) {
      const value = msg.readFloat32();
      this.parameters.set(key, { constant: value });
      this.onParameterSet?.(key, float32Text(value));
      return;
    }
    if (type !== EnvironmentDataType.SAMPLER) {
      throw new Error(`Environment parameter ${key}: unknown data type ${type}.`);
    }
    const seed = msg.readInt32();
    const random = new SeededRandom(seed);
    const sampler = msg.readInt32() as SamplerType;
    if (sampler === SamplerType.UNIFORM) {
      const min = msg.readFloat32();
      const max = msg.readFloat32();
      this.parameters.set(key, { sample: () => random.range(min, max) });
      this.onParameterSet?.(key, `uniform in [${float32Text(min)}, ${float32Text(max)}], seed ${seed}`);
    } else if (sampler === SamplerType.GAUSSIAN) {
      const mean = msg.readFloat32();
      const stDev = msg.readFloat32();
      this.parameters.set(key, { sample: () => mean + stDev * random.gaussian() });
      this.onParameterSet?.(key, `gaussian of mean ${float32Text(mean)} and standard deviation ${float32Text(stDev)}, seed ${seed}`);
    } else if (sampler === SamplerType.MULTIRANGEUNIFORM) {
      const flat = msg.readFloat32List();
      const intervals: Array<[number, number]> = [];
      for (let i = 0; i + 1 < flat.length; i += 2) intervals.push([flat[i], flat[i + 1]]);
      const total = intervals.reduce((sum, [min, max]) => sum + (max - min), 0);
      this.parameters.set(key, {
        // Pick an interval in proportion to its width, then a value in it.
        sample: () => {
          let draw = random.next() * total;
          for (const [min, max] of intervals) {
            if (draw <= max - min) return min + draw;
            draw -= max - min;
          }
          return intervals[intervals.length - 1][1];
        },
      });
      this.onParameterSet?.(key, `uniform in ${intervals.map(([min, max]) => `[${float32Text(min)}, ${float32Text(max)}]`).join(' or ')}, seed ${seed}`);
    } else {
      throw new Error(`Environment parameter ${key}: unknown sampler type ${sampler}.`);
    }
  }

  /** The parameter's value (a new draw for a sampler), or `defaultValue` if the trainer set none. */
  getWithDefault(key: string, defaultValue: number): number {
    const parameter = this.parameters.get(key);
    if (parameter === undefined) return defaultValue;
    return 'constant' in parameter ? parameter.constant : parameter.sample();
  }

  keys(): string[] {
    return [...this.parameters.keys()];
  }
}

/** Unity's StatsRecorder: values that show in the trainer's summaries and TensorBoard. */
export class StatsRecorder extends SideChannel {
  constructor() {
    super(STATS_SIDE_CHANNEL_ID);
  }

  override onMessageReceived(_msg: IncomingMessage): void {
    throw new Error('The stats channel only goes from the environment to the trainer.');
  }

  add(key: string, value: number, method: StatsAggregationMethod = StatsAggregationMethod.AVERAGE): void {
    const msg = new OutgoingMessage();
    msg.writeString(key);
    msg.writeFloat32(value);
    msg.writeInt32(method);
    this.queueMessageToSend(msg);
  }
}
