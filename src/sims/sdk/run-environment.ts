/**
 * Runs a built-in environment as a Unity build runs: it takes Unity's command-line arguments
 * (`--mlagents-port N`, `-logFile PATH`, `-nographics`, `-batchmode`; other Unity flags are
 * ignored), connects to the trainer and plays until the trainer ends the session. With
 * `--heuristic` it plays alone under its agents' heuristics, and `--record PATH` writes what
 * the first agent does to a .demo file, as Unity's DemonstrationRecorder does.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { DemoWriter } from '../../communicator/demo-file';
import {
  AgentInfoProto,
  CommandProto,
  ObservationProto,
  allCapabilities,
} from '../../communicator/messages';
import { SideChannelManager } from '../../communicator/side-channels/side-channel-manager';
import { UnityClient } from '../unity-client';
import { Academy, InfoBatch } from './academy';
import { Agent, dimensionProperties, observationLength, visualShape } from './agent';
import { HeuristicBrain, RemoteBrain } from './brains';
import { EngineSettings, float32Text } from './engine-channels';
import { compressVisualObservation } from './png';

/** The options an environment takes beyond the common ones, as node's util.parseArgs describes them. */
export type SimOptionSpecs = Record<string, { type: 'string' | 'boolean'; default?: string | boolean; description: string }>;

export type SimOptionValues = Record<string, string | boolean | undefined>;

export interface SimDefinition {
  readonly name: string;
  readonly description: string;
  readonly options: SimOptionSpecs;
  /** Builds the world: adds its agents (for `numAreas` training areas) to the academy. */
  create(academy: Academy, options: SimOptionValues, numAreas: number): void;
}

const COMMON_OPTIONS: SimOptionSpecs = {
  'mlagents-port': { type: 'string', description: 'port of the trainer (Unity\'s --mlagents-port)' },
  heuristic: { type: 'boolean', description: 'play alone under the agents\' heuristics, without a trainer' },
  record: { type: 'string', description: 'with --heuristic: write the first agent\'s steps to this .demo file' },
  'record-steps': { type: 'string', default: '0', description: 'with --record: stop once this many steps are recorded (Unity\'s Num Steps To Record; 0: play all --steps)' },
  steps: { type: 'string', default: '1000', description: 'with --heuristic: academy steps to play' },
  seed: { type: 'string', default: '0', description: 'with --heuristic: seed of the world (a trainer sends its own)' },
  'num-areas': { type: 'string', default: '1', description: 'with --heuristic: training areas (a trainer sends its own)' },
  'time-scale': { type: 'string', description: 'simulated seconds per real second (a trainer sends its own); none: as fast as possible' },
  'step-delay-ms': { type: 'string', default: '0', description: 'milliseconds to sleep after every step, as a slow build would' },
  'step-delay-port': { type: 'string', description: 'with --step-delay-ms: only the environment on this port sleeps (one slow worker among several)' },
};

/** Unity player flags that take a value; they are read or skipped before our own options. */
const UNITY_FLAGS_WITH_VALUE = new Set(['-logfile', '-screen-width', '-screen-height', '-screen-quality', '-screen-fullscreen']);

export interface ParsedSimArgs {
  logFile?: string;
  values: SimOptionValues;
  ignored: string[];
}

export function parseSimArgs(definition: SimDefinition, argv: readonly string[]): ParsedSimArgs {
  return parsePlayerArgs({ ...COMMON_OPTIONS, ...definition.options }, argv);
}

/** Reads a player's command line: Unity's single-dash flags (-logFile kept, others ignored), then `options`. */
export function parsePlayerArgs(options: SimOptionSpecs, argv: readonly string[]): ParsedSimArgs {
  let logFile: string | undefined;
  const ours: string[] = [];
  const ignored: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (/^-[^-]/.test(arg)) {
      // A single-dash Unity player flag.
      if (arg.toLowerCase() === '-logfile') logFile = argv[i + 1];
      else ignored.push(arg);
      if (UNITY_FLAGS_WITH_VALUE.has(arg.toLowerCase())) i += 1;
    } else {
      ours.push(arg);
    }
  }
  const parsed = parseArgs({
    args: ours,
    options: Object.fromEntries(Object.entries(options).map(([name, o]) => [name, { type: o.type, default: o.default }])),
    strict: false,
    allowPositionals: true,
  });
  for (const name of Object.keys(parsed.values)) {
    if (!(name in options)) ignored.push(`--${name}`);
  }
  return { logFile, values: parsed.values as SimOptionValues, ignored };
}

export function intOption(values: SimOptionValues, name: string): number {
  return numericOption(values, name, Number.isInteger, 'an integer');
}

export function numberOption(values: SimOptionValues, name: string): number {
  return numericOption(values, name, Number.isFinite, 'a number');
}

function numericOption(values: SimOptionValues, name: string, valid: (n: number) => boolean, what: string): number {
  const raw = values[name];
  const n = Number(raw);
  if (typeof raw !== 'string' || !valid(n)) {
    throw new Error(`--${name} needs ${what}, got ${JSON.stringify(raw)}.`);
  }
  return n;
}

/** Keeps the simulation at `timeScale` simulated seconds per real second, sleeping in slices. */
class Pacer {
  private simulated = 0;
  private readonly started = process.hrtime.bigint();

  async pace(deltaTime: number, timeScale: number | undefined): Promise<void> {
    if (timeScale === undefined || !(timeScale > 0)) return;
    this.simulated += deltaTime / timeScale;
    const ahead = this.simulated - Number(process.hrtime.bigint() - this.started) / 1e9;
    // Sleeping costs about a millisecond whatever the request: sleep only once well ahead.
    if (ahead > 0.01) await new Promise((resolve) => setTimeout(resolve, ahead * 1000));
  }
}

/** Whether a player's command line asks for help (`--help`, or `-h`, which Unity's own flags never use). */
export function asksForHelp(argv: readonly string[]): boolean {
  return argv.includes('--help') || argv.includes('-h');
}

/** What `--help` prints: what the player is, how a trainer launches it, and every option with its default. */
export function playerUsage(name: string, description: string, options: SimOptionSpecs): string {
  const lines = Object.entries(options).map(([option, o]) => {
    const flag = o.type === 'string' ? `--${option} VALUE` : `--${option}`;
    const fallback = o.default === undefined ? '' : ` (default ${String(o.default)})`;
    return `  ${flag.padEnd(28)}${o.description}${fallback}`;
  });
  return [
    `${name}: ${description}`,
    '',
    'Launched like a Unity build: it connects to the trainer listening on --mlagents-port (mlagents-learn',
    '--env=builtin:NAME launches it so). Unity player flags (-logFile PATH, -batchmode, -nographics, ...)',
    'are accepted as a build accepts them. --help or -h: this text; nothing connects.',
    '',
    'Options:',
    ...lines,
    '',
  ].join('\n');
}

/** The entry point of a built-in environment's executable. Resolves to the exit code. */
export async function runEnvironmentMain(definition: SimDefinition, argv: readonly string[]): Promise<number> {
  if (asksForHelp(argv)) {
    process.stdout.write(playerUsage(definition.name, definition.description, { ...COMMON_OPTIONS, ...definition.options }));
    return 0;
  }
  const args = parseSimArgs(definition, argv);
  const log = (line: string) => {
    const text = `[${definition.name}] ${line}\n`;
    if (args.logFile) fs.appendFileSync(args.logFile, text);
    else process.stdout.write(text);
  };
  if (args.logFile) fs.mkdirSync(path.dirname(path.resolve(args.logFile)), { recursive: true });
  if (args.ignored.length > 0) log(`ignoring flags: ${args.ignored.join(' ')}`);
  try {
    if (args.values.heuristic) {
      await playAlone(definition, args.values, log);
    } else {
      await playWithTrainer(definition, args.values, log);
    }
    return 0;
  } catch (error) {
    log(`failed: ${(error as Error).message}`);
    process.stderr.write(`${definition.name}: ${(error as Error).message}\n`);
    return 1;
  }
}

async function playWithTrainer(definition: SimDefinition, values: SimOptionValues, log: (line: string) => void) {
  const port = intOption({ ...values, 'mlagents-port': values['mlagents-port'] ?? '5004' }, 'mlagents-port');
  const academy = new Academy();
  academy.environmentParameters.onParameterSet = (key, value) => log(`environment parameter ${key} set to ${value}`);
  const sideChannels = new SideChannelManager([academy.engineConfiguration, academy.environmentParameters, academy.stats], {
    logger: log,
  });
  const client = new UnityClient({ port });
  log(`connecting to the trainer on port ${port}`);
  const { init, firstInput } = await client.initialize({
    name: definition.name,
    communication_version: '1.5.0',
    package_version: '3.0.0',
    capabilities: allCapabilities(),
  });
  academy.seed(init.seed ?? 0);
  definition.create(academy, values, Math.max(1, init.num_areas ?? 1));
  log(`connected: seed ${init.seed ?? 0}, ${academy.agents.length} agents`);
  const brain = new RemoteBrain(client, sideChannels);
  if (firstInput === null) {
    await client.close();
    return;
  }
  const first = brain.interpret(firstInput.command ?? CommandProto.STEP, firstInput.side_channel ?? new Uint8Array(0), new Map());
  if (first.kind === 'quit') {
    await client.close();
    return;
  }
  log(`engine configuration: ${describeEngineSettings(academy.engineConfiguration.settings)}`);
  academy.reset();
  const pacer = new Pacer();
  const delayedPort = values['step-delay-port'] === undefined ? port : intOption(values, 'step-delay-port');
  const stepDelay = delayedPort === port ? numberOption(values, 'step-delay-ms') : 0;
  if (stepDelay > 0) log(`sleeping ${stepDelay} ms after every step (--step-delay-ms)`);
  let outcome: 'stepped' | 'reset' | 'quit';
  while ((outcome = await academy.step(brain)) !== 'quit') {
    if (outcome === 'reset') log('reset by the trainer');
    await pacer.pace(academy.deltaTime, academy.engineConfiguration.settings.timeScale);
    if (stepDelay > 0) await new Promise((resolve) => setTimeout(resolve, stepDelay));
  }
  log(`the trainer ended the session after ${academy.totalStepCount} steps`);
  await client.close();
}

/** The engine settings the trainer sent, in the player log's words; those it did not send say so. */
function describeEngineSettings(settings: Partial<EngineSettings>): string {
  const or = (value: number | undefined) => (value === undefined ? 'unset' : float32Text(value));
  return [
    `time scale ${or(settings.timeScale)}`,
    `resolution ${or(settings.width)}x${or(settings.height)}`,
    `quality level ${or(settings.qualityLevel)}`,
    `target frame rate ${or(settings.targetFrameRate)}`,
    `capture frame rate ${or(settings.captureFrameRate)}`,
  ].join(', ');
}

async function playAlone(definition: SimDefinition, values: SimOptionValues, log: (line: string) => void) {
  const academy = new Academy();
  academy.seed(intOption(values, 'seed'));
  definition.create(academy, values, intOption(values, 'num-areas'));
  const steps = intOption(values, 'steps');
  const timeScale = values['time-scale'] === undefined ? undefined : numberOption(values, 'time-scale');
  const recordSteps = intOption(values, 'record-steps');
  const recorder = typeof values.record === 'string' ? new FirstAgentRecorder(values.record, academy, definition.name, recordSteps) : undefined;
  if (recorder) academy.addBatchListener((batches) => recorder.record(batches));
  academy.reset();
  const brain = new HeuristicBrain();
  const pacer = new Pacer();
  let played = 0;
  while (played < steps && !(recorder?.full ?? false)) {
    await academy.step(brain);
    await pacer.pace(academy.deltaTime, timeScale);
    played++;
  }
  recorder?.close();
  log(`played ${played} steps under the heuristics${recorder ? `, recorded ${recorder.recorded} steps in ${values.record}` : ''}`);
}

/** Records the first agent's reports, as a DemonstrationRecorder on that agent would. */
class FirstAgentRecorder {
  private writer: DemoWriter | undefined;
  private agent: Agent | undefined;

  constructor(
    private readonly file: string,
    private readonly academy: Academy,
    private readonly demonstrationName: string,
    /** The most records to write; 0: no limit. */
    private readonly limit: number,
  ) {}

  get recorded(): number {
    return this.writer?.numberSteps ?? 0;
  }

  /** Whether the limit is reached. */
  get full(): boolean {
    return this.limit > 0 && this.recorded >= this.limit;
  }

  record(batches: ReadonlyMap<string, InfoBatch>): void {
    if (this.agent === undefined) {
      this.agent = this.academy.agents[0];
      if (this.agent === undefined) return;
      const behavior = this.agent.behavior;
      fs.mkdirSync(path.dirname(path.resolve(this.file)), { recursive: true });
      this.writer = new DemoWriter(this.file, {
        demonstrationName: this.demonstrationName.slice(0, 16),
        brainParameters: {
          brain_name: behavior.behaviorName,
          is_training: false,
          action_spec: {
            num_continuous_actions: behavior.continuousActions,
            num_discrete_actions: behavior.discreteBranches.length,
            discrete_branch_sizes: [...behavior.discreteBranches],
          },
        },
      });
    }
    const batch = batches.get(this.agent.behavior.behaviorName);
    if (batch === undefined) return;
    for (let row = 0; row < batch.count && !this.full; row++) {
      if (batch.agents[row] !== this.agent) continue;
      const c = batch.group.continuousSize;
      const d = batch.group.discreteSize;
      this.writer!.record({
        agent_info: agentInfoProto(batch, row),
        action_info: {
          continuous_actions: Array.from(batch.storedContinuous.subarray(row * c, (row + 1) * c)),
          discrete_actions: Array.from(batch.storedDiscrete.subarray(row * d, (row + 1) * d)),
        },
      });
    }
  }

  close(): void {
    this.writer?.close();
  }
}

/** One row of a batch as the AgentInfoProto Unity would send (for demonstrations). */
function agentInfoProto(batch: InfoBatch, row: number): AgentInfoProto {
  const specs = batch.group.template.behavior.observations;
  const observations: ObservationProto[] = specs.map((spec, i) => {
    const size = observationLength(spec);
    const own = batch.observations[i].subarray(row * size, (row + 1) * size);
    const described = { name: spec.name ?? '', observation_type: spec.observationType ?? 0 };
    if (spec.kind === 'vector') {
      // The recorder describes the dimensions of variable-length observations only, as before for vectors.
      const dimensions = spec.variableLength ? { dimension_properties: [...dimensionProperties(spec)] } : {};
      return { ...described, ...dimensions, shape: [...spec.shape], float_data: { data: Array.from(own) } };
    }
    const image = { ...described, dimension_properties: [...dimensionProperties(spec)], shape: visualShape(spec) };
    if (!spec.compressed) return { ...image, float_data: { data: Array.from(own) } };
    const { data, channelMapping } = compressVisualObservation(spec, own);
    return { ...image, compression_type: 1, compressed_data: data, ...(channelMapping ? { compressed_channel_mapping: channelMapping } : {}) };
  });
  const maskSize = batch.actionMaskSize;
  return {
    reward: batch.reward[row],
    done: batch.done[row] === 1,
    max_step_reached: batch.maxStepReached[row] === 1,
    id: batch.id[row],
    action_mask: maskSize > 0 ? Array.from(batch.actionMask.subarray(row * maskSize, (row + 1) * maskSize), (m) => m === 1) : [],
    observations,
    group_id: batch.groupId[row],
    group_reward: batch.groupReward[row],
  };
}
