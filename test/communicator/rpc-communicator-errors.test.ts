/**
 * How the trainer's server meets a peer that misbehaves: real gRPC on loopback, with the
 * engine-side client of src/sims playing the peer.
 */
import { RpcCommunicator, UnityTimeOutError } from '../../src/communicator/rpc-communicator';
import { UnityMessage } from '../../src/communicator/messages';
import { UnityClient } from '../../src/sims/unity-client';
import { freePort } from '../helpers/paths';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server(timeoutWaitSeconds = 5): Promise<RpcCommunicator> {
  const communicator = new RpcCommunicator({ port: await freePort(), timeoutWaitSeconds });
  await communicator.open();
  cleanups.push(() => communicator.close());
  return communicator;
}

function client(port: number): UnityClient {
  const c = new UnityClient({ port, connectTimeoutSeconds: 5 });
  cleanups.push(() => c.close());
  return c;
}

const initInput = { rl_initialization_input: { seed: 1, communication_version: '1.5.0' } };

it('says which port is taken and what to do', async () => {
  const first = await server();
  const second = new RpcCommunicator({ port: first.port, timeoutWaitSeconds: 1 });
  await expect(second.open()).rejects.toThrow(new RegExp(`Port ${first.port} is probably in use.*--base-port`));
});

it('reports a malformed message clearly and stays up', async () => {
  const communicator = await server();
  const peer = client(communicator.port);
  const initializing = communicator.initialize(initInput).catch((e: Error) => e);
  // 0x0a 0xff: field 1, length-delimited, with a length far past the end of the bytes.
  await expect(peer.callRaw(Uint8Array.of(0x0a, 0xff, 0x01))).rejects.toThrow(/malformed UnityMessageProto/);
  expect(((await initializing) as Error).message).toMatch(/sent a malformed message \(3 bytes/);
  // The server still answers: it tells a later caller that the session is over (status 400).
  const answer = UnityMessage.decode(await peer.callRaw(UnityMessage.encode({ header: { status: 200 } })));
  expect(answer.header?.status).toBe(400);
});

it('refuses a first message that is not a handshake', async () => {
  const communicator = await server();
  const peer = client(communicator.port);
  const initializing = communicator.initialize(initInput);
  void peer.exchange({ rl_output: {} }).catch(() => undefined);
  await expect(initializing).rejects.toThrow(/carried no rl_initialization_output/);
});

it('runs the handshake in Unity order and ends the session with status 400', async () => {
  const communicator = await server();
  const peer = client(communicator.port);
  const engine = peer.initialize({ name: 'Peer', communication_version: '1.5.0' });
  const output = await communicator.initialize(initInput);
  expect(output.rl_initialization_output?.name).toBe('Peer');
  const next = communicator.exchange({ rl_input: { command: 1 } });
  const { init, firstInput } = await engine;
  expect(init.seed).toBe(1);
  expect(firstInput?.command).toBe(1);
  const quitting = peer.exchange({ rl_output: {} });
  await next;
  await communicator.close();
  // The engine's pending call is answered with 400: it learns that the trainer has ended.
  await expect(quitting).resolves.toBeNull();
});

it('returns null when the engine leaves with status 400', async () => {
  const communicator = await server();
  const peer = client(communicator.port);
  const engine = peer.initialize({ name: 'Peer', communication_version: '1.5.0' });
  await communicator.initialize(initInput);
  const stepping = communicator.exchange({ rl_input: {} });
  await engine;
  await peer.close();
  await expect(stepping).resolves.toBeNull();
});

it('turns away a second engine on a port already in a session', async () => {
  const communicator = await server();
  const peer = client(communicator.port);
  const engine = peer.initialize({ name: 'Peer', communication_version: '1.5.0' });
  await communicator.initialize(initInput);
  const intruder = client(communicator.port);
  await expect(intruder.callRaw(UnityMessage.encode({ header: { status: 200 } }))).rejects.toThrow(
    /already serves an environment/,
  );
  void engine.catch(() => undefined);
});

it('times out when the engine never calls', async () => {
  const communicator = await server(0.3);
  await expect(communicator.initialize(initInput)).rejects.toThrow(UnityTimeOutError);
});
