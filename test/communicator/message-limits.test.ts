/**
 * Messages whose decoding would cost far more memory than they carry: refused before they are
 * built, with the setting that raises the limit named. Real gRPC on loopback; the gzip bomb is
 * sent by grpc-js's own client with gzip compression, as any gRPC client can.
 */
import * as grpc from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';
import { memoryLogger } from '../../src/common/logger';
import { EXCHANGE_METHOD_PATH } from '../../src/communicator/messages';
import { DEFAULT_MAX_MESSAGE_MIB, RpcCommunicator } from '../../src/communicator/rpc-communicator';
import { decodeStepOutputMessage } from '../../src/communicator/wire/step-output';
import { freePort } from '../helpers/paths';

const MIB = 1024 * 1024;
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A field of wire type 2 (length-delimited): tag, length, payload. */
function lengthDelimited(field: number, payload: Uint8Array): Buffer {
  const prefix = protobuf.Writer.create().uint32((field << 3) | 2).uint32(payload.length).finish();
  return Buffer.concat([prefix, payload]);
}

/**
 * UnityMessageProto { unity_output { rl_output { agentInfos { "B": { value: [{} x count] } } } } }:
 * every empty AgentInfoProto is 2 bytes on the wire.
 */
function emptyAgentsMessage(count: number): Buffer {
  const agents = Buffer.alloc(2 * count);
  for (let i = 0; i < agents.length; i += 2) agents[i] = 0x0a; // field 1, length-delimited, length 0
  const entry = Buffer.concat([lengthDelimited(1, Buffer.from('B')), lengthDelimited(2, agents)]);
  return lengthDelimited(2, lengthDelimited(1, lengthDelimited(2, entry)));
}

async function listening(): Promise<{ communicator: RpcCommunicator; logger: ReturnType<typeof memoryLogger> }> {
  const logger = memoryLogger();
  const communicator = new RpcCommunicator({ port: await freePort(), timeoutWaitSeconds: 20, logger });
  await communicator.open();
  cleanups.push(() => communicator.close());
  return { communicator, logger };
}

/** One Exchange call from grpc-js's client, gzip-compressed when asked. */
function call(port: number, message: Buffer, gzip: boolean): Promise<grpc.ServiceError | null> {
  const client = new grpc.Client(`localhost:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_send_message_length': -1,
    ...(gzip ? { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip } : {}),
  });
  cleanups.push(() => client.close());
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      EXCHANGE_METHOD_PATH,
      (bytes: Buffer) => bytes,
      (bytes: Buffer) => bytes,
      message,
      (error) => resolve(error),
    );
  });
}

function heapGrowthDuring<T>(run: () => Promise<T>): Promise<{ result: T; peakGrowth: number }> {
  const start = process.memoryUsage().heapUsed;
  let peak = start;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
  return run().then((result) => {
    clearInterval(sampler);
    peak = Math.max(peak, process.memoryUsage().heapUsed);
    return { result, peakGrowth: peak - start };
  });
}

it('accepts 32 MiB by default, a size Unity traffic fits in with room to spare', async () => {
  const { communicator } = await listening();
  expect(DEFAULT_MAX_MESSAGE_MIB).toBe(32);
  expect(communicator.maxMessageBytes).toBe(32 * MIB);
});

/**
 * Sends `message` to a communicator waiting for its first one; resolves with the call's refusal,
 * the error its wait ended with, and the heap's peak growth meanwhile.
 */
async function sendFirst(message: Buffer, gzip: boolean): Promise<{ refusal: grpc.ServiceError | null; ended: Error | null; peakGrowth: number }> {
  const { communicator } = await listening();
  const initializing = communicator.initialize({}).then(
    () => null,
    (e: Error) => e,
  );
  const { result: refusal, peakGrowth } = await heapGrowthDuring(() => call(communicator.port, message, gzip));
  return { refusal, ended: await initializing, peakGrowth };
}

it('refuses a gzip bomb sent before the handshake without inflating it past the limit, and says which setting raises it', async () => {
  // 48 MiB of empty agents, about 50 KB once gzipped.
  const { refusal, ended, peakGrowth } = await sendFirst(emptyAgentsMessage(24 * MIB), true);
  expect(refusal?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect(refusal?.details).toMatch(/decompresses to a size larger than 33554432/);
  expect(ended?.message).toMatch(/ended before its message could be read.*larger than the limit of 32 MiB.*--max-message-size=<MiB>/);
  expect(peakGrowth).toBeLessThan(100 * MIB);
});

it('refuses, before decoding it, a message under the limit that would decode to many times its size', async () => {
  // 16 MiB of empty agents: 8 million objects for protobufjs, about a gigabyte of heap.
  const { refusal, ended, peakGrowth } = await sendFirst(emptyAgentsMessage(8 * MIB), false);
  expect(refusal?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect(refusal?.details).toMatch(/would take more than 256 MiB of memory once decoded/);
  expect(ended?.message).toMatch(/too many agents or entries for its size.*--max-message-size=<MiB>/);
  expect(peakGrowth).toBeLessThan(100 * MIB);
});

it('keeps what a message may cost once decoded within 64 times its size (16 MiB for small ones)', async () => {
  // 1 MiB of empty agents: well under the 256 MiB cap, but about 160 MiB of objects for protobufjs.
  const { refusal, ended, peakGrowth } = await sendFirst(emptyAgentsMessage(MIB / 2), false);
  expect(refusal?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  expect(refusal?.details).toMatch(/would take more than 64 MiB of memory once decoded \(64 times its size, at least 16 MiB/);
  expect(ended?.message).toMatch(/too many agents or entries for its size/);
  expect(peakGrowth).toBeLessThan(64 * MIB);
});

it('takes its limit from the setting, in MiB', async () => {
  const logger = memoryLogger();
  const communicator = new RpcCommunicator({ port: await freePort(), timeoutWaitSeconds: 20, logger, maxMessageMiB: 0.5 });
  await communicator.open();
  cleanups.push(() => communicator.close());
  const initializing = communicator.initialize({}).then(
    () => null,
    (e: Error) => e,
  );
  const refusal = await call(communicator.port, emptyAgentsMessage(MIB / 2), false);
  expect(refusal?.details).toMatch(/larger than max \(1048\d+ vs 524288\)/);
  expect((await initializing)?.message).toMatch(/larger than the limit of 0.5 MiB/);
});

it('sizes no columns from a count of agents that do not carry their observations', () => {
  // The behavior's spec says 3x84x84 floats an agent (84 KiB); a million empty agents (2 MB)
  // would need 84 GB of columns: the fast decoder leaves such a message to the checked path.
  const layouts = new Map([['B', { observationShapes: [[3, 84, 84]], actionMaskSize: null }]]);
  const message = emptyAgentsMessage(1_000_000);
  const before = process.memoryUsage().arrayBuffers;
  expect(decodeStepOutputMessage(message, layouts)).toBeNull();
  expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(10 * MIB);
});
