/**
 * `npm run bench:comm`: what one step of the protocol costs, trainer side, over loopback gRPC.
 *
 * For 1, 100 and 1000 agents (8-float vector observation, 2 continuous actions, episodes long
 * enough never to end), the built protocol test environment (dist/sims/scripted-env.js) plays
 * Unity's role in its own process, and this process drives it through UnityEnvironment exactly as
 * a trainer does: setActions + step, over and over. We report the wall-clock round trip of a step
 * and the CPU this (trainer) process spent per step, which is the part the trainer's code
 * controls: on a 2-core machine the environment's own CPU time competes for the same cores.
 *
 * Options: --agents 1,100,1000   --warmup 50   --min-steps 200   --min-seconds 1
 */
import * as fs from 'fs';
import * as os from 'os';
import { readProcessStats } from '../src/communicator/launcher';
import { Logger } from '../src/common/logger';
import { UnityEnvironment } from '../src/env/unity-environment';
import { SCRIPTED_ENV, freePort } from '../test/helpers/paths';

const OBS_SIZE = 8;
const CONTINUOUS = 2;
const EPISODE_LENGTH = 1_000_000;
/** The goal: the protocol costs under this many microseconds per agent-step at 1000 agents. */
const TARGET_US_PER_AGENT_STEP = 2;
const TARGET_AGENTS = 1000;

interface BenchOptions {
  agents: number[];
  warmup: number;
  minSteps: number;
  minSeconds: number;
}

interface Result {
  agents: number;
  steps: number;
  medianMs: number;
  p90Ms: number;
  agentStepsPerSecond: number;
  wallUsPerAgentStep: number;
  trainerCpuMsPerStep: number;
  trainerCpuUsPerAgentStep: number;
  /** null where /proc is not there to read the environment process's CPU time. */
  envCpuUsPerAgentStep: number | null;
}

function parseOptions(argv: readonly string[]): BenchOptions {
  const options: BenchOptions = { agents: [1, 100, 1000], warmup: 50, minSteps: 200, minSeconds: 1 };
  for (let i = 0; i < argv.length; i++) {
    const value = argv[i + 1];
    const number = (flag: string): number => {
      const n = Number(value);
      if (value === undefined || !Number.isFinite(n) || n < 0) {
        throw new Error(`${flag} needs a non-negative number, got ${value ?? 'nothing'}`);
      }
      i++;
      return n;
    };
    switch (argv[i]) {
      case '--agents':
        if (value === undefined) throw new Error('--agents needs a list such as 1,100,1000');
        options.agents = value.split(',').filter(Boolean).map((v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 1) throw new Error(`--agents: ${v} is not a positive integer`);
          return n;
        });
        i++;
        break;
      case '--warmup': options.warmup = Math.floor(number('--warmup')); break;
      case '--min-steps': options.minSteps = Math.max(1, Math.floor(number('--min-steps'))); break;
      case '--min-seconds': options.minSeconds = number('--min-seconds'); break;
      default:
        throw new Error(`Unknown option ${argv[i]} (known: --agents, --warmup, --min-steps, --min-seconds)`);
    }
  }
  return options;
}

const quietLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warning: (m) => process.stderr.write(`[WARNING] ${m}\n`),
  error: (m) => process.stderr.write(`[ERROR] ${m}\n`),
};

/** Linux: the user + system CPU seconds of every direct child of this process (the environment). */
function childrenCpuSeconds(): number | null {
  const processes = readProcessStats();
  if (processes === null) return null;
  let total = 0;
  for (const p of processes) {
    if (p.ppid === process.pid) total += p.utimeSeconds + p.stimeSeconds;
  }
  return total;
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

async function benchAgents(agents: number, options: BenchOptions): Promise<Result> {
  const port = await freePort();
  const env = await UnityEnvironment.create({
    fileName: SCRIPTED_ENV,
    basePort: port,
    timeoutWait: 60,
    additionalArgs: [
      '--agents', String(agents),
      '--obs-size', String(OBS_SIZE),
      '--continuous', String(CONTINUOUS),
      '--episode-length', String(EPISODE_LENGTH),
    ],
    logger: quietLogger,
  });
  try {
    await env.reset();
    const names = [...env.behaviorSpecs.keys()];
    if (names.length !== 1) {
      throw new Error(`expected one behavior from the scripted environment, got [${names.join(', ')}]`);
    }
    const name = names[0];
    const continuous = new Float32Array(agents * CONTINUOUS);
    let stepIndex = 0;
    const oneStep = async (): Promise<void> => {
      const [decision] = env.getSteps(name);
      if (decision.length !== agents) {
        throw new Error(`step ${stepIndex}: ${decision.length} agents asked for a decision, expected ${agents}`);
      }
      continuous.fill(((stepIndex++ % 20) - 10) / 10);
      env.setActions(name, { continuous });
      await env.step();
    };

    for (let i = 0; i < options.warmup; i++) await oneStep();

    const times: number[] = [];
    const minNs = BigInt(Math.round(options.minSeconds * 1e9));
    const childCpuStart = childrenCpuSeconds();
    const cpuStart = process.cpuUsage();
    const start = process.hrtime.bigint();
    let now = start;
    while (times.length < options.minSteps || now - start < minNs) {
      const t0 = process.hrtime.bigint();
      await oneStep();
      now = process.hrtime.bigint();
      times.push(Number(now - t0) / 1e6);
    }
    const cpu = process.cpuUsage(cpuStart);
    const childCpuEnd = childrenCpuSeconds();

    const steps = times.length;
    const sorted = [...times].sort((a, b) => a - b);
    const medianMs = quantile(sorted, 0.5);
    const trainerCpuMsPerStep = (cpu.user + cpu.system) / 1000 / steps;
    const envCpuUsPerAgentStep =
      childCpuStart !== null && childCpuEnd !== null ? ((childCpuEnd - childCpuStart) * 1e6) / steps / agents : null;
    return {
      agents,
      steps,
      medianMs,
      p90Ms: quantile(sorted, 0.9),
      agentStepsPerSecond: agents / (medianMs / 1000),
      wallUsPerAgentStep: (medianMs * 1000) / agents,
      trainerCpuMsPerStep,
      trainerCpuUsPerAgentStep: (trainerCpuMsPerStep * 1000) / agents,
      envCpuUsPerAgentStep,
    };
  } finally {
    await env.close();
  }
}

function fixed(n: number, digits: number): string {
  return n.toFixed(digits);
}

function targetCell(r: Result): string {
  if (r.agents !== TARGET_AGENTS) return '';
  const verdict = (v: number) => (v < TARGET_US_PER_AGENT_STEP ? 'met' : 'NOT met');
  return (
    `< ${TARGET_US_PER_AGENT_STEP} us: cpu ${verdict(r.trainerCpuUsPerAgentStep)}, ` +
    `wall ${verdict(r.wallUsPerAgentStep)}`
  );
}

function printTable(results: readonly Result[]): void {
  const header = [
    'agents',
    'steps',
    'median ms',
    'p90 ms',
    'agent-steps/s',
    'wall us/agent-step',
    'trainer cpu ms/step',
    'trainer cpu us/agent-step',
    'env cpu us/agent-step',
    'target (1000 agents)',
  ];
  const rows = results.map((r) => [
    String(r.agents),
    String(r.steps),
    fixed(r.medianMs, 3),
    fixed(r.p90Ms, 3),
    Math.round(r.agentStepsPerSecond).toLocaleString('en-US'),
    fixed(r.wallUsPerAgentStep, 2),
    fixed(r.trainerCpuMsPerStep, 3),
    fixed(r.trainerCpuUsPerAgentStep, 2),
    r.envCpuUsPerAgentStep === null ? 'n/a' : fixed(r.envCpuUsPerAgentStep, 2),
    targetCell(r),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  // Numbers right-aligned, the last (text) column left-aligned.
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (c === cells.length - 1 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join('  ')
      .trimEnd();
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!fs.existsSync(SCRIPTED_ENV)) {
    throw new Error(`${SCRIPTED_ENV} is missing: run \`npm run build\` first (npm run bench:comm does).`);
  }
  console.log(
    `Protocol round trip over loopback gRPC: ${OBS_SIZE}-float vector observation, ${CONTINUOUS} continuous ` +
      `actions, scripted environment in its own process.`,
  );
  console.log(
    `Node ${process.version}, ${os.cpus().length} CPU core(s) (${os.cpus()[0]?.model.trim() ?? 'unknown'}); ` +
      `warm-up ${options.warmup} steps, then at least ${options.minSteps} steps and ${options.minSeconds} s per row.`,
  );
  console.log('');
  const results: Result[] = [];
  for (const agents of options.agents) {
    results.push(await benchAgents(agents, options));
  }
  printTable(results);
  const target = results.find((r) => r.agents === TARGET_AGENTS);
  if (target !== undefined) {
    console.log('');
    console.log(
      `Target: the protocol costs under ${TARGET_US_PER_AGENT_STEP} us per agent-step at ${TARGET_AGENTS} agents. ` +
        `Trainer CPU: ${fixed(target.trainerCpuUsPerAgentStep, 2)} us (` +
        `${target.trainerCpuUsPerAgentStep < TARGET_US_PER_AGENT_STEP ? 'met' : 'NOT met'}); wall clock: ` +
        `${fixed(target.wallUsPerAgentStep, 2)} us (` +
        `${target.wallUsPerAgentStep < TARGET_US_PER_AGENT_STEP ? 'met' : 'NOT met'}).`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    process.stderr.write(`bench:comm failed: ${error.message}\n`);
    process.exit(1);
  },
);
