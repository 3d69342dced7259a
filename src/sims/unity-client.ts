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
import { GrpcUnaryClient } from './grpc-unary-client';

export interface UnityClientOptions {
  host?: string;
  port: number;
  /** How long to keep trying to reach the trainer, in seconds (Unity tries once; we are kinder). */
  connectTimeoutSeconds?: number;
}

export class UnityClient {
  private readonly client: GrpcUnaryClient;
  private readonly connectTimeoutMs: number;
  private ended = false;

  constructor(options: UnityClientOptions) {
    this.client = new GrpcUnaryClient(`${options.host ?? 'localhost'}:${options.port}`);
    this.connectTimeoutMs = (options.connectTimeoutSeconds ?? 30) * 1000;
  }

  /**
   * The handshake. Returns the trainer's initialization input and its first rl_input, or null
   * for the latter when the trainer ended the session at once.
   */
  async initialize(
    initOutput: UnityRLInitializationOutputProto,
  ): Promise<{ init: UnityRLInitializationInputProto; firstInput: UnityRLInputProto | null }> {
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
    if (!this.ended && this.client.connected) {
      this.ended = true;
      try {
        await this.call({ header: { status: STATUS_QUIT } });
      } catch {
        // The trainer is already gone: nothing to tell it.
      }
    }
    this.client.close();
  }

  /** One Exchange call with the message's bytes as they are (malformed ones too, for tests); connects first if needed. */
  async callRaw(bytes: Uint8Array): Promise<Buffer> {
    if (!this.client.connected) await this.connect();
    return this.client.call(EXCHANGE_METHOD_PATH, bytes);
  }

  private async connect(): Promise<void> {
    try {
      await this.client.connect(this.connectTimeoutMs);
    } catch (error) {
      throw new Error(`Could not reach the trainer: ${(error as Error).message}`);
    }
  }

  private async call(message: UnityMessageProto): Promise<UnityMessageProto> {
    const response = await this.callRaw(UnityMessage.encode(message));
    return UnityMessage.decode(response);
  }
}
