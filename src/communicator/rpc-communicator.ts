/**
 * The trainer's end of Unity ML-Agents' gRPC link.
 *
 * Unity is the gRPC client: it calls `Exchange` on our server and blocks until we answer. So
 * "sending" to Unity means answering its pending call, and "receiving" means waiting for its
 * next call. The order, as in upstream's rpc_communicator.py and RpcCommunicator.cs:
 *   1. Unity calls with rl_initialization_output; we answer with rl_initialization_input.
 *   2. Unity calls again with an empty output; we hold that call.
 *   3. Each exchange answers the held call with an rl_input (RESET, STEP...) and waits for the
 *      next call, which carries the step's rl_output.
 *   4. Closing answers the held call with header status 400; Unity then quits.
 *
 * The session belongs to one client: the connection whose message the handshake read (grpc-js's
 * peer, "address:port" of that TCP connection; Unity makes all its calls over one channel, so
 * one connection). Every other caller is refused with FAILED_PRECONDITION, and the session
 * goes on untouched.
 *
 * Messages are bounded: gRPC refuses one larger than the message size limit, compressed or once
 * inflated (grpc-js checks both against grpc.max_receive_message_length). A message protobufjs
 * would turn into too many objects is refused before it is decoded (wire/decode-cost.ts).
 *
 * Each message from the environment is decoded as it arrives (a malformed one ends the session
 * with a clear error). During the steps, `exchangeStep` sends a message the caller encoded and
 * has the answer read by the fast step decoder (wire/step-output.ts), which falls back to
 * protobufjs for anything it does not handle.
 */
import * as grpc from '@grpc/grpc-js';
import { Logger, consoleLogger } from '../common/logger';
import {
  EXCHANGE_METHOD_PATH,
  STATUS_OK,
  STATUS_QUIT,
  UnityInputProto,
  UnityMessage,
  UnityMessageProto,
  UnityOutputProto,
} from './messages';
import { AgentInfoLayout, StepOutputMessage, decodeStepOutputMessage } from './wire/step-output';
import {
  DECODE_BUDGET_FACTOR,
  DECODE_BUDGET_FLOOR_BYTES,
  DECODE_BUDGET_PER_BYTE,
  DecodeCostError,
  checkDecodeCost,
  decodeBudget,
} from './wire/decode-cost';

export class CommunicatorError extends Error {
  override name = 'CommunicatorError';
}

/** The environment did not answer within the timeout. */
export class UnityTimeOutError extends CommunicatorError {
  override name = 'UnityTimeOutError';
}

/** The environment ended the session (status 400 or a closed connection). */
export class UnityCommunicatorStoppedError extends CommunicatorError {
  override name = 'UnityCommunicatorStoppedError';
}

export interface RpcCommunicatorOptions {
  port: number;
  /** Host to bind; 'localhost' (the default) accepts only this machine, as Unity connects there. */
  bindAddress?: string;
  /** Seconds to wait for each message from the environment (upstream's timeout_wait). */
  timeoutWaitSeconds: number;
  /** Said in the time-out error: what the user should check (press Play, the executable's log...). */
  timeoutHint?: string;
  /** The largest message accepted from the environment, in MiB (--max-message-size). */
  maxMessageMiB?: number;
  logger?: Logger;
}

/**
 * Upstream's Python server keeps gRPC's default limit of 4 MiB, so Unity's real traffic fits in
 * it; 8 times that leaves room for larger scenes and raw (uncompressed) images.
 */
export const DEFAULT_MAX_MESSAGE_MIB = 32;
/** The setting that raises the limit, named in every error about it. */
export const MAX_MESSAGE_SIZE_FLAG = '--max-message-size';
/** Our own answers are small (actions); gRPC's limit on them only guards against a bug. */
const MAX_SEND_BYTES = 1024 * 1024 * 1024;
const MIB = 1024 * 1024;

type ExchangeCallback = grpc.sendUnaryData<Buffer>;

/** A step's output from the environment: read by the fast decoder, or by protobufjs where it could not. */
export type StepOutput = { fast: StepOutputMessage; proto?: undefined } | { proto: UnityOutputProto; fast?: undefined };

/** A message from the environment, decoded. */
export interface Incoming {
  /** header.status; null when the message has no header. */
  headerStatus: number | null;
  /** Set when the fast step decoder read the message. */
  fast?: StepOutputMessage;
  /** Set otherwise: the whole message as protobufjs decoded it. */
  message?: UnityMessageProto;
}

interface Waiter {
  resolve(message: Incoming): void;
  reject(error: Error): void;
}

const exchangeService: grpc.ServiceDefinition = {
  Exchange: {
    path: EXCHANGE_METHOD_PATH,
    requestStream: false,
    responseStream: false,
    // Decoding happens in the handler, so that a malformed message gets a clear error there.
    requestSerialize: (bytes: Buffer) => bytes,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: (bytes: Buffer) => bytes,
    responseDeserialize: (bytes: Buffer) => bytes,
  },
};

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export class RpcCommunicator {
  readonly port: number;
  private readonly host: string;
  private readonly timeoutMs: number;
  private readonly timeoutHint: string;
  private server: grpc.Server | undefined;
  /** Unity's call that we have not answered yet. */
  private heldCall: ExchangeCallback | undefined;
  /** Messages that arrived before anyone waited for them. */
  private readonly inbox: Incoming[] = [];
  private waiter: Waiter | undefined;
  /** One timer for every wait, refreshed when a wait starts; cleared on close. */
  private waitTimer: NodeJS.Timeout | undefined;
  /** The behaviors the fast decoder reads in the next message; null: protobufjs reads it all. */
  private stepLayouts: ReadonlyMap<string, AgentInfoLayout> | null = null;
  /** Once set, every wait fails with it: the link is broken for good. */
  private fatalError: Error | undefined;
  private closed = false;
  /** The peer (address:port) of the session's client, once its first message was accepted. */
  private sessionPeer: string | undefined;
  /** Other callers are told why they are refused; the log says it once. */
  private refusalLogged = false;
  private readonly maxMessageMiB: number;
  /** The most memory the decoded form of one message may take. */
  private readonly decodeBudgetBytes: number;
  private readonly logger: Logger;

  constructor(options: RpcCommunicatorOptions) {
    this.port = options.port;
    this.host = options.bindAddress ?? 'localhost';
    this.timeoutMs = options.timeoutWaitSeconds * 1000;
    this.timeoutHint = options.timeoutHint ?? '';
    this.maxMessageMiB = options.maxMessageMiB ?? DEFAULT_MAX_MESSAGE_MIB;
    if (!(Number.isFinite(this.maxMessageMiB) && this.maxMessageMiB > 0)) {
      throw new CommunicatorError(
        `The message size limit must be a positive number of MiB; got ${this.maxMessageMiB} (${MAX_MESSAGE_SIZE_FLAG}).`,
      );
    }
    this.decodeBudgetBytes = DECODE_BUDGET_FACTOR * this.maxMessageBytes;
    this.logger = options.logger ?? consoleLogger();
  }

  /** The largest message accepted, in bytes (gRPC's limit counts whole bytes, below 2 GiB). */
  get maxMessageBytes(): number {
    return Math.min(Math.floor(this.maxMessageMiB * MIB), 2 ** 31 - 1);
  }

  /** Starts listening. Fails clearly when the port is taken. */
  async open(): Promise<void> {
    const server = new grpc.Server({
      'grpc.max_receive_message_length': this.maxMessageBytes,
      'grpc.max_send_message_length': MAX_SEND_BYTES,
      // Channelz (gRPC's introspection service, unused here) books every call: a tenth of the
      // server's CPU per exchange.
      'grpc.enable_channelz': 0,
      interceptors: [(_method, call) => this.watchForUnreadMessage(call)],
    });
    server.addService(exchangeService, {
      Exchange: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: ExchangeCallback) =>
        this.onExchange(call, callback),
    });
    const address = `${formatHost(this.host)}:${this.port}`;
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error) => {
        if (error) {
          reject(
            new CommunicatorError(
              `Could not listen on ${address}: ${error.message}. Port ${this.port} is probably in use ` +
                `by another trainer or a previously opened environment. Close it, or choose another port ` +
                `(--base-port, or a different worker id).`,
            ),
          );
        } else {
          resolve();
        }
      });
    });
    this.server = server;
  }

  /**
   * The handshake: waits for Unity's first message, answers it with `input` (which must hold
   * rl_initialization_input) and holds Unity's second call for the first exchange.
   */
  async initialize(input: UnityInputProto): Promise<UnityOutputProto> {
    this.stepLayouts = null;
    const first = await this.receive();
    const output = first.message?.unity_output;
    if (!output || !output.rl_initialization_output) {
      throw new CommunicatorError(
        'The first message from the environment carried no rl_initialization_output: it does not ' +
          'speak the Unity ML-Agents protocol, or it connected in the middle of another session.',
      );
    }
    this.answer({ header: { status: STATUS_OK }, unity_input: input });
    await this.receive();
    return output;
  }

  /** Sends `input` to Unity and waits for its next output; null when Unity ended the session. */
  async exchange(input: UnityInputProto): Promise<UnityOutputProto | null> {
    this.stepLayouts = null;
    this.answer({ header: { status: STATUS_OK }, unity_input: input });
    const incoming = await this.receive();
    if ((incoming.headerStatus ?? 0) !== STATUS_OK) {
      return null;
    }
    return incoming.message!.unity_output ?? {};
  }

  /**
   * Sends a UnityMessageProto the caller encoded (header and unity_input) and waits for Unity's
   * next output, read by the fast step decoder with these behaviors' layouts where it can;
   * null when Unity ended the session.
   */
  async exchangeStep(message: Uint8Array, layouts: ReadonlyMap<string, AgentInfoLayout>): Promise<StepOutput | null> {
    this.stepLayouts = layouts;
    this.answerWith(message);
    const incoming = await this.receive();
    if ((incoming.headerStatus ?? 0) !== STATUS_OK) {
      return null;
    }
    return incoming.fast !== undefined ? { fast: incoming.fast } : { proto: incoming.message!.unity_output ?? {} };
  }

  /**
   * Makes every current and future wait fail with `error`, e.g. when the environment's process
   * exited: the caller learns why at once instead of after the timeout.
   */
  abort(error: Error): void {
    if (this.fatalError === undefined) {
      this.fatalError = error;
    }
    this.takeWaiter()?.reject(this.fatalError);
  }

  /** Tells Unity to quit (status 400 on its held call) and stops the server. */
  async close(): Promise<void> {
    if (this.closed) {
      return;
    }
    this.closed = true;
    if (this.heldCall !== undefined) {
      this.answer({ header: { status: STATUS_QUIT } });
    }
    this.abort(new UnityCommunicatorStoppedError('The communicator was closed.'));
    clearTimeout(this.waitTimer);
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) {
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 1000);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
    }
  }

  private answer(message: UnityMessageProto): void {
    this.answerWith(UnityMessage.encode(message));
  }

  private answerWith(messageBytes: Uint8Array): void {
    const call = this.heldCall;
    if (call === undefined) {
      throw new UnityCommunicatorStoppedError(
        'No call from the environment is waiting for an answer: the environment has left.',
      );
    }
    this.heldCall = undefined;
    call(null, toBuffer(messageBytes));
  }

  private receive(): Promise<Incoming> {
    const queued = this.inbox.shift();
    if (queued !== undefined) {
      return Promise.resolve(queued);
    }
    if (this.fatalError !== undefined) {
      return Promise.reject(this.fatalError);
    }
    return new Promise<Incoming>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.startWaitTimer();
    });
  }

  /**
   * One timer serves every wait (a new setTimeout and clearTimeout per step cost more). Between
   * waits it stays armed and finds no waiter when it fires; the open server keeps the process
   * alive anyway until close(), which clears it.
   */
  private startWaitTimer(): void {
    if (this.waitTimer === undefined) {
      this.waitTimer = setTimeout(() => this.onWaitTimeout(), this.timeoutMs);
    } else {
      this.waitTimer.refresh();
    }
  }

  private onWaitTimeout(): void {
    // A timer left over from a wait that ended finds no waiter (or a new one that has refreshed it).
    this.takeWaiter()?.reject(
      new UnityTimeOutError(
        `The Unity environment took too long to respond: nothing arrived on port ${this.port} ` +
          `within ${this.timeoutMs / 1000} s (--timeout-wait).` +
          (this.timeoutHint ? ` ${this.timeoutHint}` : ''),
      ),
    );
  }

  /** The pending wait, which ends now. */
  private takeWaiter(): Waiter | undefined {
    const waiter = this.waiter;
    this.waiter = undefined;
    return waiter;
  }

  private deliver(message: Incoming): void {
    const waiter = this.takeWaiter();
    if (waiter !== undefined) {
      waiter.resolve(message);
    } else {
      this.inbox.push(message);
    }
  }

  /**
   * gRPC refuses a message over the size limit (RESOURCE_EXHAUSTED, to the client) before the
   * handler runs, so the handler never learns of it. This interceptor notices a call that ended
   * without its message having been read, so that the session ends at once with the reason and
   * the setting that raises the limit, instead of waiting for --timeout-wait.
   */
  private watchForUnreadMessage(call: grpc.ServerInterceptingCallInterface): grpc.ServerInterceptingCall {
    let messageRead = false;
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next(
          new grpc.ServerListenerBuilder()
            .withOnReceiveMessage((message, pass) => {
              messageRead = true;
              pass(message);
            })
            .withOnCancel(() => {
              if (!messageRead) this.onCallEndedUnread(call.getPeer());
            })
            .build(),
        ),
    });
  }

  private onCallEndedUnread(peer: string): void {
    const reason =
      `A call from ${peer} to port ${this.port} ended before its message could be read: most likely ` +
      `the message was larger than the limit of ${this.maxMessageMiB} MiB (compressed or once ` +
      `inflated) and gRPC refused it. Raise the limit with ${MAX_MESSAGE_SIZE_FLAG}=<MiB>.`;
    if (this.closed || this.fatalError !== undefined) return;
    // Before the session, as for a malformed message, the caller may well be the environment.
    if (this.sessionPeer === undefined || peer === this.sessionPeer) {
      this.abort(new CommunicatorError(reason));
    }
  }

  private onExchange(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: ExchangeCallback): void {
    const peer = call.getPeer();
    if (this.sessionPeer !== undefined && peer !== this.sessionPeer) {
      this.refuseOtherClient(peer, callback);
      return;
    }
    if (this.closed || this.fatalError !== undefined) {
      callback(null, toBuffer(UnityMessage.encode({ header: { status: STATUS_QUIT } })));
      return;
    }
    if (this.heldCall !== undefined) {
      // Unity waits for each answer before it calls again; a second caller is another program.
      callback({
        code: grpc.status.FAILED_PRECONDITION,
        details: `Port ${this.port} already serves an environment; start each environment on its own port.`,
      });
      return;
    }
    let message: Incoming;
    try {
      message = decodeIncomingMessage(call.request, this.stepLayouts, this.decodeBudgetBytes);
    } catch (error) {
      if (error instanceof DecodeCostError) {
        this.refuseCostlyMessage(call.request.length, error, callback);
        return;
      }
      callback({ code: grpc.status.INVALID_ARGUMENT, details: 'malformed UnityMessageProto' });
      this.abort(
        new CommunicatorError(
          `The environment on port ${this.port} sent a malformed message (${call.request.length} bytes ` +
            `that are not a UnityMessageProto: ${(error as Error).message}). It does not speak the ` +
            `Unity ML-Agents protocol of this trainer.`,
        ),
      );
      return;
    }
    // The first message read opens the session: its connection is the session's client from now on.
    this.sessionPeer ??= peer;
    if ((message.headerStatus ?? STATUS_OK) === STATUS_QUIT) {
      // Unity is leaving: answer at once so that it can quit, and expect nothing more.
      callback(null, toBuffer(UnityMessage.encode({ header: { status: STATUS_QUIT } })));
      this.deliver(message);
      return;
    }
    this.heldCall = callback;
    call.on('cancelled', () => {
      if (this.heldCall === callback) {
        this.heldCall = undefined;
        this.abort(
          new UnityCommunicatorStoppedError(
            `The environment on port ${this.port} closed its connection without saying goodbye ` +
              `(it crashed, was stopped, or left Play mode).`,
          ),
        );
      }
    });
    this.deliver(message);
  }

  /** A message whose decoded form would not fit the budget ends the session, with the setting that raises it. */
  private refuseCostlyMessage(bytes: number, error: DecodeCostError, callback: ExchangeCallback): void {
    const details =
      `The message (${bytes} bytes) would take more than ${Math.round(error.budgetBytes / MIB)} MiB of ` +
      `memory once decoded (${DECODE_BUDGET_PER_BYTE} times its size, at least ${DECODE_BUDGET_FLOOR_BYTES / MIB} MiB ` +
      `and at most ${DECODE_BUDGET_FACTOR} times the message size limit of ${this.maxMessageMiB} MiB): ` +
      `it holds too many agents or entries for its size.`;
    callback({ code: grpc.status.RESOURCE_EXHAUSTED, details });
    this.abort(
      new CommunicatorError(
        `The environment on port ${this.port} sent a message that was refused. ${details} When the ` +
          `environment really sends that much, raise the limit with ${MAX_MESSAGE_SIZE_FLAG}=<MiB>.`,
      ),
    );
  }

  private refuseOtherClient(peer: string, callback: ExchangeCallback): void {
    const details =
      `Port ${this.port} already serves an environment (the session of ${this.sessionPeer}); ` +
      `this caller (${peer}) is refused. Start each environment on its own port.`;
    if (!this.refusalLogged) {
      this.refusalLogged = true;
      this.logger.warning(`${details} Further callers other than the session's client are refused without a log line.`);
    }
    callback({ code: grpc.status.FAILED_PRECONDITION, details });
  }
}

/**
 * A message from the environment: the fast step decoder where the caller gave layouts and it can
 * read the message; protobufjs otherwise, once the decoded form is known to fit `decodeBudgetBytes`.
 */
export function decodeIncomingMessage(
  bytes: Uint8Array,
  layouts: ReadonlyMap<string, AgentInfoLayout> | null,
  decodeBudgetBytes: number,
): Incoming {
  if (layouts !== null) {
    const fast = decodeStepOutputMessage(bytes, layouts);
    if (fast !== null) {
      return { headerStatus: fast.headerStatus, fast };
    }
  }
  checkDecodeCost(bytes, 'UnityMessageProto', decodeBudget(bytes.length, decodeBudgetBytes));
  const message = UnityMessage.decode(bytes);
  return { headerStatus: message.header ? (message.header.status ?? 0) : null, message };
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
