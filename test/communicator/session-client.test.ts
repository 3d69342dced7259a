/**
 * A session belongs to the client that opened it: real gRPC on loopback, each client on its own
 * connection, as two programs would be.
 */
import { memoryLogger } from '../../src/common/logger';
import { RpcCommunicator } from '../../src/communicator/rpc-communicator';
import { AgentInfoProto, UnityMessage, UnityOutputProto } from '../../src/communicator/messages';
import { GrpcCallError } from '../../src/sims/grpc-unary-client';
import { UnityClient } from '../../src/sims/unity-client';
import { freePort } from '../helpers/paths';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function client(port: number): UnityClient {
  const c = new UnityClient({ port, connectTimeoutSeconds: 5 });
  cleanups.push(() => c.close());
  return c;
}

function stepOutput(agentId: number, reward: number): UnityOutputProto {
  const agent: AgentInfoProto = { id: agentId, reward, observations: [{ shape: [1], float_data: { data: [reward] } }] };
  return { rl_output: { agentInfos: { Ball: { value: [agent] } } } };
}

it('refuses every other caller once a session is established, logs it once, and leaves the session untouched', async () => {
  const logger = memoryLogger();
  const communicator = new RpcCommunicator({ port: await freePort(), timeoutWaitSeconds: 5, logger });
  await communicator.open();
  cleanups.push(() => communicator.close());

  const unity = client(communicator.port);
  const engine = unity.initialize({ name: 'Unity', communication_version: '1.5.0' });
  await communicator.initialize({ rl_initialization_input: { seed: 1, communication_version: '1.5.0' } });

  // The trainer has answered Unity's call and waits for Unity's next one: the moment another
  // program's call used to be taken for Unity's.
  const firstStep = communicator.exchange({ rl_input: { command: 1 } });
  await engine;
  const intruder = client(communicator.port);
  const refusals: GrpcCallError[] = [];
  for (const output of [
    { rl_initialization_output: { name: 'Intruder', communication_version: '1.5.0' } },
    stepOutput(666, -5),
    stepOutput(667, -6),
  ]) {
    refusals.push(await intruder.exchange(output).then(() => null as never, (e: GrpcCallError) => e));
  }
  for (const refusal of refusals) {
    expect(refusal).toBeInstanceOf(GrpcCallError);
    expect(refusal.code).toBe(9); // FAILED_PRECONDITION
    expect(refusal.details).toMatch(/already serves an environment \(the session of 127\.0\.0\.1:\d+\).*refused/);
  }

  // Unity's own step is the one the trainer reads, and the session goes on.
  const secondInput = unity.exchange(stepOutput(1, 0.5));
  const first = await firstStep;
  expect(first?.rl_output?.agentInfos?.Ball.value?.map((a) => [a.id, a.reward])).toEqual([[1, 0.5]]);
  const secondStep = communicator.exchange({ rl_input: { command: 0 } });
  expect((await secondInput)?.command ?? 0).toBe(0);
  void unity.exchange(stepOutput(1, 0.25));
  expect((await secondStep)?.rl_output?.agentInfos?.Ball.value?.[0].reward).toBe(0.25);

  const warnings = logger.lines.filter((line) => line.level === 'warning');
  expect(warnings).toHaveLength(1);
  expect(warnings[0].message).toMatch(/already serves an environment.*Start each environment on its own port/);
});

it('refuses another caller that says goodbye (status 400): it cannot end the session', async () => {
  const communicator = new RpcCommunicator({ port: await freePort(), timeoutWaitSeconds: 5, logger: memoryLogger() });
  await communicator.open();
  cleanups.push(() => communicator.close());
  const unity = client(communicator.port);
  const engine = unity.initialize({ name: 'Unity', communication_version: '1.5.0' });
  await communicator.initialize({ rl_initialization_input: { seed: 1, communication_version: '1.5.0' } });
  const step = communicator.exchange({ rl_input: { command: 1 } });
  await engine;

  const intruder = client(communicator.port);
  await expect(intruder.callRaw(UnityMessage.encode({ header: { status: 400 } }))).rejects.toThrow(/already serves/);
  void unity.exchange(stepOutput(1, 1));
  expect((await step)?.rl_output?.agentInfos?.Ball.value?.[0].reward).toBe(1);
});
