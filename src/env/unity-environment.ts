/**
 * Drives one Unity environment (a build, the Editor in Play mode, or any program speaking the
 * protocol) step by step, as upstream's mlagents_envs.UnityEnvironment does:
 *
 *   const env = await UnityEnvironment.create({ fileName: 'Builds/3DBall.x86_64' });
 *   await env.reset();
 *   for (const [name, spec] of env.behaviorSpecs) {
 *     const [decision] = env.getSteps(name);
 *     env.setActions(name, spec.actionSpec.randomAction(decision.length));
 *   }
 *   await env.step();
 *   await env.close();
 */
import * as path from 'path';
import { LaunchedEnvironment, launchEnvironment, waitAtMost } from '../communicator/launcher';
import { Logger, consoleLogger } from '../common/logger';
import {
  COMMUNICATION_API_VERSION,
  CommandProto,
  PACKAGE_VERSION,
  UnityOutputProto,
  UnityRLCapabilitiesProto,
  allCapabilities,
} from '../communicator/messages';
import { RpcCommunicator, StepOutput, UnityCommunicatorStoppedError } from '../communicator/rpc-communicator';
import { SideChannel } from '../communicator/side-channels/side-channel';
import { SideChannelManager } from '../communicator/side-channels/side-channel-manager';
import {
  checkCommunicationCompatibility,
  incompatibleVersionMessage,
} from '../communicator/version';
import { ActionInput, ActionTuple, BehaviorSpec, UnityActionError, assertSameBehaviorSpec } from './behavior-spec';
import { BehaviorActionsToSend, encodeStepInputMessage } from '../communicator/wire/step-input';
import { AgentInfoLayout, StepOutputMessage } from '../communicator/wire/step-output';
import { DECODE_BUDGET_FACTOR } from '../communicator/wire/decode-cost';
import {
  DecisionSteps,
  TerminalSteps,
  agentInfoLayout,
  behaviorSpecFromProto,
  stepsFromColumns,
  stepsFromProto,
} from './steps';

/** Port of the Unity Editor, used when no executable is launched. */
export const DEFAULT_EDITOR_PORT = 5004;
/** First port of launched executables; worker i uses BASE_ENVIRONMENT_PORT + i. */
export const BASE_ENVIRONMENT_PORT = 5005;

export class UnityEnvironmentError extends Error {
  override name = 'UnityEnvironmentError';
}

export interface UnityEnvironmentOptions {
  /** Path of a build to launch; none to wait for the Editor (press Play). */
  fileName?: string | null;
  /** Offset from basePort, one per concurrent environment. */
  workerId?: number;
  /** Defaults to 5005 with an executable, 5004 without. */
  basePort?: number;
  seed?: number;
  noGraphics?: boolean;
  /** Seconds to wait for the environment's first and every later message (default 60). */
  timeoutWait?: number;
  /** Extra command-line arguments for the executable (`--env-args`). */
  additionalArgs?: string[];
  sideChannels?: SideChannel[];
  /** Folder of the executable's log file, Player-<workerId>.log. */
  logFolder?: string;
  /** Training areas the environment should instantiate (upstream's num_areas). */
  numAreas?: number;
  /** Address the server binds; 'localhost' by default. */
  bindAddress?: string;
  /**
   * Ends the wait for the environment to connect when aborted (Ctrl-C): create() rejects with an
   * InterruptedError at once, after closing the server and ending the launched process.
   */
  signal?: AbortSignal;
  /** The largest message accepted from the environment, in MiB (--max-message-size; 32 by default). */
  maxMessageMiB?: number;
  logger?: Logger;
}

/** create() gave up waiting because its signal was aborted. */
export class InterruptedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InterruptedError';
  }
}

export class UnityEnvironment {
  /** The environment's name as it introduced itself. */
  readonly name: string;
  readonly port: number;
  readonly workerId: number;
  /** What the environment announced it supports. */
  readonly capabilities: Readonly<UnityRLCapabilitiesProto>;
  readonly unityPackageVersion: string;
  readonly unityCommunicationVersion: string;

  private readonly specs = new Map<string, BehaviorSpec>();
  /** What the fast step decoder expects of each known behavior's agents. */
  private readonly layouts = new Map<string, AgentInfoLayout>();
  private readonly state = new Map<string, [DecisionSteps, TerminalSteps]>();
  private readonly actions = new Map<string, ActionTuple>();
  private isFirstMessage = true;
  private closed = false;
  /** The most the observations of one message may take once decoded. */
  private readonly maxObservationBytes: number;

  private constructor(
    private readonly communicator: RpcCommunicator,
    private readonly process: LaunchedEnvironment | undefined,
    private readonly sideChannelManager: SideChannelManager,
    private readonly logger: Logger,
    init: UnityOutputProto,
    workerId: number,
  ) {
    const params = init.rl_initialization_output ?? {};
    this.name = params.name ?? '';
    this.port = communicator.port;
    this.workerId = workerId;
    this.capabilities = params.capabilities ?? {};
    this.unityPackageVersion = params.package_version ?? '';
    this.unityCommunicationVersion = params.communication_version ?? '';
    this.maxObservationBytes = DECODE_BUDGET_FACTOR * communicator.maxMessageBytes;
    this.updateBehaviorSpecs(init);
  }

  /** Starts listening, launches the executable if any, and completes the handshake. */
  static async create(options: UnityEnvironmentOptions = {}): Promise<UnityEnvironment> {
    const logger = options.logger ?? consoleLogger();
    const workerId = options.workerId ?? 0;
    const fileName = options.fileName ?? null;
    if (fileName === null && workerId !== 0) {
      throw new UnityEnvironmentError(
        'Without an executable (--env), the worker id must be 0: only one Unity Editor can connect, on port 5004.',
      );
    }
    const basePort = options.basePort ?? (fileName !== null ? BASE_ENVIRONMENT_PORT : DEFAULT_EDITOR_PORT);
    const port = basePort + workerId;
    const logFile = options.logFolder ? path.join(options.logFolder, `Player-${workerId}.log`) : undefined;
    const timeoutHint =
      fileName !== null
        ? `Check that ${fileName} starts without user interaction and connects to port ${port}` +
          `${logFile ? `; its log is ${logFile}` : ''}. On a machine without a display, pass --no-graphics.`
        : `Press the Play button in the Unity Editor: it connects to port ${port}. Check that the ` +
          `Agents' Behavior Parameters > Behavior Type is Default.`;
    const communicator = new RpcCommunicator({
      port,
      bindAddress: options.bindAddress,
      timeoutWaitSeconds: options.timeoutWait ?? 60,
      timeoutHint,
      maxMessageMiB: options.maxMessageMiB,
      logger,
    });
    const sideChannelManager = new SideChannelManager(options.sideChannels ?? [], {
      logger: (message) => logger.warning(message),
    });
    await communicator.open();

    let launched: LaunchedEnvironment | undefined;
    let connected = false;
    const interrupt = () =>
      communicator.abort(new InterruptedError(`Interrupted while waiting for the environment to connect on port ${port}.`));
    options.signal?.addEventListener('abort', interrupt);
    if (options.signal?.aborted) interrupt();
    try {
      if (fileName !== null) {
        launched = launchEnvironment({
          executable: fileName,
          port,
          noGraphics: options.noGraphics ?? false,
          logFile,
          extraArgs: options.additionalArgs,
        });
        const child = launched;
        void child.exited.then(() =>
          communicator.abort(new UnityEnvironmentError(child.describeExit(connected ? 'during-run' : 'before-connect'))),
        );
      } else {
        logger.info(`Listening on port ${port}. Start training by pressing the Play button in the Unity Editor.`);
      }
      const init = await communicator.initialize({
        rl_initialization_input: {
          seed: options.seed ?? 0,
          communication_version: COMMUNICATION_API_VERSION,
          package_version: PACKAGE_VERSION,
          capabilities: allCapabilities(),
          num_areas: options.numAreas ?? 1,
        },
      });
      connected = true;
      const params = init.rl_initialization_output ?? {};
      const unityVersion = params.communication_version ?? '';
      const compatibility = checkCommunicationCompatibility(unityVersion, COMMUNICATION_API_VERSION);
      if (compatibility === 'incompatible') {
        throw new UnityEnvironmentError(incompatibleVersionMessage(unityVersion, COMMUNICATION_API_VERSION));
      }
      if (compatibility === 'minor-differs') {
        logger.warning(
          `The communication API versions of Unity and this trainer differ at the minor level: trainer ` +
            `API ${COMMUNICATION_API_VERSION}, Unity API ${unityVersion}. Some features may not work ` +
            `unless the side with the lower version is upgraded.`,
        );
      } else {
        logger.info(
          `Connected to Unity environment with package version ${params.package_version ?? ''} and ` +
            `communication version ${unityVersion}`,
        );
      }
      if (!params.capabilities?.baseRLCapabilities) {
        logger.warning(
          `The Unity process does not announce the base reinforcement-learning capabilities. Upgrade ` +
            `its com.unity.ml-agents package (Unity package version ${params.package_version ?? '?'}, ` +
            `trainer communication API ${COMMUNICATION_API_VERSION}).`,
        );
      }
      return new UnityEnvironment(communicator, launched, sideChannelManager, logger, init, workerId);
    } catch (error) {
      await communicator.close();
      await launched?.close();
      throw error;
    } finally {
      options.signal?.removeEventListener('abort', interrupt);
    }
  }

  /** The launched player's log (its -logFile, ours or the user's); undefined for the Editor or when none was given. */
  get logFile(): string | undefined {
    return this.process?.logFile;
  }

  /** Behaviors seen so far; a behavior appears with the first step its agents are in. */
  get behaviorSpecs(): ReadonlyMap<string, BehaviorSpec> {
    return this.specs;
  }

  /** Asks the environment to reset and reads the first step. */
  async reset(): Promise<void> {
    this.assertOpen();
    const message = encodeStepInputMessage({
      command: CommandProto.RESET,
      sideChannel: this.sideChannelManager.generateSideChannelMessages(),
      actions: [],
    });
    this.afterExchange(await this.communicator.exchangeStep(message, this.layouts));
    this.isFirstMessage = false;
  }

  /** Sends the actions set since the last step (zeros for behaviors given none) and reads the next step. */
  async step(): Promise<void> {
    if (this.isFirstMessage) {
      return this.reset();
    }
    this.assertOpen();
    const actions: BehaviorActionsToSend[] = [];
    for (const [name, spec] of this.specs) {
      const count = this.state.get(name)?.[0].length ?? 0;
      if (count === 0) continue;
      const action = this.actions.get(name) ?? spec.actionSpec.emptyAction(count);
      actions.push({
        name,
        count,
        continuousSize: spec.actionSpec.continuousSize,
        discreteSize: spec.actionSpec.discreteSize,
        continuous: action.continuous,
        discrete: action.discrete,
      });
    }
    const message = encodeStepInputMessage({
      command: CommandProto.STEP,
      sideChannel: this.sideChannelManager.generateSideChannelMessages(),
      actions,
    });
    this.afterExchange(await this.communicator.exchangeStep(message, this.layouts));
  }

  /** The agents of a behavior that ask for a decision, and those whose episode ended, at this step. */
  getSteps(behaviorName: string): [DecisionSteps, TerminalSteps] {
    const spec = this.assertBehavior(behaviorName);
    return this.state.get(behaviorName) ?? [DecisionSteps.empty(spec), TerminalSteps.empty(spec)];
  }

  /** Actions for every agent of `getSteps(behaviorName)[0]`, in its order. */
  setActions(behaviorName: string, action: ActionInput): void {
    const spec = this.assertBehavior(behaviorName);
    const decision = this.state.get(behaviorName)?.[0];
    if (decision === undefined) return;
    this.actions.set(behaviorName, spec.actionSpec.validateAction(action, decision.length, behaviorName));
  }

  /** The action of one agent that asks for a decision; the others keep theirs (zeros by default). */
  setActionForAgent(behaviorName: string, agentId: number, action: ActionInput): void {
    const spec = this.assertBehavior(behaviorName);
    const decision = this.state.get(behaviorName)?.[0];
    if (decision === undefined) return;
    const one = spec.actionSpec.validateAction(action, 1, behaviorName);
    const row = decision.indexOf(agentId);
    if (row < 0) {
      throw new UnityActionError(
        `Agent ${agentId} of behavior ${behaviorName} does not ask for a decision at this step; ` +
          `the agents that do are [${Array.from(decision.agentId).join(', ')}].`,
      );
    }
    let all = this.actions.get(behaviorName);
    if (all === undefined) {
      all = spec.actionSpec.emptyAction(decision.length);
      this.actions.set(behaviorName, all);
    }
    all.continuous.set(one.continuous, row * spec.actionSpec.continuousSize);
    all.discrete.set(one.discrete, row * spec.actionSpec.discreteSize);
  }

  /** Tells the environment to quit, stops the server and ends the executable's process group. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.communicator.close();
    if (this.process !== undefined) {
      // Give the player a moment to quit by itself after status 400, then end its group.
      await waitAtMost(this.process.exited, 2000);
      await this.process.close();
    }
  }

  private afterExchange(output: StepOutput | null): void {
    if (output === null) {
      // close() must still run: it stops the server and ends the executable.
      throw new UnityCommunicatorStoppedError(
        `The environment on port ${this.port} ended the session (it quit or left Play mode).`,
      );
    }
    if (output.fast !== undefined) {
      this.updateStateFromColumns(output.fast);
    } else {
      this.updateBehaviorSpecs(output.proto);
      this.updateState(output.proto);
    }
    this.actions.clear();
  }

  private updateBehaviorSpecs(output: UnityOutputProto): void {
    const brains = output.rl_initialization_output?.brain_parameters ?? [];
    for (const brain of brains) {
      const name = brain.brain_name ?? '';
      const agents = output.rl_output?.agentInfos?.[name]?.value ?? [];
      if (agents.length > 0) {
        const spec = behaviorSpecFromProto(brain, agents[0]);
        const known = this.specs.get(name);
        if (known !== undefined) {
          assertSameBehaviorSpec(name, known, spec);
          continue;
        }
        this.specs.set(name, spec);
        this.layouts.set(name, agentInfoLayout(spec));
        this.logger.info(`Connected new brain: ${name}`);
      }
    }
  }

  /** From the fast decoder: it read only behaviors with a known spec (the others take the slow path). */
  private updateStateFromColumns(output: StepOutputMessage): void {
    for (const [name, spec] of this.specs) {
      const columns = output.behaviors.get(name);
      this.state.set(
        name,
        columns !== undefined && columns.count > 0
          ? stepsFromColumns(columns, spec)
          : [DecisionSteps.empty(spec), TerminalSteps.empty(spec)],
      );
    }
    if (output.sideChannel.length > 0) {
      this.sideChannelManager.processSideChannelMessage(output.sideChannel);
    }
  }

  private updateState(output: UnityOutputProto): void {
    const rl = output.rl_output ?? {};
    for (const [name, spec] of this.specs) {
      const infos = rl.agentInfos?.[name]?.value;
      this.state.set(
        name,
        infos !== undefined && infos.length > 0
          ? stepsFromProto(infos, spec, name, this.unityPackageVersion, this.maxObservationBytes)
          : [DecisionSteps.empty(spec), TerminalSteps.empty(spec)],
      );
    }
    for (const name of Object.keys(rl.agentInfos ?? {})) {
      if (!this.specs.has(name)) {
        this.logger.warning(
          `The environment sent agents of behavior ${name} without its brain parameters; they are ignored.`,
        );
      }
    }
    if (rl.side_channel !== undefined && rl.side_channel.length > 0) {
      this.sideChannelManager.processSideChannelMessage(rl.side_channel);
    }
  }

  private assertBehavior(behaviorName: string): BehaviorSpec {
    const spec = this.specs.get(behaviorName);
    if (spec === undefined) {
      const known = [...this.specs.keys()];
      throw new UnityActionError(
        `The behavior ${behaviorName} does not exist in this environment; ` +
          (known.length > 0 ? `its behaviors are: ${known.join(', ')}.` : 'no behavior has appeared yet.'),
      );
    }
    return spec;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new UnityEnvironmentError('This environment is closed; create a new one.');
    }
  }
}
