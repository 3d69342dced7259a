/**
 * The engine's end of the link, as com.unity.ml-agents' RpcCommunicator plays it: a gRPC client
 * that calls Exchange on the trainer and waits for each answer.
 *
 *   1. initialize(): Exchange(rl_initialization_output) -> rl_initialization_input, then
 *      Exchange(empty output) -> the first rl_input (usually RESET).
 *   2. exchange(output) once per step -> the next rl_input, or null when the trainer says quit
 *      (header status 400). exchangeStep() does the same with a message the caller encoded
 *      (wire/step-output.ts) and reads the actions straight into typed arrays (wire/step-input.ts).
 *   3. close(): tells the trainer we leave (status 400), if it has not ended the session.
 */
import * as grpc from '@grpc/grpc-js';
import {
  EXCHANGE_METHOD_PATH,
  STATUS_OK,
  STATUS_QUIT,
  UnityInputProto,
  UnityMessage,
  UnityMessageProto,
  UnityOutputProto,
  UnityRLInitializationInputProto,
  UnityRLInitializationOutputProto,
  UnityRLInputProto,
} from '../communicator/messages';
import {
  ActionSizes,
  StepInputMessage,
  decodeStepInputMessage,
  stepInputFromProto,
} from '../communicator/wire/step-input';

const MAX_MESSAGE_BYTES = 1024 * 1024 * 1024;

export interface UnityClientOptions {
  host?: string;
  port: number;
  /** How long to keep trying to reach the trainer, in seconds (Unity tries once; we are kinder). */
  connectTimeoutSeconds?: number;
}

export class UnityClient {
  private readonly client: grpc.Client;
  private readonly connectTimeoutMs: number;
  private ended = false;

  constructor(options: UnityClientOptions) {
    const address = `${options.host ?? 'localhost'}:${options.port}`;
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
      // Channelz (gRPC's introspection service, unused here) books every call.
      'grpc.enable_channelz': 0,
    });
    this.connectTimeoutMs = (options.connectTimeoutSeconds ?? 30) * 1000;
  }

  /**
   * The handshake. Returns the trainer's initialization input and its first rl_input, or null
   * for the latter when the trainer ended the session at once.
   */
  async initialize(
    initOutput: UnityRLInitializationOutputProto,
  ): Promise<{ init: UnityRLInitializationInputProto; firstInput: UnityRLInputProto | null }> {
    await this.waitForReady();
    const answer = await this.call({
      header: { status: STATUS_OK },
      unity_output: { rl_initialization_output: initOutput },
    });
    if ((answer.header?.status ?? 0) !== STATUS_OK || !answer.unity_input?.rl_initialization_input) {
      this.ended = true;
      throw new Error(
        `The trainer refused the handshake (status ${answer.header?.status ?? 'none'}` +
          `${answer.header?.message ? `: ${answer.header.message}` : ''}).`,
      );
    }
    const init = answer.unity_input.rl_initialization_input;
    const firstInput = await this.exchange({});
    return { init, firstInput };
  }

  /** Sends one step's output; returns the trainer's next input, or null when it ended the session. */
  async exchange(output: UnityOutputProto): Promise<UnityRLInputProto | null> {
    const answer = await this.call({ header: { status: STATUS_OK }, unity_output: output });
    if ((answer.header?.status ?? 0) !== STATUS_OK) {
      this.ended = true;
      return null;
    }
    return (answer.unity_input as UnityInputProto | undefined)?.rl_input ?? {};
  }

  /**
   * Sends one step's UnityMessageProto, already encoded; returns the trainer's next input with
   * the actions of the behaviors in `actionSizes` as typed arrays, or null when it ended the session.
   */
  async exchangeStep(message: Uint8Array, actionSizes: ReadonlyMap<string, ActionSizes>): Promise<StepInputMessage | null> {
    const response = await this.callRaw(message);
    const input =
      decodeStepInputMessage(response, actionSizes) ?? stepInputFromProto(UnityMessage.decode(response), actionSizes);
    if ((input.headerStatus ?? 0) !== STATUS_OK) {
      this.ended = true;
      return null;
    }
    return input;
  }

  /** Leaves: says so to the trainer if it still listens, then closes the channel. */
  async close(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      try {
        await this.call({ header: { status: STATUS_QUIT } });
      } catch {
        // The trainer is already gone: nothing to tell it.
      }
    }
    this.client.close();
  }

  /** Sends raw bytes as a request (for tests of how the trainer treats malformed messages). */
  callRaw(bytes: Uint8Array): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        EXCHANGE_METHOD_PATH,
        (b: Uint8Array) => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
        (b: Buffer) => b,
        bytes,
        (error, response) => (error ? reject(error) : resolve(response as Buffer)),
      );
    });
  }

  private waitForReady(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.client.waitForReady(Date.now() + this.connectTimeoutMs, (error) =>
        error ? reject(new Error(`Could not reach the trainer: ${error.message}`)) : resolve(),
      );
    });
  }

  private async call(message: UnityMessageProto): Promise<UnityMessageProto> {
    const response = await this.callRaw(UnityMessage.encode(message));
    return UnityMessage.decode(response);
  }
}
