/**
 * UnityEnvironment against the scripted environment: a real child process that connects over
 * real gRPC on loopback exactly as a Unity build does.
 */
import * as fs from 'fs';
import * as path from 'path';
import { memoryLogger } from '../../src/common/logger';
import { RpcCommunicator, UnityCommunicatorStoppedError, UnityTimeOutError } from '../../src/communicator/rpc-communicator';
import { FloatPropertiesChannel } from '../../src/communicator/side-channels/float-properties-channel';
import { DimensionProperty, UnityActionError } from '../../src/env/behavior-spec';
import { UnityObservationError } from '../../src/env/steps';
import { UnityEnvironment, UnityEnvironmentError, UnityEnvironmentOptions } from '../../src/env/unity-environment';
import { closeOpenedEnvironments, openBuiltEnvironment } from '../helpers/environments';
import { SCRIPTED_ENV, freePort, tempDir } from '../helpers/paths';

async function scripted(args: string[], extra: Partial<UnityEnvironmentOptions> = {}) {
  const logger = memoryLogger();
  const env = await openBuiltEnvironment(SCRIPTED_ENV, args, { logger, ...extra });
  return { env, logger };
}

afterEach(closeOpenedEnvironments);

describe('a session with the scripted environment', () => {
  it('completes the handshake, shows the behavior spec, steps with actions and closes', async () => {
    const logFolder = tempDir('env-logs');
    const { env, logger } = await scripted(['--agents', '3', '--episode-length', '3'], { logFolder, seed: 42 });
    expect(env.name).toBe('ScriptedEnv');
    expect(env.unityCommunicationVersion).toBe('1.5.0');
    expect(env.capabilities.baseRLCapabilities).toBe(true);
    // Unity's first message holds no brain parameters: behaviors appear with their first step.
    expect(env.behaviorSpecs.size).toBe(0);

    await env.reset();
    const spec = env.behaviorSpecs.get('Scripted')!;
    expect(spec.observationSpecs).toEqual([
      { shape: [8], dimensionProperty: [DimensionProperty.UNSPECIFIED], observationType: 0, name: 'VectorSensor' },
    ]);
    expect(spec.actionSpec.continuousSize).toBe(2);
    expect(spec.actionSpec.discreteBranches).toEqual([]);

    const [first] = env.getSteps('Scripted');
    expect(Array.from(first.agentId)).toEqual([1, 2, 3]);
    expect(first.obs[0].length).toBe(3 * 8);
    expect(Array.from(first.observation(0, 2).subarray(0, 2))).toEqual([0, 2]); // step 0, agent index 2

    env.setActions('Scripted', { continuous: [[0.5, 0.25], [1, 1], [-1, 0]] });
    await env.step();
    const [decision, terminal] = env.getSteps('Scripted');
    expect(terminal.length).toBe(0);
    // The reward is the sum of the agent's last actions: the actions arrived in the agents' order.
    expect(Array.from(decision.reward)).toEqual([0.75, 2, -1]);
    expect(Array.from(decision.observation(0, 0).subarray(0, 4))).toEqual([1, 0, 0.5, 0.25]);

    // One agent's action only: the others get zeros.
    env.setActionForAgent('Scripted', 2, { continuous: [0.125, 0.125] });
    await env.step();
    expect(Array.from(env.getSteps('Scripted')[0].reward)).toEqual([0, 0.25, 0]);

    // At the third step the episode ends: each agent's terminal step and its next episode's first
    // step come in the same message, under the same id.
    await env.step();
    const [afterEnd, ended] = env.getSteps('Scripted');
    expect(Array.from(ended.agentId)).toEqual([1, 2, 3]);
    expect(Array.from(ended.interrupted)).toEqual([0, 0, 0]);
    expect(Array.from(afterEnd.agentId)).toEqual([1, 2, 3]);
    expect(afterEnd.observation(0, 0)[0]).toBe(0);

    await env.close();
    const log = fs.readFileSync(path.join(logFolder, 'Player-0.log'), 'utf8');
    expect(log).toContain('handshake done: trainer seed 42, communication version 1.5.0');
    expect(log).toContain('scripted env done after 3 steps');
    expect(logger.lines.map((l) => l.message)).toContain('Connected new brain: Scripted');
  });

  it('tells interrupted (max step) episodes apart and follows new ids per episode', async () => {
    const { env } = await scripted(['--agents', '2', '--episode-length', '2', '--interrupt', '--new-id-per-episode']);
    await env.reset();
    await env.step();
    await env.step();
    const [decision, terminal] = env.getSteps('Scripted');
    expect(Array.from(terminal.agentId)).toEqual([1, 2]);
    expect(Array.from(terminal.interrupted)).toEqual([1, 1]);
    expect(Array.from(decision.agentId)).toEqual([3, 4]);
  });

  it('reads discrete branches and action masks, and sends discrete actions', async () => {
    const { env } = await scripted(['--agents', '2', '--continuous', '0', '--discrete', '3,2']);
    await env.reset();
    const spec = env.behaviorSpecs.get('Scripted')!;
    expect(spec.actionSpec.discreteBranches).toEqual([3, 2]);
    const [decision] = env.getSteps('Scripted');
    // The scripted agents forbid the last choice of the first branch (1 = not available).
    expect(Array.from(decision.actionMask![0])).toEqual([0, 0, 1, 0, 0, 1]);
    expect(Array.from(decision.actionMask![1])).toEqual([0, 0, 0, 0]);
    env.setActions('Scripted', { discrete: Int32Array.of(1, 1, 0, 1) });
    await env.step();
    expect(Array.from(env.getSteps('Scripted')[0].reward)).toEqual([2, 1]);
  });

  it('reads hybrid actions', async () => {
    const { env } = await scripted(['--agents', '1', '--continuous', '1', '--discrete', '2']);
    await env.reset();
    env.setActions('Scripted', { continuous: [0.5], discrete: [1] });
    await env.step();
    expect(Array.from(env.getSteps('Scripted')[0].reward)).toEqual([1.5]);
  });

  it('decodes PNG-compressed visual observations', async () => {
    const { env } = await scripted(['--agents', '2', '--visual', '3x2x4']);
    await env.reset();
    const spec = env.behaviorSpecs.get('Scripted')!;
    expect(spec.observationSpecs[1].shape).toEqual([3, 2, 4]);
    expect(spec.observationSpecs[1].dimensionProperty).toEqual([
      DimensionProperty.NONE,
      DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
      DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
    ]);
    const [decision] = env.getSteps('Scripted');
    const image = decision.observation(1, 1); // agent index 1, step 0, channel-first
    expect(image.length).toBe(24);
    const at = (c: number, y: number, x: number) => image[c * 8 + y * 4 + x];
    expect(at(0, 1, 3)).toBeCloseTo((40 + 3) / 255, 6); // red: agent * 40 + x
    expect(at(1, 1, 3)).toBeCloseTo(1 / 255, 6); // green: step * 20 + y
    expect(at(2, 1, 3)).toBeCloseTo(4 / 255, 6); // blue: x + y
  });

  it('sees a behavior that appears in the middle of the session', async () => {
    const { env } = await scripted(['--agents', '1', '--second-behavior-at', '2']);
    await env.reset();
    await env.step();
    expect([...env.behaviorSpecs.keys()]).toEqual(['Scripted']);
    await env.step();
    expect([...env.behaviorSpecs.keys()]).toEqual(['Scripted', 'ScriptedSecond']);
    expect(env.getSteps('ScriptedSecond')[0].length).toBe(1);
  });

  it('reads ordinary steps on the fast path, and steps that bring new behaviors with protobufjs', async () => {
    const { env } = await scripted(['--agents', '3', '--episode-length', '2', '--discrete', '2', '--second-behavior-at', '3']);
    const communicator = (env as unknown as { communicator: RpcCommunicator }).communicator;
    const paths: string[] = [];
    const exchangeStep = communicator.exchangeStep.bind(communicator);
    jest.spyOn(communicator, 'exchangeStep').mockImplementation(async (message, layouts) => {
      const output = await exchangeStep(message, layouts);
      paths.push(output?.fast !== undefined ? 'fast' : 'slow');
      return output;
    });
    await env.reset();
    for (let i = 0; i < 4; i++) await env.step();
    // reset: brain parameters; step 3: the second behavior's brain parameters.
    expect(paths).toEqual(['slow', 'fast', 'fast', 'slow', 'fast']);
    const [decision, terminal] = env.getSteps('Scripted');
    expect(Array.from(terminal.agentId)).toEqual([1, 2, 3]);
    expect(Array.from(decision.agentId)).toEqual([1, 2, 3]);
    expect(Array.from(decision.actionMask![0])).toEqual([0, 1, 0, 1, 0, 1]);
    expect(env.getSteps('ScriptedSecond')[0].length).toBe(3);
  });

  it('passes side-channel messages both ways', async () => {
    const floats = new FloatPropertiesChannel();
    const { env } = await scripted([], { sideChannels: [floats] });
    floats.setProperty('echo', 41);
    await env.reset();
    await env.step();
    expect(floats.getProperty('echo_reply')).toBe(42);
  });
});

describe('bad input from the user', () => {
  it('refuses an unknown behavior name and names the known ones', async () => {
    const { env } = await scripted([]);
    await env.reset();
    expect(() => env.getSteps('Nope')).toThrow(/behavior Nope does not exist.*Scripted/);
    expect(() => env.setActions('Nope', {})).toThrow(UnityActionError);
  });

  it('refuses actions of the wrong size or type', async () => {
    const { env } = await scripted(['--agents', '2', '--discrete', '3']);
    await env.reset();
    expect(() => env.setActions('Scripted', { continuous: [1, 2, 3] })).toThrow(
      /continuous input of 4 floats \(2 agents x 2 actions\) but received 3/,
    );
    expect(() => env.setActions('Scripted', { continuous: [1, 2, 3, 4], discrete: [0, 3] })).toThrow(
      /discrete action 3 .* 3 choices/,
    );
    expect(() => env.setActions('Scripted', { continuous: [1, 2, 3, 4], discrete: [0.5, 1] })).toThrow(/not an integer/);
    expect(() => env.setActionForAgent('Scripted', 99, { continuous: [0, 0], discrete: [0] })).toThrow(
      /Agent 99 .* does not ask for a decision/,
    );
    // The session goes on after the refusals.
    env.setActions('Scripted', { continuous: [1, 0, 0, 0], discrete: [2, 0] });
    await env.step();
    expect(Array.from(env.getSteps('Scripted')[0].reward)).toEqual([3, 0]);
  });
});

describe('bad input from the environment', () => {
  it('reports a NaN observation clearly', async () => {
    const { env } = await scripted(['--nan-at-step', '1']);
    await env.reset();
    const error = await env.step().catch((e: Error) => e);
    expect(error).toBeInstanceOf(UnityObservationError);
    expect((error as Error).message).toMatch(/NaN values: observation 0 \(VectorSensor\) of agent 1 of behavior Scripted/);
  });

  it('refuses an incompatible communication version, naming both', async () => {
    await expect(scripted(['--comm-version', '2.0.0'])).rejects.toThrow(
      /trainer API 1\.5\.0, Unity API 2\.0\.0.*Upgrade this trainer/,
    );
    await expect(scripted(['--comm-version', '0.15.0'])).rejects.toThrow(
      /trainer API 1\.5\.0, Unity API 0\.15\.0.*Upgrade the com\.unity\.ml-agents package/,
    );
  });

  it('warns but works when only the minor version differs', async () => {
    const { env, logger } = await scripted(['--comm-version', '1.4.0']);
    expect(logger.lines.some((l) => l.level === 'warning' && /differ at the minor level/.test(l.message))).toBe(true);
    await env.reset();
    expect(env.behaviorSpecs.has('Scripted')).toBe(true);
  });

  it('reports an executable that exits before connecting, with its exit code and log, at once', async () => {
    const logFolder = tempDir('env-exit');
    const started = Date.now();
    const error = await scripted(['--exit-code', '3'], { logFolder, timeoutWait: 30 }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(UnityEnvironmentError);
    expect((error as Error).message).toMatch(/code 3/);
    expect((error as Error).message).toContain(path.join(logFolder, 'Player-0.log'));
    expect(Date.now() - started).toBeLessThan(20000); // not the 30 s timeout
  });

  it('says to press Play when nothing connects in time', async () => {
    const error = await UnityEnvironment.create({ basePort: await freePort(), timeoutWait: 0.5, logger: memoryLogger() }).catch(
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(UnityTimeOutError);
    expect((error as Error).message).toMatch(/within 0\.5 s .*Press the Play button in the Unity Editor/);
  });

  it('detects an environment that stops answering in the middle of a run', async () => {
    const { env } = await scripted(['--hang-at-step', '2'], { timeoutWait: 1 });
    await env.reset();
    await env.step();
    await expect(env.step()).rejects.toThrow(UnityTimeOutError);
  });

  it('times each wait afresh: steps over longer than the timeout in all do not time out', async () => {
    const { env } = await scripted(['--agents', '2'], { timeoutWait: 1 });
    await env.reset();
    const started = Date.now();
    while (Date.now() - started < 2500) await env.step();
    expect(env.getSteps('Scripted')[0].length).toBe(2);
  });

  it('reports an environment that leaves the session', async () => {
    const { env } = await scripted(['--quit-after', '2']);
    await env.reset();
    await env.step();
    await expect(env.step()).rejects.toThrow(UnityCommunicatorStoppedError);
  });

  it('reports an executable that dies in the middle of the run, with its exit code, at once', async () => {
    const { env } = await scripted(['--hang-at-step', '1'], { timeoutWait: 30 });
    await env.reset();
    const stepping = env.step();
    const pid = (env as unknown as { process: { pid: number } }).process.pid;
    process.kill(pid, 'SIGKILL');
    const error = await stepping.catch((e: Error) => e);
    expect(error).toBeInstanceOf(UnityEnvironmentError);
    expect((error as Error).message).toMatch(/killed by signal SIGKILL in the middle of the run/);
  });

  it('refuses a worker id other than 0 without an executable', async () => {
    await expect(UnityEnvironment.create({ workerId: 1, logger: memoryLogger() })).rejects.toThrow(/worker id must be 0/);
  });
});
