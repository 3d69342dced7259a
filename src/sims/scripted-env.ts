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
 *
 * Its agents live in typed arrays, and its step messages are written from them and its actions
 * read into them by the hand-written codecs of communicator/wire, so that at a thousand agents
 * the environment's own cost stays small beside the trainer's (npm run bench:comm).
 */
import * as fs from 'fs';
import { PNG } from 'pngjs';
import {
  BrainParametersProto,
  CHANNEL_FIRST_IMAGE_DIMENSIONS,
  CommandProto,
  UnityMessageProto,
  UnityRLInitializationOutput,
  allCapabilities,
} from '../communicator/messages';
import { FloatPropertiesChannel } from '../communicator/side-channels/float-properties-channel';
import { SideChannelManager } from '../communicator/side-channels/side-channel-manager';
import { ActionSizes, AgentActionColumns, StepInputMessage, stepInputFromProto } from '../communicator/wire/step-input';
import { AgentInfosToSend, ObservationToSend, encodeStepOutputMessage } from '../communicator/wire/step-output';
import { SimOptionSpecs, SimOptionValues, asksForHelp, intOption, parsePlayerArgs, playerUsage } from './sdk/run-environment';
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

const SCRIPTED_OPTIONS: SimOptionSpecs = {
  'mlagents-port': { type: 'string', default: '5005', description: 'port of the trainer' },
  behavior: { type: 'string', default: 'Scripted', description: 'behavior name' },
  agents: { type: 'string', default: '2', description: 'number of agents' },
  'obs-size': { type: 'string', default: '8', description: 'size of the vector observation' },
  continuous: { type: 'string', default: '2', description: 'continuous actions' },
  discrete: { type: 'string', default: '', description: 'discrete branch sizes, e.g. 3,2' },
  'episode-length': { type: 'string', default: '5', description: 'steps per episode' },
  interrupt: { type: 'boolean', description: 'end episodes as interrupted (max step)' },
  'new-id-per-episode': { type: 'boolean', description: 'a new agent id at each episode' },
  visual: { type: 'string', description: 'an extra PNG observation, CxHxW' },
  'comm-version': { type: 'string', default: '1.5.0', description: 'communication version to announce' },
  'exit-code': { type: 'string', description: 'exit with this code before connecting' },
  'nan-at-step': { type: 'string', description: 'send a NaN observation at this step' },
  'quit-after': { type: 'string', description: 'leave the session after this many steps' },
  'hang-at-step': { type: 'string', description: 'stop answering at this step' },
  'second-behavior-at': { type: 'string', description: 'a second behavior appears at this step' },
};

/** Integers separated by `separator` (an empty value: none). */
function intList(values: SimOptionValues, name: string, separator: string): number[] {
  const raw = values[name];
  if (typeof raw !== 'string' || raw === '') return [];
  return raw.split(separator).map((part) => intOption({ [name]: part }, name));
}

function optionalInt(values: SimOptionValues, name: string): number | undefined {
  return values[name] === undefined ? undefined : intOption(values, name);
}

export function parseScriptedEnvArgs(argv: readonly string[]): ScriptedEnvOptions {
  const { logFile, values } = parsePlayerArgs(SCRIPTED_OPTIONS, argv);
  const visual = intList(values, 'visual', 'x');
  if (visual.length !== 0 && visual.length !== 3) throw new Error(`--visual needs CxHxW, got ${String(values.visual)}.`);
  return {
    port: intOption(values, 'mlagents-port'),
    logFile,
    behavior: String(values.behavior),
    agents: intOption(values, 'agents'),
    obsSize: intOption(values, 'obs-size'),
    continuous: intOption(values, 'continuous'),
    discrete: intList(values, 'discrete', ','),
    episodeLength: intOption(values, 'episode-length'),
    interrupt: values.interrupt === true,
    newIdPerEpisode: values['new-id-per-episode'] === true,
    visual: visual.length === 3 ? (visual as [number, number, number]) : undefined,
    communicationVersion: String(values['comm-version']),
    exitCode: optionalInt(values, 'exit-code'),
    nanAtStep: optionalInt(values, 'nan-at-step'),
    quitAfter: optionalInt(values, 'quit-after'),
    hangAtStep: optionalInt(values, 'hang-at-step'),
    secondBehaviorAt: optionalInt(values, 'second-behavior-at'),
  };
}


/**
 * The agents of one behavior, as columns: agent i's id, step in its episode and last actions
 * (its continuous then discrete actions; zeros before its first action of an episode).
 */
class ScriptedBehavior {
  private readonly count: number;
  private readonly ids: Int32Array;
  private readonly stepInEpisode: Int32Array;
  private readonly lastActions: Float64Array;
  private readonly actionWidth: number;
  /** Whether the agents asked for a decision in the last message (all of them do, in order). */
  private asked = false;
  private announced = false;
  /** The message's agent infos: room for two rows per agent, a terminal step and the next episode's first. */
  private readonly out: {
    id: Int32Array;
    reward: Float32Array;
    done: Uint8Array;
    maxStepReached: Uint8Array;
    vector: Float32Array;
    actionMask: Uint8Array;
    images: Uint8Array[];
  };
  private readonly maskSize: number;

  constructor(
    readonly name: string,
    private readonly options: ScriptedEnvOptions,
    private readonly nextId: () => number,
  ) {
    this.count = options.agents;
    this.ids = Int32Array.from({ length: this.count }, () => nextId());
    this.stepInEpisode = new Int32Array(this.count);
    this.actionWidth = options.continuous + options.discrete.length;
    this.lastActions = new Float64Array(this.count * this.actionWidth);
    this.maskSize = options.discrete.reduce((a, b) => a + b, 0);
    const rows = 2 * this.count;
    this.out = {
      id: new Int32Array(rows),
      reward: new Float32Array(rows),
      done: new Uint8Array(rows),
      maxStepReached: new Uint8Array(rows),
      vector: new Float32Array(rows * options.obsSize),
      actionMask: new Uint8Array(options.discrete.length > 0 ? rows * this.maskSize : 0),
      images: [],
    };
  }

  get actionSizes(): ActionSizes {
    return { continuous: this.options.continuous, discrete: this.options.discrete.length };
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

  /** Row i of the trainer's actions goes to the i-th agent that asked; agents given none keep zeros. */
  applyActions(actions: AgentActionColumns | undefined): void {
    if (!this.asked) return;
    const { continuous, discrete } = this.options;
    const branches = discrete.length;
    this.lastActions.fill(0);
    const given = Math.min(actions?.count ?? 0, this.count);
    for (let i = 0; i < given; i++) {
      const row = i * this.actionWidth;
      for (let j = 0; j < continuous; j++) this.lastActions[row + j] = actions!.continuous[i * continuous + j];
      for (let j = 0; j < branches; j++) this.lastActions[row + continuous + j] = actions!.discrete[i * branches + j];
    }
  }

  reset(): void {
    this.stepInEpisode.fill(0);
    this.lastActions.fill(0);
  }

  /** Advances every agent one step and reports them. */
  step(globalStep: number, advance: boolean): AgentInfosToSend {
    this.asked = true;
    this.out.images.length = 0;
    let row = 0;
    for (let agent = 0; agent < this.count; agent++) {
      if (advance) this.stepInEpisode[agent] += 1;
      const reward = this.sumOfLastActions(agent);
      if (advance && this.stepInEpisode[agent] >= this.options.episodeLength) {
        this.writeInfo(row++, agent, reward, true, globalStep);
        this.stepInEpisode[agent] = 0;
        this.lastActions.fill(0, agent * this.actionWidth, (agent + 1) * this.actionWidth);
        if (this.options.newIdPerEpisode) this.ids[agent] = this.nextId();
      }
      this.writeInfo(row++, agent, advance ? reward : 0, false, globalStep);
    }
    return this.agentInfos(row);
  }

  private sumOfLastActions(agent: number): number {
    let sum = 0;
    for (let j = agent * this.actionWidth, stop = j + this.actionWidth; j < stop; j++) sum += this.lastActions[j];
    return sum;
  }

  /**
   * One agent info: its vector observation is [step in episode, agent index, its last actions...,
   * 0...]; the behavior's discrete agents forbid the last choice of the first branch, so that
   * masks can be seen on the trainer side.
   */
  private writeInfo(row: number, agent: number, reward: number, done: boolean, globalStep: number): void {
    const o = this.options;
    const out = this.out;
    out.id[row] = this.ids[agent];
    out.reward[row] = reward;
    out.done[row] = done ? 1 : 0;
    out.maxStepReached[row] = done && o.interrupt ? 1 : 0;
    const v = row * o.obsSize;
    out.vector.fill(0, v, v + o.obsSize);
    out.vector[v] = o.nanAtStep !== undefined && globalStep === o.nanAtStep ? NaN : this.stepInEpisode[agent];
    if (o.obsSize > 1) out.vector[v + 1] = agent;
    for (let j = 0; j < this.actionWidth && 2 + j < o.obsSize; j++) {
      out.vector[v + 2 + j] = this.lastActions[agent * this.actionWidth + j];
    }
    if (this.maskSize > 0) {
      const m = row * this.maskSize;
      out.actionMask.fill(0, m, m + this.maskSize);
      out.actionMask[m + o.discrete[0] - 1] = 1;
    }
    if (o.visual !== undefined) {
      out.images.push(pngImage(o.visual, agent, this.stepInEpisode[agent]));
    }
  }

  private agentInfos(count: number): AgentInfosToSend {
    const o = this.options;
    const out = this.out;
    const observations: ObservationToSend[] = [
      { shape: [o.obsSize], name: 'VectorSensor', floats: out.vector.subarray(0, count * o.obsSize) },
    ];
    if (o.visual !== undefined) {
      observations.push({
        shape: o.visual,
        dimensionProperties: CHANNEL_FIRST_IMAGE_DIMENSIONS,
        name: 'CameraSensor',
        pngImages: out.images,
      });
    }
    return {
      count,
      id: out.id,
      reward: out.reward,
      done: out.done,
      maxStepReached: out.maxStepReached,
      actionMaskSize: this.maskSize,
      actionMask: out.actionMask,
      observations,
    };
  }
}

/**
 * A C x H x W image (C of 1 or 3) whose pixels tell the agent and step, PNG-compressed; it is
 * described channel-first, as com.unity.ml-agents 3 sends a camera sensor.
 */
function pngImage(shape: [number, number, number], agentIndex: number, step: number): Uint8Array {
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
  return PNG.sync.write(png, { colorType: channels === 1 ? 0 : 2, inputColorType: 6 });
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
    capabilities: allCapabilities(),
  });
  log(`handshake done: trainer seed ${init.seed ?? 0}, communication version ${init.communication_version ?? ''}`);

  const actionSizes = new Map<string, ActionSizes>();
  const noteActionSizes = () => behaviors.forEach((b) => actionSizes.set(b.name, b.actionSizes));
  noteActionSizes();
  const firstMessage: UnityMessageProto = { header: { status: 200 }, unity_input: { rl_input: firstInput ?? {} } };
  let input: StepInputMessage | null = firstInput === null ? null : stepInputFromProto(firstMessage, actionSizes);
  let globalStep = 0;
  while (input !== null) {
    if (input.sideChannel.length > 0) {
      sideChannels.processSideChannelMessage(input.sideChannel);
      const echo = floats.getProperty('echo');
      if (echo !== undefined && floats.getProperty('echo_reply') === undefined) {
        floats.setProperty('echo_reply', echo + 1);
      }
    }
    const command = input.command;
    if (command === CommandProto.QUIT) break;
    const reset = command === CommandProto.RESET;
    if (reset) {
      behaviors.forEach((b) => b.reset());
    } else {
      globalStep += 1;
      for (const behavior of behaviors) behavior.applyActions(input.actions.get(behavior.name));
    }
    if (options.secondBehaviorAt !== undefined && globalStep === options.secondBehaviorAt && behaviors.length === 1) {
      behaviors.push(new ScriptedBehavior(`${options.behavior}Second`, options, nextId));
      noteActionSizes();
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
    const sideChannel = sideChannels.generateSideChannelMessages();
    const announcements: BrainParametersProto[] = [];
    const agentInfos: Array<[string, AgentInfosToSend]> = [];
    for (const behavior of behaviors) {
      agentInfos.push([behavior.name, behavior.step(globalStep, !reset)]);
      const brain = behavior.takeAnnouncement();
      if (brain !== undefined) announcements.push(brain);
    }
    const message = encodeStepOutputMessage({
      behaviors: agentInfos,
      sideChannel,
      initializationOutput:
        announcements.length > 0 ? UnityRLInitializationOutput.encode({ brain_parameters: announcements }) : undefined,
    });
    input = await client.exchangeStep(message, actionSizes);
  }
  await client.close();
  log(`scripted env done after ${globalStep} steps`);
  return 0;
}

if (require.main === module && asksForHelp(process.argv.slice(2))) {
  process.stdout.write(playerUsage('Scripted', 'scripted, deterministic agents for protocol tests, their specs from the command line', SCRIPTED_OPTIONS));
} else if (require.main === module) {
  runScriptedEnv(parseScriptedEnvArgs(process.argv.slice(2))).then(
    (code) => process.exit(code),
    (error: Error) => {
      process.stderr.write(`scripted env failed: ${error.message}\n`);
      process.exit(1);
    },
  );
}
