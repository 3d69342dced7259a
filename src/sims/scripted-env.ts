#!/usr/bin/env node
/**
 * A protocol test environment: an executable that connects to a trainer exactly as a Unity
 * build does and plays scripted, deterministic agents whose specs come from its command line.
 * Tests and `npm run bench:comm` use it to exercise every corner of the protocol.
 *
 * Each agent's vector observation is [step in episode, agent index, its last actions..., 0...];
 * its reward is the sum of its last actions, so a trainer can check that actions arrived.
 * Episodes last --episode-length steps; the agent keeps its id into the next episode (as Unity
 * does) unless --new-id-per-episode is given.
 */
import * as fs from 'fs';
import { PNG } from 'pngjs';
import {
  AgentInfoProto,
  BrainParametersProto,
  CommandProto,
  CompressionTypeProto,
  ObservationProto,
  UnityRLInputProto,
  UnityRLOutputProto,
} from '../communicator/messages';
import { FloatPropertiesChannel } from '../communicator/side-channels/float-properties-channel';
import { SideChannelManager } from '../communicator/side-channels/side-channel-manager';
import { UnityClient } from './unity-client';

export interface ScriptedEnvOptions {
  port: number;
  logFile?: string;
  behavior: string;
  agents: number;
  obsSize: number;
  continuous: number;
  discrete: number[];
  episodeLength: number;
  interrupt: boolean;
  newIdPerEpisode: boolean;
  /** [channels, height, width] of an extra PNG-compressed visual observation (channels 1 or 3). */
  visual?: [number, number, number];
  communicationVersion: string;
  /** Exit with this code before connecting. */
  exitCode?: number;
  nanAtStep?: number;
  quitAfter?: number;
  hangAtStep?: number;
  /** A second behavior, `<name>`, whose agents first appear at this step. */
  secondBehaviorAt?: number;
}

export function parseScriptedEnvArgs(argv: readonly string[]): ScriptedEnvOptions {
  const options: ScriptedEnvOptions = {
    port: 5005,
    behavior: 'Scripted',
    agents: 2,
    obsSize: 8,
    continuous: 2,
    discrete: [],
    episodeLength: 5,
    interrupt: false,
    newIdPerEpisode: false,
    communicationVersion: '1.5.0',
  };
  const int = (value: string | undefined, flag: string): number => {
    const n = Number(value);
    if (value === undefined || !Number.isInteger(n)) {
      throw new Error(`${flag} needs an integer, got ${value ?? 'nothing'}`);
    }
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const next = () => argv[++i];
    switch (arg) {
      case '--mlagents-port': options.port = int(next(), arg); break;
      case '-logFile': options.logFile = next(); break;
      case '--behavior': options.behavior = next(); break;
      case '--agents': options.agents = int(next(), arg); break;
      case '--obs-size': options.obsSize = int(next(), arg); break;
      case '--continuous': options.continuous = int(next(), arg); break;
      case '--discrete': options.discrete = next().split(',').filter(Boolean).map((v) => int(v, arg)); break;
      case '--episode-length': options.episodeLength = int(next(), arg); break;
      case '--interrupt': options.interrupt = true; break;
      case '--new-id-per-episode': options.newIdPerEpisode = true; break;
      case '--visual': options.visual = next().split('x').map((v) => int(v, arg)) as [number, number, number]; break;
      case '--comm-version': options.communicationVersion = next(); break;
      case '--exit-code': options.exitCode = int(next(), arg); break;
      case '--nan-at-step': options.nanAtStep = int(next(), arg); break;
      case '--quit-after': options.quitAfter = int(next(), arg); break;
      case '--hang-at-step': options.hangAtStep = int(next(), arg); break;
      case '--second-behavior-at': options.secondBehaviorAt = int(next(), arg); break;
      default:
        // Unity players ignore flags they do not know (-nographics, -batchmode, ...): so do we.
        break;
    }
  }
  return options;
}

interface ScriptedAgent {
  id: number;
  index: number;
  stepInEpisode: number;
  lastActions: number[];
}

// Values of upstream's DimensionProperty, as a camera sensor describes its channel-first shape.
const DimensionPropertyNone = 1;
const DimensionPropertyTranslational = 2;

class ScriptedBehavior {
  readonly agents: ScriptedAgent[];
  /** Agents that asked for a decision in the last message, in its order. */
  private asked: ScriptedAgent[] = [];
  private announced = false;

  constructor(
    readonly name: string,
    private readonly options: ScriptedEnvOptions,
    private readonly nextId: () => number,
  ) {
    this.agents = Array.from({ length: options.agents }, (_, index) => ({
      id: nextId(),
      index,
      stepInEpisode: 0,
      lastActions: [],
    }));
  }

  brainParameters(): BrainParametersProto {
    const o = this.options;
    return {
      brain_name: this.name,
      is_training: true,
      action_spec: {
        num_continuous_actions: o.continuous,
        num_discrete_actions: o.discrete.length,
        discrete_branch_sizes: o.discrete,
      },
    };
  }

  /** Brain parameters the first time, then nothing. */
  takeAnnouncement(): BrainParametersProto | undefined {
    if (this.announced) return undefined;
    this.announced = true;
    return this.brainParameters();
  }

  applyActions(actions: { value?: Array<{ continuous_actions?: ArrayLike<number>; discrete_actions?: ArrayLike<number> }> } | undefined): void {
    const list = actions?.value ?? [];
    this.asked.forEach((agent, i) => {
      const action = list[i];
      agent.lastActions = [
        ...Array.from(action?.continuous_actions ?? []),
        ...Array.from(action?.discrete_actions ?? []),
      ];
    });
  }

  reset(): void {
    for (const agent of this.agents) {
      agent.stepInEpisode = 0;
      agent.lastActions = [];
    }
  }

  /** Advances every agent one step and reports them. */
  step(globalStep: number, advance: boolean): AgentInfoProto[] {
    const infos: AgentInfoProto[] = [];
    this.asked = [];
    for (const agent of this.agents) {
      if (advance) agent.stepInEpisode += 1;
      const reward = agent.lastActions.reduce((a, b) => a + b, 0);
      if (advance && agent.stepInEpisode >= this.options.episodeLength) {
        infos.push(this.info(agent, reward, true, globalStep));
        agent.stepInEpisode = 0;
        agent.lastActions = [];
        if (this.options.newIdPerEpisode) agent.id = this.nextId();
      }
      infos.push(this.info(agent, advance ? reward : 0, false, globalStep));
      this.asked.push(agent);
    }
    return infos;
  }

  private info(agent: ScriptedAgent, reward: number, done: boolean, globalStep: number): AgentInfoProto {
    const o = this.options;
    const vector = new Array<number>(o.obsSize).fill(0);
    vector[0] = agent.stepInEpisode;
    if (o.obsSize > 1) vector[1] = agent.index;
    agent.lastActions.forEach((a, j) => {
      if (2 + j < o.obsSize) vector[2 + j] = a;
    });
    if (o.nanAtStep !== undefined && globalStep === o.nanAtStep) vector[0] = NaN;
    const observations: ObservationProto[] = [
      { shape: [o.obsSize], compression_type: CompressionTypeProto.NONE, float_data: { data: vector }, name: 'VectorSensor' },
    ];
    if (o.visual !== undefined) {
      observations.push(visualObservation(o.visual, agent.index, agent.stepInEpisode));
    }
    const totalMask = o.discrete.reduce((a, b) => a + b, 0);
    // Forbid the last choice of the first branch, so that masks can be seen on the trainer side.
    const actionMask =
      o.discrete.length > 0
        ? Array.from({ length: totalMask }, (_, k) => k === o.discrete[0] - 1)
        : [];
    return {
      id: agent.id,
      reward,
      done,
      max_step_reached: done && o.interrupt,
      action_mask: actionMask,
      observations,
    };
  }
}

/**
 * A C x H x W image (C of 1 or 3) whose pixels tell the agent and step, PNG-compressed and
 * described channel-first, as com.unity.ml-agents 3 sends a camera sensor.
 */
function visualObservation(shape: [number, number, number], agentIndex: number, step: number): ObservationProto {
  const [channels, height, width] = shape;
  const png = new PNG({ width, height, colorType: channels === 1 ? 0 : 2, inputColorType: 6 });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 4;
      png.data[p] = (agentIndex * 40 + x) % 256;
      png.data[p + 1] = (step * 20 + y) % 256;
      png.data[p + 2] = (x + y) % 256;
      png.data[p + 3] = 255;
    }
  }
  const bytes = PNG.sync.write(png, { colorType: channels === 1 ? 0 : 2, inputColorType: 6 });
  return {
    shape: [channels, height, width],
    dimension_properties: [DimensionPropertyNone, DimensionPropertyTranslational, DimensionPropertyTranslational],
    compression_type: CompressionTypeProto.PNG,
    compressed_data: bytes,
    name: 'CameraSensor',
  };
}

export async function runScriptedEnv(options: ScriptedEnvOptions): Promise<number> {
  const log = (line: string) => {
    if (options.logFile) fs.appendFileSync(options.logFile, `${line}\n`);
  };
  log(`scripted env starting on port ${options.port}`);
  if (options.exitCode !== undefined) {
    log(`exiting at once with code ${options.exitCode}`);
    return options.exitCode;
  }
  let lastId = 0;
  const nextId = () => ++lastId;
  const behaviors = [new ScriptedBehavior(options.behavior, options, nextId)];
  // Echo channel: a float property "echo" set by the trainer comes back as "echo_reply" = value + 1.
  const floats = new FloatPropertiesChannel();
  const sideChannels = new SideChannelManager([floats], { logger: log });

  const client = new UnityClient({ port: options.port });
  const { init, firstInput } = await client.initialize({
    name: 'ScriptedEnv',
    communication_version: options.communicationVersion,
    package_version: '3.0.0',
    log_path: options.logFile ?? '',
    capabilities: {
      baseRLCapabilities: true,
      concatenatedPngObservations: true,
      compressedChannelMapping: true,
      hybridActions: true,
      trainingAnalytics: true,
      variableLengthObservation: true,
      multiAgentGroups: true,
    },
  });
  log(`handshake done: trainer seed ${init.seed ?? 0}, communication version ${init.communication_version ?? ''}`);

  let input: UnityRLInputProto | null = firstInput;
  let globalStep = 0;
  while (input !== null) {
    if (input.side_channel && input.side_channel.length > 0) {
      sideChannels.processSideChannelMessage(input.side_channel);
      const echo = floats.getProperty('echo');
      if (echo !== undefined && floats.getProperty('echo_reply') === undefined) {
        floats.setProperty('echo_reply', echo + 1);
      }
    }
    const command = input.command ?? CommandProto.STEP;
    if (command === CommandProto.QUIT) break;
    const reset = command === CommandProto.RESET;
    if (reset) {
      behaviors.forEach((b) => b.reset());
    } else {
      globalStep += 1;
      for (const behavior of behaviors) behavior.applyActions(input.agent_actions?.[behavior.name]);
    }
    if (options.secondBehaviorAt !== undefined && globalStep === options.secondBehaviorAt && behaviors.length === 1) {
      behaviors.push(new ScriptedBehavior(`${options.behavior}Second`, options, nextId));
    }
    if (options.hangAtStep !== undefined && globalStep >= options.hangAtStep) {
      log(`hanging at step ${globalStep}`);
      // A pending timer keeps the process alive while it never answers again.
      await new Promise(() => setInterval(() => undefined, 60_000));
    }
    if (options.quitAfter !== undefined && globalStep >= options.quitAfter) {
      log(`leaving after ${globalStep} steps`);
      break;
    }
    const output: UnityRLOutputProto = { agentInfos: {}, side_channel: sideChannels.generateSideChannelMessages() };
    const announcements: BrainParametersProto[] = [];
    for (const behavior of behaviors) {
      output.agentInfos![behavior.name] = { value: behavior.step(globalStep, !reset) };
      const brain = behavior.takeAnnouncement();
      if (brain !== undefined) announcements.push(brain);
    }
    input = await client.exchange({
      rl_output: output,
      rl_initialization_output: announcements.length > 0 ? { brain_parameters: announcements } : undefined,
    });
  }
  await client.close();
  log(`scripted env done after ${globalStep} steps`);
  return 0;
}

if (require.main === module) {
  runScriptedEnv(parseScriptedEnvArgs(process.argv.slice(2))).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`scripted env failed: ${error.message}\n`);
      process.exit(1);
    },
  );
}
